"""The replay's intake: transitions move from the actors' rings into the replay in order of arrival.

The learner asks for exactly as many transitions as the training schedule lets it
consume (up to the next training round), so the replay holds what the serial run's
would at every update; the rest waits in the rings.

Example::

    >>> feed = RingFeed(rings, replay, timer, n_envs=1)
    >>> moved, episodes = feed.drain(256)       # at most 256 transitions
    >>> episodes                                # (offset in this drain, return, length) of ended episodes
    [(17, 18.0, 18)]
"""
from __future__ import annotations

import numpy as np

from pearl_py.protocol.kernel import REPLAY_INSERT
from pearl_py.replay import ReplayBuffer
from pearl_py.runtime.parallel.ring import ShmRing
from pearl_py.runtime.timing import KernelTimer


class RingFeed:
    """Drains a list of :class:`ShmRing` (one per actor) into one :class:`ReplayBuffer` (or a ``TorchReplayBuffer``)."""

    def __init__(self, rings: list[ShmRing], replay: ReplayBuffer, timer: KernelTimer, n_envs: int) -> None:
        self.rings = rings
        self.replay = replay
        self.timer = timer
        self.n_envs = n_envs
        self.moved = 0
        self._next = 0

    def pending(self) -> int:
        return sum(r.pending() for r in self.rings)

    def drain(self, limit: int) -> tuple[int, list[tuple[int, float, int]]]:
        """Insert up to ``limit`` transitions, taking rings in turn; returns (moved, ended episodes)."""
        moved, episodes = 0, []
        for j in range(len(self.rings)):
            ring = self.rings[(self._next + j) % len(self.rings)]
            take = min(ring.pending(), limit - moved)
            if take <= 0:
                continue
            rows = ring.get(take)
            # one call per vector step, as the serial executor counts them
            calls = (self.moved + take) // self.n_envs - self.moved // self.n_envs
            with self.timer(REPLAY_INSERT, calls):  # CUDA events for a replay on a GPU
                self.replay.add(rows["obs"], rows["actions"], rows["rewards"], rows["next_obs"], rows["terminated"])
            self.moved += take
            for i in np.flatnonzero(rows["episode_length"]):
                episodes.append((moved + int(i), float(rows["episode_return"][i]), int(rows["episode_length"][i])))
            moved += take
        self._next = (self._next + 1) % len(self.rings)
        return moved, episodes
