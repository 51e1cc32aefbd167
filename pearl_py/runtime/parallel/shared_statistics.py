"""The ``normalize`` statistics of a parallel run in shared memory: the learner's merged statistics, published to
the actors, and each actor's share (the moments of what it saw since the last publication).

On-policy, the learner merges the actors' shares in actor order (exact: Chan et al. 1979) and publishes before the
next rollout. Off-policy, each slot holds the actor's cumulative share, rewritten every vector step, and the learner
re-merges the session's base with every slot at each publication; both sides race, so every vector is a
:class:`~pearl_py.runtime.parallel.flip_vector.FlipVector`. docs/runtime.md, "normalize on the parallel runtime".

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

import numpy as np

from pearl_py.envs.normalize import ObsRewardNormalizer
from pearl_py.runtime.parallel.flip_vector import FlipVector
from pearl_py.replay.storage import Layout, OnSegment, Storage


class SharedStatistics(OnSegment):
    """The published statistics and one share slot per actor, as float64 vectors
    (:meth:`~pearl_py.envs.normalize.ObsRewardNormalizer.vector`), each a :class:`FlipVector`."""

    def __init__(self, storage: Storage, base: np.ndarray | None = None) -> None:
        self._storage = storage
        marks = storage["marks"]  # [0] the published vector's generation marks, [1 + i] actor i's slot's
        self._published = FlipVector(storage["published"], marks[0], "the published normalize statistics")
        self._seen = [FlipVector(slots, marks[1 + i], f"actor {i}'s normalize statistics share")
                      for i, slots in enumerate(storage["seen"])]
        self._base = base
        """The creator's statistics when the session started (:meth:`remerge` merges the slots into them)."""
        self._read = -1
        """The published generation an actor last loaded (:meth:`refresh`)."""

    @classmethod
    def create(cls, transform: ObsRewardNormalizer, actors: int, name: str) -> SharedStatistics:
        """Segment ``name`` holding ``transform``'s statistics as published, and ``actors`` empty shares."""
        base = transform.vector()
        layout = Layout.of({"published": (np.float64, (2, base.size)), "seen": (np.float64, (actors, 2, base.size)),
                            "marks": (np.int64, (1 + actors, 3))})
        shared = cls(Storage.create(layout, shared=True, name=name), base)
        shared._published.reset(base)
        for slot in shared._seen:
            slot.reset(np.zeros(base.size))
        return shared

    def publish(self, transform: ObsRewardNormalizer) -> None:
        self._published.write(transform.vector())

    def load_published(self, transform: ObsRewardNormalizer) -> None:
        """``transform`` (an actor's) acts with the published statistics (and its share not reported yet)."""
        transform.take_published(self._published.read()[0])

    def report(self, index: int, transform: ObsRewardNormalizer) -> None:
        """Actor ``index``'s share since its last report into its slot; its share restarts from count 0."""
        self._seen[index].write(transform.take_share())

    def combine(self, transform: ObsRewardNormalizer) -> None:
        """Every actor's share merged into ``transform`` (the learner's) in actor order, then published; the slots
        are emptied (invariant: a slot holds only a share not merged yet)."""
        for slot in self._seen:
            share = slot.read()[0]
            transform.merge_share(share)
            slot.write(np.zeros_like(share))
        self.publish(transform)

    # -- the off-policy runtime: cumulative shares, both sides racing ------------------------------------------

    def posted(self, index: int) -> np.ndarray:
        """A consistent copy of actor ``index``'s slot (its cumulative share as last posted; count 0 before)."""
        return self._seen[index].read()[0]

    def post(self, index: int, transform: ObsRewardNormalizer) -> None:
        """Actor ``index``'s cumulative share (since it started tracking: :meth:`~ObsRewardNormalizer.track`)."""
        self._seen[index].write(transform.share())

    def refresh(self, transform: ObsRewardNormalizer) -> bool:
        """An actor: load the published statistics into ``transform`` if they changed since its last load (its own
        envs' updates since then are dropped: the learner's next merge counts them); whether it did."""
        if self._published.generation == self._read:
            return False
        vector, self._read = self._published.read()
        transform.load_vector(vector)
        return True

    def remerge(self, transform: ObsRewardNormalizer) -> None:
        """The learner: ``transform`` becomes the session's base merged with every actor's posted share in actor
        order, then it is published (invariant: the base plus the slots are every update the actors made). An actor
        that died while posting leaves its last complete share here, so this never waits for it."""
        transform.load_vector(self._base)
        for index in range(len(self._seen)):
            transform.merge_share(self.posted(index))
        self.publish(transform)

    def close(self) -> None:
        self._published = self._seen = None
        self._storage.close()
