"""A float64 vector in shared memory that one process writes and others read while it writes, double-buffered so
that a writer dying mid-write never stalls a reader.

Generation ``n`` goes into slot ``n % 2`` (the one readers are not reading), marked as being written, then as holding
``n``, then the generation flips; a reader keeps its copy of slot ``generation % 2`` if the slot held that generation
before and after the copy, so it is always complete (a killed writer's successor writes over the half-written slot);
it gives up with :class:`VectorUnreadable` after :data:`MAX_TRIES`. Stores are ordered as in
:mod:`~pearl_py.runtime.parallel.params`'s seqlock (x86-64).

Example::

    >>> layout = Layout.of({"slots": (np.float64, (2, 3)), "marks": (np.int64, (3,))})
    >>> storage = Storage.create(layout)
    >>> vector = FlipVector(storage["slots"], storage["marks"], "actor 0's share")
    >>> vector.reset(np.zeros(3)); vector.write(np.ones(3))
    >>> vector.read()
    (array([1., 1., 1.]), 1)
"""
from __future__ import annotations

import time

import numpy as np

MAX_TRIES = 10_000
"""Reads a reader makes before it gives up: each failed one means the writer completed a whole write meanwhile."""

WRITING = -1
"""``held`` of a slot while it is written."""


class VectorUnreadable(RuntimeError):
    """A shared vector was rewritten during every one of :data:`MAX_TRIES` reads (or its marks are corrupt)."""


class FlipVector:
    """Views ``slots`` (2, size) and ``marks`` (3,) int64 of a shared segment: ``marks[0]`` the generation
    readers take, ``marks[1 + s]`` the generation slot ``s`` holds (:data:`WRITING` while written). ``what`` names
    the vector in errors."""

    def __init__(self, slots: np.ndarray, marks: np.ndarray, what: str) -> None:
        self._slots, self._marks, self.what = slots, marks, what

    def reset(self, values: np.ndarray) -> None:
        """Generation 0 holds ``values`` (the creator, before any other process attaches)."""
        self._slots[0] = values
        self._marks[:] = (0, 0, WRITING)

    @property
    def generation(self) -> int:
        """The generation a read returns now (it changes at each complete write)."""
        return int(self._marks[0])

    def write(self, values: np.ndarray) -> None:
        """Generation + 1 holds ``values`` (by the vector's only writer)."""
        generation = int(self._marks[0]) + 1
        slot = generation % 2
        self._marks[1 + slot] = WRITING       # invariant: readers never take this slot (the generation is odd to it)
        self._slots[slot] = values
        self._marks[1 + slot] = generation
        self._marks[0] = generation           # the flip: readers take the new slot from here

    def read(self) -> tuple[np.ndarray, int]:
        """A copy of the last complete generation, and that generation."""
        for _ in range(MAX_TRIES):
            generation = int(self._marks[0])
            slot = generation % 2
            if int(self._marks[1 + slot]) == generation:
                copy = self._slots[slot].copy()
                if int(self._marks[1 + slot]) == generation:   # not rewritten during the copy
                    return copy, generation
            time.sleep(0)
        raise VectorUnreadable(f"{self.what}: rewritten during each of {MAX_TRIES} reads, or its generation marks "
                               f"are corrupt (generation {int(self._marks[0])}, slots hold "
                               f"{int(self._marks[1])} and {int(self._marks[2])})")
