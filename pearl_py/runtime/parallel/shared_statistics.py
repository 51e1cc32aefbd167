"""The ``normalize`` statistics of a parallel run in shared memory: the learner's merged statistics, published to
the actors, and each actor's share (the moments of what it saw since the last publication).

The rule (docs/runtime.md, "normalize on the parallel runtime"): an actor starts every rollout from the published
statistics (merged with its share not reported yet: its envs' reset observations before its first rollout) and
acts with them updated by its own envs' observations and discounted returns (the return per env, as SB3's
``VecNormalize``), and keeps its share apart (:meth:`~pearl_py.envs.normalize.ObsRewardNormalizer.track`).
Once every actor has collected rollout ``k``, the learner merges the shares in actor order into its statistics with the
parallel-variance formula (Chan et al. 1979), which is exact: the merged moments are those of the concatenated
observations (and returns), whatever the split, up to float rounding. It then publishes them with the parameters,
and every actor starts rollout ``k + 1`` from them. Nothing is locked: an actor writes its slot only while the
learner waits for the rollout, and reads the published statistics only once the learner has allowed the next
one (the control block's counters order both, as for the shared rollout).

The off-policy runtime's actors run asynchronously and hand off no rollouts, so there each slot holds the actor's
*cumulative* share since its start (rewritten every vector step, :meth:`SharedStatistics.post`), and at each
parameter publication the learner recomputes its statistics as the session's base merged with every slot in actor
order (:meth:`SharedStatistics.remerge`: no subtraction, so exact as above). An actor loads the published statistics
whenever they are new (:meth:`SharedStatistics.refresh`) and acts with them updated by its own envs since. There
both sides race, so every copy in or out of the segment goes through a seqlock (a version counter per vector,
odd while it is written, as :mod:`~pearl_py.runtime.parallel.params`).

Example::

    >>> shared = SharedStatistics.create(algo.obs_transform, actors=2, name="pearl-stats")   # learner
    >>> actor_side = SharedStatistics.attach("pearl-stats")                                   # actor 0
    >>> transform.track()                         # actor 0 at its start: its share counted from 0
    >>> actor_side.load_published(transform)      # before each rollout: the published statistics
    >>> actor_side.report(0, transform)           # after it: its share into its slot
    >>> shared.combine(algo.obs_transform)        # learner: every share merged, the result published
    >>> # off-policy: actor 0 every vector step, and the learner at each parameter publication
    >>> actor_side.refresh(transform); actor_side.post(0, transform)
    >>> shared.remerge(algo.obs_transform)        # base + every slot, published
"""
from __future__ import annotations

import time

import numpy as np

from pearl_py.envs.normalize import ObsRewardNormalizer
from pearl_py.replay.storage import Layout, OnSegment, Storage


class SharedStatistics(OnSegment):
    """The published statistics (``published``) and one share slot per actor (``seen``), as float64 vectors
    (:meth:`~pearl_py.envs.normalize.ObsRewardNormalizer.vector`), each with its seqlock version."""

    def __init__(self, storage: Storage, base: np.ndarray | None = None) -> None:
        self._storage = storage
        self._published, self._seen = storage["published"], storage["seen"]
        self._versions = storage["versions"]
        """Seqlock versions: ``[0]`` the published vector's, ``[1 + i]`` actor ``i``'s slot's."""
        self._base = base
        """The creator's statistics when the session started (:meth:`remerge` merges the slots into them)."""
        self._read = -1
        """The published version an actor last loaded (:meth:`refresh`)."""

    @classmethod
    def create(cls, transform: ObsRewardNormalizer, actors: int, name: str) -> SharedStatistics:
        """Segment ``name`` holding ``transform``'s statistics as published, and ``actors`` empty shares."""
        base = transform.vector()
        layout = Layout.of({"published": (np.float64, (base.size,)), "seen": (np.float64, (actors, base.size)),
                            "versions": (np.int64, (1 + actors,))})
        shared = cls(Storage.create(layout, shared=True, name=name), base)
        shared.publish(transform)
        return shared


    def publish(self, transform: ObsRewardNormalizer) -> None:
        _write(self._versions, 0, self._published, transform.vector())

    def load_published(self, transform: ObsRewardNormalizer) -> None:
        """``transform`` (an actor's) acts with the published statistics (and its share not reported yet)."""
        transform.take_published(self._published)

    def report(self, index: int, transform: ObsRewardNormalizer) -> None:
        """Actor ``index``'s share since its last report into its slot; its share restarts from count 0."""
        self._seen[index] = transform.take_share()

    def combine(self, transform: ObsRewardNormalizer) -> None:
        """Every actor's share merged into ``transform`` (the learner's) in actor order, then published; the slots
        are emptied (invariant: a slot holds only a share not merged yet)."""
        for share in self._seen:
            transform.merge_share(share)
        self._seen[:] = 0.0
        self.publish(transform)

    # -- the off-policy runtime: cumulative shares, both sides racing ------------------------------------------

    def posted(self, index: int) -> np.ndarray:
        """A consistent copy of actor ``index``'s slot (its cumulative share as last posted; count 0 before)."""
        return _read(self._versions, 1 + index, self._seen[index])[0]

    def post(self, index: int, transform: ObsRewardNormalizer) -> None:
        """Actor ``index``'s cumulative share (since it started tracking: :meth:`~ObsRewardNormalizer.track`)."""
        _write(self._versions, 1 + index, self._seen[index], transform.share())

    def refresh(self, transform: ObsRewardNormalizer) -> bool:
        """An actor: load the published statistics into ``transform`` if they changed since its last load (its own
        envs' updates since then are dropped: the learner's next merge counts them); whether it did."""
        if int(self._versions[0]) == self._read:
            return False
        vector, self._read = _read(self._versions, 0, self._published)
        transform.load_vector(vector)
        return True

    def remerge(self, transform: ObsRewardNormalizer) -> None:
        """The learner: ``transform`` becomes the session's base merged with every actor's posted share in actor
        order, then it is published (invariant: the base plus the slots are every update the actors made)."""
        transform.load_vector(self._base)
        for index in range(self._seen.shape[0]):
            transform.merge_share(self.posted(index))
        self.publish(transform)

    def close(self) -> None:
        self._published = self._seen = self._versions = None
        self._storage.close()


def _write(versions: np.ndarray, at: int, target: np.ndarray, values: np.ndarray) -> None:
    """Seqlock write by the vector's only writer: version odd, copy, version even."""
    versions[at] += 1
    target[:] = values
    versions[at] += 1


def _read(versions: np.ndarray, at: int, source: np.ndarray) -> tuple[np.ndarray, int]:
    """Seqlock read: a copy taken while the version stayed the same and even, and that version."""
    while True:
        before = int(versions[at])
        if before % 2 == 0:
            copy = source.copy()
            if int(versions[at]) == before:
                return copy, before
        time.sleep(0)
