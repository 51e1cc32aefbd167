"""The actor process: steps a gymnasium vector env with inference batched over its envs.

Each actor owns ``n_envs`` envs seeded ``seed + index`` (``+ 10_007 * generation``
after a restart), acts with its own copy of the acting networks (refreshed from the
:class:`ParamBoard` when the learner publishes), and writes transitions, with the
returns of episodes that ended, into its :class:`ShmRing`. It waits while the rate
limiter's ``limit`` or its ring is full and leaves when its quota is done or the run
stops. Exceptions propagate: the process exits non-zero and the supervisor restarts it.

Example (what :class:`ActorPool` does)::

    >>> proc = ctx.Process(target=run_actor, args=(ActorSpec(algo, index=0, seed=1, quota=500, ...),))
"""
from __future__ import annotations

import ctypes
import signal
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from pearl_py import kernels
from pearl_py.algorithms.base import Algorithm
from pearl_py.algorithms.env_spec import make_vector_env
from pearl_py.algorithms.networks import Networks
from pearl_py.runtime.parallel.control import ControlBlock
from pearl_py.runtime.parallel.params import ParamBoard
from pearl_py.runtime.parallel.ring import ShmRing
from pearl_py.runtime.serial import EpisodeTracker, true_next_obs

RESTART_SEED_STRIDE = 10_007
"""Seed offset per restart, so a restarted actor does not replay its first episodes."""

WAIT_S = 0.0005
"""Sleep while the rate limiter holds the actor back."""


def ring_fields(algorithm: Algorithm) -> dict[str, tuple[type, tuple[int, ...]]]:
    """Record layout of a transition ring: a transition plus the episode that ended with it."""
    spec = algorithm.spec
    return {"obs": (np.float32, (spec.obs_dim,)), "actions": (spec.action_dtype, spec.action_shape),
            "rewards": (np.float32, ()), "next_obs": (np.float32, (spec.obs_dim,)),
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
    threads: int = 1

    @property
    def env_seed(self) -> int:
        return self.seed + self.index + RESTART_SEED_STRIDE * self.generation


def run_actor(spec: ActorSpec) -> None:
    """Process entry point: attach the shared segments, collect until done or stopped, detach."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the learner process handles Ctrl-C and stops us
    die_with_parent()
    torch.set_num_threads(spec.threads)
    ring, board, control = ShmRing.attach(spec.ring), ParamBoard.attach(spec.params), ControlBlock.attach(spec.control)
    try:
        _collect(spec, ring, board, control)
    except BaseException:
        Path(spec.error_file).write_text(traceback.format_exc())
        raise
    finally:
        ring.close()
        board.close()
        control.close()


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (no orphans after a hard kill)."""
    if sys.platform.startswith("linux"):
        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _collect(spec: ActorSpec, ring: ShmRing, board: ParamBoard, control: ControlBlock) -> None:
    algo, n = spec.algorithm, spec.algorithm.config.n_envs
    learning_starts = algo.config.learning_starts
    torch.manual_seed(spec.env_seed)
    rng = np.random.default_rng(spec.env_seed)
    nets = Networks(algo.build_networks())
    acting = nets.acting_state(algo.acting_networks)
    board.read_into(acting)
    infer = kernels.build(kernels.KernelKind.INFERENCE, spec.inference, algo, nets, device_class="cpu")
    envs = make_vector_env(algo.env_id, n, spec.env_seed)
    tracker = EpisodeTracker(n)
    try:
        obs, _ = envs.reset(seed=spec.env_seed)
        obs = obs.astype(np.float32)
        while ring.head // n < spec.quota:
            if not _wait_for_room(spec, ring, control, n):
                return
            steps = spec.steps_before + control.produced
            start = time.perf_counter()
            if steps < learning_starts:
                actions = algo.spec.random_actions(n, rng)
            else:
                if board.read_into(acting):
                    control.add_time(spec.index, "param_sync", time.perf_counter() - start)
                    start = time.perf_counter()
                actions = infer(obs, explore=True, progress=steps / spec.total_steps)
            control.add_time(spec.index, "inference", time.perf_counter() - start)
            start = time.perf_counter()
            next_obs, rewards, terminated, truncated, infos = envs.step(algo.spec.to_env_action(actions))
            control.add_time(spec.index, "env_step", time.perf_counter() - start)
            start = time.perf_counter()
            done = terminated | truncated
            next_obs = next_obs.astype(np.float32)
            episode_return, episode_length = np.zeros(n), np.zeros(n, dtype=np.int64)
            ended = np.flatnonzero(done)
            for i, (ret, length) in zip(ended, tracker.step(rewards, done)):
                episode_return[i], episode_length[i] = ret, length
            ring.put(obs=obs, actions=actions, rewards=rewards.astype(np.float32),
                     next_obs=true_next_obs(next_obs, done, infos), terminated=terminated,
                     episode_return=episode_return, episode_length=episode_length)
            control.set_produced(spec.index, ring.head)
            control.add_time(spec.index, "actor_handoff", time.perf_counter() - start)
            obs = next_obs
    finally:
        envs.close()


def _wait_for_room(spec: ActorSpec, ring: ShmRing, control: ControlBlock, n: int) -> bool:
    """Block until the limiter and the ring admit ``n`` more transitions; False if the run stopped."""
    while spec.steps_before + control.produced + n > control.limit or ring.free() < n:
        if control.stopped:
            return False
        time.sleep(WAIT_S)
    return not control.stopped
