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
both sides race, so every vector of the segment is a :class:`~pearl_py.runtime.parallel.flip_vector.FlipVector`
(double-buffered: a reader always takes a complete copy, and an actor killed while it posts leaves its last
complete share, so neither the learner nor the actor's restarted successor ever waits on it).

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
