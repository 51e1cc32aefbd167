"""The double-buffered shared vector: a writer killed at any store leaves the last complete vector readable at the
first try, its successor writes on, and a read that cannot succeed stops after a bounded number of tries with an
error naming the vector. Every read here is bounded by construction (``MAX_TRIES``), so no test can hang."""
from __future__ import annotations

import numpy as np
import pytest

from pearl_py.replay.storage import Layout, Storage
from pearl_py.runtime.parallel import flip_vector
from pearl_py.runtime.parallel.flip_vector import WRITING, FlipVector, VectorUnreadable

SIZE = 6


class Killed(Exception):
    """The writer process dies here."""


class DiesAtStore(np.ndarray):
    """A view whose store number ``budget[0]`` (counted across the views sharing ``budget``) kills the writer: a
    slot store lands half its values first, as a process killed during the copy would."""

    budget: list[int]

    def __setitem__(self, key, value) -> None:
        self.budget[0] -= 1
        if self.budget[0] == 0:
            if self.ndim == 2:          # the slots: half of the new values land, then the writer dies
                row = self[key].view(np.ndarray)
                row[:SIZE // 2] = np.asarray(value)[:SIZE // 2]
            raise Killed
        super().__setitem__(key, value)


def segment() -> tuple[np.ndarray, np.ndarray]:
    storage = Storage.create(Layout.of({"slots": (np.float64, (2, SIZE)), "marks": (np.int64, (3,))}))
    return storage["slots"], storage["marks"]


def dying_writer(slots: np.ndarray, marks: np.ndarray, at_store: int) -> FlipVector:
    budget = [at_store]
    views = []
    for view in (slots, marks):
        dying = view.view(DiesAtStore)
        dying.budget = budget
        views.append(dying)
    return FlipVector(*views, "actor 1's share")


@pytest.mark.parametrize("at_store", [1, 2, 3, 4])
def test_a_writer_killed_at_any_store_leaves_the_last_complete_vector_and_its_successor_writes_on(at_store,
                                                                                                    monkeypatch):
    """A write is four stores (mark the slot, copy, mark it complete, flip); killed at any of them (before it
    lands; the copy half done), the reader still returns the last complete generation at its first try."""
    monkeypatch.setattr(flip_vector, "MAX_TRIES", 1)        # a read that needed a second try would raise
    slots, marks = segment()
    reader = FlipVector(slots, marks, "actor 1's share")
    reader.reset(np.zeros(SIZE))
    first, second = np.arange(SIZE, dtype=np.float64), np.full(SIZE, 7.0)
    FlipVector(slots, marks, "actor 1's share").write(first)
    with pytest.raises(Killed):
        dying_writer(slots, marks, at_store).write(second)
    vector, generation = reader.read()
    np.testing.assert_array_equal(vector, first)
    assert generation == 1
    successor = FlipVector(slots, marks, "actor 1's share")       # the restarted actor, over the same segment
    successor.write(third := np.full(SIZE, -2.0))
    vector, generation = reader.read()
    np.testing.assert_array_equal(vector, third)
    assert generation == 2


def test_a_reader_whose_copy_was_overwritten_retries_and_returns_a_whole_vector():
    """The writer writes twice during the reader's copy (the slot it copies is rewritten): the torn copy is dropped
    and the next try returns the newest whole vector."""
    slots, marks = segment()
    writer = FlipVector(slots, marks, "the published statistics")
    writer.reset(np.zeros(SIZE))

    copies = []

    class RewrittenDuringCopy(np.ndarray):
        def copy(self, *args, **kwargs):
            copies.append(np.asarray(self).copy())
            if len(copies) == 1:                   # the first copy: the writer writes twice meanwhile
                writer.write(np.full(SIZE, 1.0))
                writer.write(np.full(SIZE, 2.0))   # lands in the slot being copied
                copies[0][SIZE // 2:] = 2.0        # so the copy's second half is the newest
            return copies[-1]

    reader = FlipVector(slots.view(RewrittenDuringCopy), marks, "the published statistics")
    vector, generation = reader.read()
    assert len(copies) == 2
    np.testing.assert_array_equal(vector, np.full(SIZE, 2.0))
    assert generation == 2


def test_a_vector_that_cannot_be_read_fails_naming_it_after_a_bounded_number_of_tries(monkeypatch):
    """Marks no writer leaves (the slot readers take marked as being written): the read gives up after
    ``MAX_TRIES`` with the vector's name, never loops."""
    monkeypatch.setattr(flip_vector, "MAX_TRIES", 5)
    slots, marks = segment()
    vector = FlipVector(slots, marks, "actor 3's normalize statistics share")
    vector.reset(np.zeros(SIZE))
    marks[1] = WRITING
    with pytest.raises(VectorUnreadable, match=r"actor 3's normalize statistics share: rewritten during each of 5 "
                                               r"reads, or its generation marks are corrupt \(generation 0"):
        vector.read()
