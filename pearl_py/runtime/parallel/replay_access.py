"""The learner's view of the replay: in its own process (co-located) or behind the replay server.

Both classes give the learner loop the same operations: ``take`` (account for new transitions and the episodes that
ended with them), ``sample``, ``update_priorities``, ``finished_update``, ``nap`` (wait a little for news),
``finish`` (the run's end), ``pause`` (before a checkpoint) and ``state_dict``. :class:`LocalReplay` drains the
actors' rings into the learner's own :class:`ReplayBuffer`; :class:`ServedReplay` talks to the replay server
(:mod:`~pearl_py.runtime.parallel.replay_server`) through rings and doorbells, calling ``wait`` (the loop's health
and stop checks) while it waits.

Example::

    >>> access = LocalReplay(RingFeed(rings, replay, timer, n_envs=1), timer)
    >>> moved, episodes = access.take(256)
    >>> access.round_step = step
    >>> batch = access.sample(64, beta=round_beta(algo, schedule, step))
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pearl_py.replay import SampleBatch
from pearl_py.replay.restore import attach_replay
from pearl_py.runtime.collect import TimedReplay
from pearl_py.runtime.parallel.control import ControlBlock
from pearl_py.runtime.parallel.feed import RingFeed
from pearl_py.runtime.parallel.process import Doorbell
from pearl_py.runtime.parallel.ring import ShmRing
from pearl_py.runtime.timing import KernelTimer

POLL_S = 0.0002
"""Co-located: sleep while the actors' rings have nothing for the learner."""
WAIT_S = 0.05
"""Behind a server: longest doorbell wait before the learner looks at its stop and health checks."""

Episodes = list[tuple[int, float, int]]
"""``(offset in this take, return, length)`` of each episode that ended."""


@dataclass
class ServedBatch(SampleBatch):
    """A batch from the replay server, with what the server knew when it drew it."""

    step: int = 0
    """Vector step of the training round the batch belongs to."""
    stored: int = 0
    """Transitions in the replay when it was drawn."""
    applied: int = 0
    """Updates whose priorities (uniform replay: updates done) were in when it was drawn."""


class LocalReplay(TimedReplay):
    """The replay in the learner process, fed from the actors' rings (sample and priorities timed here)."""

    remote = False

    def __init__(self, feed: RingFeed, timer: KernelTimer) -> None:
        super().__init__(feed.replay, timer)
        self.feed = feed
        self.round_step = 0
        """The vector step of the round the learner trains (only the server's side checks it)."""

    def take(self, limit: int) -> tuple[int, Episodes]:
        return self.feed.drain(limit)

    def finished_update(self, gradient_steps: int) -> None:
        """Nothing waits on the learner's updates here."""

    def nap(self) -> None:
        time.sleep(POLL_S)

    def pause(self) -> None:
        """Nothing runs beside the learner: the replay is consistent between two updates."""

    def outstanding(self) -> int:
        return 0

    def finish(self) -> None:
        """At the end of a run: nothing is in flight."""

    def state_dict(self) -> dict[str, Any]:
        return self.replay.state_dict()

    def close(self) -> None:
        self.replay.close()


