"""The replay server: a process that owns the replay's intake and sampling, ahead of the learner.

It inserts the actors' transitions up to the next training step only once every update of the round is done (with
priorities, applied): at every update the replay holds the serial run's transitions. It samples ahead into a batch
ring (depth ``prefetch``; ``strict``: a batch only once the previous priorities are applied). docs/runtime.md,
"Replay server".

Example (what :func:`~pearl_py.runtime.parallel.services.start_replay_server` starts)::

    >>> proc = ctx.Process(target=run_replay_server, args=(ReplayServerSpec(algo, seed=0, ...),))
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pearl_py.algorithms.off_policy.base import Algorithm
from pearl_py.fileio import atomic_write_json
from pearl_py.protocol.kernel import PRIORITY_UPDATE, REPLAY_SAMPLE
from pearl_py.protocol.schedule import TrainSchedule
from pearl_py.replay import ReplayBuffer
from pearl_py.replay.restore import replay_from_state
from pearl_py.runtime.collect import round_beta
from pearl_py.runtime.first_calls import warm_up
from pearl_py.runtime.parallel.checkpoint import load_checkpoint
from pearl_py.runtime.kernel_devices import device_of
from pearl_py.runtime.parallel.control import ControlBlock
from pearl_py.runtime.parallel.feed import RingFeed
from pearl_py.runtime.parallel.process import Doorbell, child_process
from pearl_py.runtime.parallel.ring import ShmRing
from pearl_py.runtime.timing import KernelTimer

Fields = dict[str, tuple[type, tuple[int, ...]]]

WAIT_S = 0.05
"""Longest doorbell wait before the server looks at the stop flag again."""


def batch_fields(algorithm: Algorithm) -> Fields:
    """One record per sampled batch: the batch, and its round step, replay size and priorities applied."""
    spec, b = algorithm.spec, algorithm.config.batch_size
    obs = (np.dtype(spec.obs_dtype), (b, *spec.obs_shape))
    return {"obs": obs, "actions": (spec.action_dtype, (b, *spec.action_shape)),
            "rewards": (np.float32, (b,)), "next_obs": obs,
            "dones": (np.float32, (b,)), "indices": (np.int64, (b,)), "weights": (np.float32, (b,)),
            "step": (np.int64, ()), "stored": (np.int64, ()), "applied": (np.int64, ())}


def priority_fields(algorithm: Algorithm) -> Fields:
    """One record per update: the batch's slots and their ``|TD error|``."""
    b = algorithm.config.batch_size
    return {"indices": (np.int64, (b,)), "td": (np.float32, (b,))}


EPISODE_FIELDS: Fields = {"end": (np.int64, ()), "ret": (np.float64, ()), "length": (np.int64, ())}
"""One record per ended episode: the (1-based) transition it ended with, its return and length."""


@dataclass(frozen=True)
class ReplayServerSpec:
    """Everything the server process needs (pickled once, at start)."""

    algorithm: Algorithm
    seed: int
    schedule: TrainSchedule
    replay: str
    """Name of the replay segment the server creates."""
    resume: str | None
    """Checkpoint to take the replay (and its generator) from; None: a fresh replay."""
    rings: tuple[str, ...]
    batches: str
    priorities: str
    episodes: str
    control: str
    error_file: str
    rng_file: str
    consumed: int
    """Transitions in the replay at the start (a resumed run's)."""
    updates: int
    """The learner's gradient steps at the start."""
    prefetch: int
    strict: bool
    bell: Doorbell
    """Wakes the server: rung by actors (new transitions) and by the learner (batch taken, update
    done, priorities sent, pause)."""
    learner_bell: Doorbell
    """Wakes the learner: rung after a batch, an insert, applied priorities, the pause."""
    threads: int = 1


def run_replay_server(spec: ReplayServerSpec) -> None:
    """Process entry point: create the replay, serve until the run stops, unlink the replay."""
    with child_process(spec.error_file, spec.threads), contextlib.ExitStack() as stack:
        if spec.resume is None:
            replay = spec.algorithm.make_replay(seed=spec.seed, shared_name=spec.replay)
        else:
            replay = replay_from_state(load_checkpoint(Path(spec.resume)).replay, shared_name=spec.replay)
        stack.callback(replay.close)
        warm_up(spec.algorithm, replay_device="cpu")  # the server's replay is a numpy one
        control = ControlBlock.attach(spec.control)
        stack.callback(control.close)
        rings = [ShmRing.attach(name) for name in (*spec.rings, spec.batches, spec.priorities, spec.episodes)]
        for ring in rings:
            stack.callback(ring.close)
        *actor_rings, batches, priorities, episodes = rings
        ReplayServer(spec, replay, actor_rings, batches, priorities, episodes, control).serve()


