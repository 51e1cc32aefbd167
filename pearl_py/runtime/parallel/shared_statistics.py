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

Example::

    >>> shared = SharedStatistics.create(algo.obs_transform, actors=2, name="pearl-stats")   # learner
    >>> actor_side = SharedStatistics.attach("pearl-stats")                                   # actor 0
    >>> transform.track()                         # actor 0 at its start: its share counted from 0
    >>> actor_side.load_published(transform)      # before each rollout: the published statistics
    >>> actor_side.report(0, transform)           # after it: its share into its slot
    >>> shared.combine(algo.obs_transform)        # learner: every share merged, the result published
"""
from __future__ import annotations

import numpy as np

from pearl_py.envs.normalize import ObsRewardNormalizer
from pearl_py.replay.storage import Layout, Storage


class SharedStatistics:
    """The published statistics (``published``) and one share slot per actor (``seen``), as float64 vectors
    (:meth:`~pearl_py.envs.normalize.ObsRewardNormalizer.vector`)."""

    def __init__(self, storage: Storage) -> None:
        self._storage = storage
        self._published, self._seen = storage["published"], storage["seen"]

    @classmethod
    def create(cls, transform: ObsRewardNormalizer, actors: int, name: str) -> SharedStatistics:
        """Segment ``name`` holding ``transform``'s statistics as published, and ``actors`` empty shares."""
        size = transform.vector().size
        layout = Layout.of({"published": (np.float64, (size,)), "seen": (np.float64, (actors, size))})
        shared = cls(Storage.create(layout, shared=True, name=name))
        shared.publish(transform)
        return shared

    @classmethod
    def attach(cls, name: str) -> SharedStatistics:
        return cls(Storage.attach(name))

    @property
    def name(self) -> str:
        return self._storage.name

    def publish(self, transform: ObsRewardNormalizer) -> None:
        self._published[:] = transform.vector()

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

    def close(self) -> None:
        self._published = self._seen = None
        self._storage.close()