class ServedReplay:
    """The learner's side of the replay server (rings and counters; see the module docstring)."""

    remote = True

    def __init__(self, *, batches: ShmRing, priorities: ShmRing, episodes: ShmRing, control: ControlBlock,
                 timer: KernelTimer, replay: str, rng_file: Path, prioritized: bool, inserted: int,
                 check: Callable[[], None], bell: Doorbell, server_bell: Doorbell) -> None:
        self.batches, self.priorities, self.episodes = batches, priorities, episodes
        self.bell, self.server_bell = bell, server_bell
        self.control, self.timer = control, timer
        self.replay_name, self.rng_file = replay, Path(rng_file)
        self.prioritized = prioritized
        self.inserted = inserted
        self.check = check
        """Raises if the server died (the executor passes its supervisor check)."""
        self.wait: Callable[[], None] = self._idle
        """Called on every fruitless poll; the learner loop sets its own (stop and health checks)."""
        self._backlog: list[tuple[int, float, int]] = []
        self.round_step = 0
        """The vector step of the round the learner trains: every batch must have been drawn for it."""

    def _idle(self) -> None:
        self.check()
        self.nap()

    def nap(self) -> None:
        """Until the server rings (or ``WAIT_S``)."""
        self.bell.wait(WAIT_S)

    def take(self, limit: int) -> tuple[int, Episodes]:
        """Transitions the server inserted since the last take (at most ``limit``) and their ended episodes."""
        consumed = self.control.consumed  # read first: the server writes episodes before it counts them
        k = self.episodes.pending()
        if k:
            got = self.episodes.get(k)
            self._backlog += zip(got["end"].tolist(), got["ret"].tolist(), got["length"].tolist())
        moved = max(min(consumed - self.inserted, limit), 0)
        upto = self.inserted + moved
        ended = [(end - self.inserted - 1, ret, length) for end, ret, length in self._backlog if end <= upto]
        self._backlog = [e for e in self._backlog if e[0] > upto]
        self.inserted = upto
        return moved, ended

    def sample(self, batch_size: int, beta: float) -> ServedBatch:
        """The next batch the server drew for the round at ``round_step`` (it computed ``beta`` itself); waits for it."""
        step = self.round_step
        start = time.perf_counter()
        while not self.batches.pending():
            self.wait()
        self.timer.add("replay_wait", time.perf_counter() - start)
        got = {k: v[0] for k, v in self.batches.get(1).items()}
        self.server_bell.ring()
        if int(got["step"]) != step or len(got["indices"]) != batch_size:
            raise RuntimeError(f"replay server sent a batch of {len(got['indices'])} for the round at vector "
                               f"step {int(got['step'])}; the learner is training the round at step {step} "
                               f"with batches of {batch_size}")
        return ServedBatch(got["obs"], got["actions"], got["rewards"], got["next_obs"], got["dones"],
                           got["indices"], got["weights"], step=int(got["step"]), stored=int(got["stored"]),
                           applied=int(got["applied"]))

    def update_priorities(self, indices: np.ndarray, td_abs: np.ndarray) -> None:
        while not self.priorities.free():
            self.wait()
        self.priorities.put(indices=indices[None], td=td_abs[None])
        self.server_bell.ring()

    def finished_update(self, gradient_steps: int) -> None:
        """Tell the server the learner is done with its batch (it may insert once a round is done)."""
        self.control.completed = gradient_steps
        self.server_bell.ring()

    def pause(self) -> None:
        """Stop the server's sampling and intake; returns once acknowledged (waits then only check its health)."""
        self.wait = self._idle
        self.control.pause = 1
        self.server_bell.ring()
        while not self.control.paused:
            self._idle()

    def outstanding(self) -> int:
        """Batches drawn but not taken yet (after :meth:`pause`, the ones left to train on)."""
        return self.batches.pending()

    def next_round_step(self) -> int:
        """The vector step of the round the next drawn batch belongs to (there must be one: :meth:`outstanding`)."""
        return int(self.batches.peek("step"))

    def finish(self) -> None:
        """At the end of a run: wait until the server applied every priority sent (its times then count them)."""
        while self.prioritized and self.control.applied < self.control.completed:
            self._idle()

    def state_dict(self) -> dict[str, Any]:
        """The replay as the server holds it (paused, every sent priority applied), with its generator."""
        self.finish()
        view = attach_replay(self.replay_name)
        try:
            state = view.state_dict()
        finally:
            view.close()
        state["rng"] = json.loads(self.rng_file.read_text())
        return state

    def close(self) -> None:
        """The rings and the replay segment belong to the executor's and the server's clean-up."""