class ReplayServer:
    """The server loop (see the module docstring)."""

    def __init__(self, spec: ReplayServerSpec, replay: ReplayBuffer, rings: list[ShmRing], batches: ShmRing,
                 priorities: ShmRing, episodes: ShmRing, control: ControlBlock) -> None:
        self.spec, self.replay, self.control = spec, replay, control
        self.batches, self.priorities, self.episodes = batches, priorities, episodes
        self.schedule, self.n = spec.schedule, spec.schedule.n_envs
        self.timer = KernelTimer()
        self.feed = RingFeed(rings, replay, self.timer, self.n)
        self.row = control.service_row("replay")
        control.set_built_on("replay", device_of(replay))
        self.consumed, self.sampled, self.applied = spec.consumed, spec.updates, spec.updates
        self.ahead = 1 if replay.prioritized and spec.strict else spec.prefetch
        """Batches that may be drawn beyond the updates whose priorities are in (uniform: done)."""

    def serve(self) -> None:
        while not self.control.stopped:
            if self._pause() if self.control.pause else self._work():
                self.spec.learner_bell.ring()
            else:
                self.spec.bell.wait(WAIT_S)

    def _work(self) -> bool:
        """One step of the schedule: apply priorities, then sample a batch or insert transitions; whether
        anything the learner waits for changed."""
        worked = self._apply_priorities()
        step = self.consumed // self.n
        if self.sampled < self.schedule.updates_until(step):
            if self.batches.free() and self.sampled - self._settled() < self.ahead:
                self._sample(step)
                return True
            return worked
        if step >= self.schedule.vector_steps or self._settled() < self.sampled:
            return worked
        return self._insert(step) or worked

    def _settled(self) -> int:
        """Updates whose effect on the replay is in: priorities applied, or (uniform) updates done."""
        return self.applied if self.replay.prioritized else self.control.completed

    def _sample(self, step: int) -> None:
        with self.timer(REPLAY_SAMPLE):
            batch = self.replay.sample(self.spec.algorithm.config.batch_size,
                                       beta=round_beta(self.spec.algorithm, self.schedule, step))
        self.control.store_times(self.row, self.timer)  # times first: once the learner sees it, they count it
        self.batches.put(obs=batch.obs[None], actions=batch.actions[None], rewards=batch.rewards[None],
                         next_obs=batch.next_obs[None], dones=batch.dones[None], indices=batch.indices[None],
                         weights=batch.weights[None], step=[step], stored=[len(self.replay)],
                         applied=[self._settled()])
        self.sampled += 1

    def _insert(self, step: int) -> bool:
        """Drain the rings up to the next training step (at most one ended episode per free episode slot)."""
        limit = min(self.schedule.next_round(step) * self.n - self.consumed, self.episodes.free())
        moved, ended = self.feed.drain(limit)
        if not moved:
            return False
        if ended:
            offsets, returns, lengths = zip(*ended)
            self.episodes.put(end=self.consumed + np.asarray(offsets) + 1, ret=returns, length=lengths)
        self.consumed += moved
        self.control.store_times(self.row, self.timer)
        self.control.consumed = self.consumed
        return True

    def _apply_priorities(self) -> bool:
        k = self.priorities.pending()
        if not k:
            return False
        records = self.priorities.get(k)
        for indices, td in zip(records["indices"], records["td"]):
            with self.timer(PRIORITY_UPDATE):
                self.replay.update_priorities(indices, td)
        self.applied += k
        self.control.store_times(self.row, self.timer)
        self.control.applied = self.applied
        return True

    def _pause(self) -> bool:
        """Paused: keep applying priorities; hand over the (now fixed) sampling generator once."""
        worked = self._apply_priorities()
        if not self.control.paused:
            atomic_write_json(Path(self.spec.rng_file), self.replay.state_dict()["rng"])
            self.control.paused = 1
            worked = True
        return worked
