"""The actor process: steps a gymnasium vector env with inference batched over its envs.

Each actor owns ``n_envs`` envs seeded ``seed + index`` (``+ 10_007 * generation`` after a restart), acts on its
copy of the acting networks or through the central server, and writes transitions into its :class:`ShmRing`. Its
clock is its own (docs/runtime.md, "Central inference"). It waits while the rate limiter's ``limit`` or its ring is
full and leaves when its quota is done or the run stops; exceptions propagate (the supervisor restarts it).

Example (what :class:`ActorPool` does)::

    >>> proc = ctx.Process(target=run_actor, args=(ActorSpec(algo, index=0, seed=1, quota=500, ...),))
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from pearl_py import kernels
from pearl_py.algorithms.networks import Networks
from pearl_py.algorithms.off_policy.base import Algorithm
from pearl_py.protocol.kernel import INFERENCE
from pearl_py.protocol.schedule import TrainSchedule
from pearl_py.runtime.collect import PARAM_READ, Collector
from pearl_py.runtime.first_calls import warm_up
from pearl_py.runtime.parallel.control import ControlBlock
from pearl_py.runtime.parallel.inference_server import InferenceClient, InferenceLink
from pearl_py.runtime.parallel.params import ParamBoard
from pearl_py.runtime.parallel.process import Doorbell, child_process
from pearl_py.runtime.parallel.ring import ShmRing
from pearl_py.runtime.parallel.shared_statistics import SharedStatistics

RESTART_SEED_STRIDE = 10_007
"""Seed offset per restart, so a restarted actor does not replay its first episodes."""

WAIT_S = 0.05
"""Longest doorbell wait while the rate limiter holds the actor back, before it looks at the stop flag again
(the learner rings its ``room_bell`` when it raises the limit; docs/runtime.md, Doorbell)."""

POLL_S = 0.0005
"""Sleep between looks at the limit of an actor without a doorbell (``ActorSpec.room_bell`` None)."""


def ring_fields(algorithm: Algorithm) -> dict[str, tuple[type, tuple[int, ...]]]:
    """Record layout of a transition ring: a transition plus the episode that ended with it (observations as
    the env makes them: float32 vectors or uint8 frames of any shape)."""
    spec = algorithm.spec
    obs = (np.dtype(spec.obs_dtype), spec.obs_shape)
    return {"obs": obs, "actions": (spec.action_dtype, spec.action_shape),
            "rewards": (np.float32, ()), "next_obs": obs,
            "terminated": (np.bool_, ()), "episode_return": (np.float64, ()), "episode_length": (np.int64, ())}


@dataclass(frozen=True)
class ActorSpec:
    """Everything an actor process needs (pickled once, at start)."""

    algorithm: Algorithm
    index: int
    seed: int
    generation: int
    quota: int
    """Vector steps this actor runs in this session."""
    total_steps: int
    steps_before: int
    """Transitions consumed before this session (a resumed run's progress)."""
    ring: str
    params: str
    control: str
    error_file: str
    """Where the actor writes its traceback when it fails (read by the supervisor)."""
    inference: str = "reference"
    """Variant of the inference kernel (:mod:`pearl_py.kernels`, CPU)."""
    env_step: str = "reference"
    """Variant of the env_step kernel (:mod:`pearl_py.kernels.env_step`)."""
    threads: int = 1
    warmup: int = 0
    """Vector steps of uniform random actions this actor takes first (its share of ``learning_starts``)."""
    actors: int = 1
    central: InferenceLink | None = None
    """How to reach the central inference server; None: infer in this process."""
    replay_bell: Doorbell | None = None
    """Rung after every write to the ring when a replay server drains it."""
    room_bell: Doorbell | None = None
    """Rung by the learner when the limit may have risen (:meth:`ActorPool.wake`); None: poll every ``POLL_S``."""
    statistics: str | None = None
    """The :class:`SharedStatistics` segment (``normalize``): published statistics in, this actor's share out."""

    @property
    def env_seed(self) -> int:
        return self.seed + self.index + RESTART_SEED_STRIDE * self.generation


def run_actor(spec: ActorSpec) -> None:
    """Process entry point: attach the shared segments, collect until done or stopped, detach."""
    with child_process(spec.error_file, spec.threads):
        ring, control = ShmRing.attach(spec.ring), ControlBlock.attach(spec.control)
        statistics = SharedStatistics.attach(spec.statistics) if spec.statistics else None
        try:
            _collect(spec, ring, control, statistics)
        finally:
            ring.close()
            control.close()
            if statistics is not None:
                statistics.close()


class LocalPolicy:
    """Inference in the actor: its own acting networks, refreshed from the :class:`ParamBoard` before each call
    (the refresh recorded as ``param_sync``; the call itself is the collector's to record)."""

    kernel = INFERENCE

    def __init__(self, spec: ActorSpec, control: ControlBlock) -> None:
        algo = spec.algorithm
        self.spec, self.control = spec, control
        self.board = ParamBoard.attach(spec.params)
        self.schedule = TrainSchedule.from_config(algo.config, spec.total_steps)
        nets = Networks(algo.build_networks())
        self.acting = nets.acting_state(algo.acting_networks)
        self.board.read_into(self.acting)
        self.infer = kernels.build(kernels.KernelKind.INFERENCE, spec.inference, algo, nets, device_class="cpu")
        warm_up(algo, infer=self.infer)

    def __call__(self, obs: np.ndarray, steps: int, progress: float) -> np.ndarray:
        index, control = self.spec.index, self.control
        start = time.perf_counter()
        if self.board.read_into(self.acting):
            control.add_time(index, PARAM_READ, time.perf_counter() - start)
        control.note_lag(index, self.schedule.policy_lag(steps, self.board.tag))
        return self.infer(obs, explore=True, progress=progress)

    def finish(self) -> None:
        self.control.finish(self.spec.index)

    def close(self) -> None:
        self.board.close()


def _policy(spec: ActorSpec, control: ControlBlock) -> LocalPolicy | InferenceClient:
    if spec.central is None:
        return LocalPolicy(spec, control)
    return InferenceClient(spec.central, control, spec.index)


def _collect(spec: ActorSpec, ring: ShmRing, control: ControlBlock, statistics: SharedStatistics | None) -> None:
    n, transform = spec.algorithm.config.n_envs, spec.algorithm.obs_transform
    torch.manual_seed(spec.env_seed)
    policy = _policy(spec, control)
    if statistics is not None:  # before the collector: its envs' reset observations count in the share
        statistics.refresh(transform)
        transform.track(statistics.posted(spec.index))  # a restarted actor continues its slot's share
    collector = Collector(spec.algorithm, spec.env_seed, lambda kernel, seconds: control.add_time(
        spec.index, kernel, seconds), policy_kernel=policy.kernel, env_variant=spec.env_step)
    if statistics is not None:
        statistics.post(spec.index, transform)
    no_return, no_length = np.zeros(n), np.zeros(n, dtype=np.int64)
    try:
        while ring.head // n < spec.quota:
            if not _wait_for_room(spec, ring, control, n):
                return
            local = ring.head // n
            if statistics is not None:
                statistics.refresh(transform)
            progress = (spec.steps_before + (local * spec.actors + spec.index) * n) / spec.total_steps
            step = collector.step(None if local < spec.warmup else (
                lambda obs: policy(obs, spec.steps_before + control.produced, progress)))  # noqa: B023
            if step is None:
                return
            start = time.perf_counter()
            if statistics is not None:
                statistics.post(spec.index, transform)
            step = step.env_step or step  # the env's transitions into the ring
            episode_return, episode_length = no_return, no_length  # read-only: the ring copies them
            if step.ended:
                episode_return, episode_length = np.zeros(n), np.zeros(n, dtype=np.int64)
                for i, ret, length in step.ended:
                    episode_return[i], episode_length[i] = ret, length
            ring.put(obs=step.obs, actions=step.actions, rewards=step.rewards, next_obs=step.next_obs,
                     terminated=step.terminated, episode_return=episode_return, episode_length=episode_length)
            control.set_produced(spec.index, ring.head)
            if spec.replay_bell is not None:
                spec.replay_bell.ring()
            control.add_time(spec.index, "actor_handoff", time.perf_counter() - start)
        policy.finish()
    finally:
        collector.close()
        policy.close()


def _wait_for_room(spec: ActorSpec, ring: ShmRing, control: ControlBlock, n: int) -> bool:
    """Block until the limiter and the ring admit ``n`` more transitions; False if the run stopped."""
    return wait_until(lambda: spec.steps_before + control.produced + n <= control.limit and ring.free() >= n,
                      control, spec.room_bell)


def wait_until(admitted: Callable[[], bool], control: ControlBlock, bell: Doorbell | None) -> bool:
    """Block until ``admitted()``, waking when ``bell`` rings (at most every ``WAIT_S``; without a bell, every
    ``POLL_S``); False if the run stopped."""
    while not admitted():
        if control.stopped:
            return False
        if bell is not None:
            bell.wait(WAIT_S)
        else:
            time.sleep(POLL_S)
    return not control.stopped
