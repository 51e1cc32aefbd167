"""The training loop's pieces, written once for every executor: :class:`Collector` (the acting half),
:func:`gradient_step` (an off-policy update in the serial order) and :class:`LossMeans` (a round's average losses).

Example (the serial executor's loop, condensed)::

    >>> collector = Collector(algo, seed=0, record=timer.add)
    >>> while steps < total_steps:
    ...     step = collector.step(None if warming_up else lambda obs: infer(obs, explore=True, progress=p))
    ...     replay.add(step.obs, step.actions, step.rewards, step.next_obs, step.terminated)
    ...     if schedule.is_round(vector_steps):
    ...         means = LossMeans()
    ...         for _ in range(gradient_steps):
    ...             means.add(gradient_step(TimedReplay(replay, timer), update, batch_size, beta, device, timer))
    ...         log.train(steps, means.pending(timer.events_of(LEARNER_UPDATE)), rate)  # read when it has arrived
"""
from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import torch

from pearl_py import kernels
from pearl_py.envs.episodes import ended_games
from pearl_py.algorithms.off_policy.learner import TensorBatch, UpdateResult
from pearl_py.protocol.kernel import (
    ENV_STEP,
    INFERENCE,
    LEARNER_UPDATE,
    PRIORITY_UPDATE,
    REPLAY_SAMPLE,
    setup_timing,
)

if TYPE_CHECKING:
    from pearl_py.algorithms.core import BaseAlgorithm
    from pearl_py.algorithms.off_policy.base import OffPolicyAlgorithm
    from pearl_py.envs.normalize import ObsRewardNormalizer
    from pearl_py.protocol.schedule import TrainSchedule
    from pearl_py.replay import ReplayBuffer, SampleBatch
    from pearl_py.runtime.device_timing import DeviceEvent, DeviceEvents
    from pearl_py.runtime.timing import KernelTimer

WARMUP_ACTIONS = "warmup_actions"
"""What drawing the warm-up's uniform random actions is recorded as (not the inference kernel)."""

PARAM_READ = "param_read"
"""What an actor's (or an inference server's) copy of newly published parameters into its networks is recorded as:
the receiving end of ``param_sync``, whose calls are the learner's publications."""

Record = Callable[[str, float], None]
"""``record(kernel, seconds)``: where a kernel's time goes (a KernelTimer's ``add``, an actor's control block)."""
TimeBlock = Callable[[str], AbstractContextManager[Any]]
"""``with time_block(kernel): ...`` times the block as one call of ``kernel`` on its device's clock (a KernelTimer)."""


class EpisodeTracker:
    """Running return and length of every env of a vector; reports the true episodes that end (an Atari game, not
    its lives: :mod:`pearl_py.envs.episodes`)."""

    def __init__(self, n_envs: int) -> None:
        self.returns = np.zeros(n_envs)
        self.lengths = np.zeros(n_envs, dtype=np.int64)
        self.finished = 0

    def step(self, rewards: np.ndarray, done: np.ndarray, infos: dict) -> list[tuple[int, float, int]]:
        """``(env index, return, length)`` of the true episodes that ended with this vector step."""
        self.returns += rewards
        self.lengths += 1
        if not done.any():  # most steps: nothing ends
            return []
        ended = ended_games(done, infos)
        if ended is None:
            ended = [(int(i), float(self.returns[i]), int(self.lengths[i])) for i in np.flatnonzero(done)]
        self.returns[done] = 0.0
        self.lengths[done] = 0
        self.finished += len(ended)
        return ended


def true_next_obs(next_obs: np.ndarray, done: np.ndarray, infos: dict) -> np.ndarray:
    """Next observations with the final observation of every ended episode (SAME_STEP autoreset)."""
    if not done.any():
        return next_obs
    real = next_obs.copy()
    for i in np.flatnonzero(done):
        real[i] = infos["final_obs"][i]
    return real


@dataclass(frozen=True)
class Collected:
    """One vector step: ``n_envs`` transitions and the episodes that ended with them.

    ``next_obs`` holds the true next observations (an ended episode's final one); ``truncated``: episodes a time
    limit cut; ``ended``: ``(env index, return, length)`` per true episode that ended.
    """

    obs: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    next_obs: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    ended: tuple[tuple[int, float, int], ...]
    env_step: Collected | None = None
    """The step as the env gave it (before the run's normalization), which an off-policy replay stores; None
    without normalization (the step itself is the env's)."""

    @property
    def done(self) -> np.ndarray:
        return self.terminated | self.truncated


class Collector:
    """A vector of ``n_envs`` envs seeded ``seed``, stepped one vector step at a time (a context manager).

    ``envs``: the global indices of the envs it steps (default all); env ``i`` resets with seed ``seed + i`` wherever
    it runs. Warm-up actions come from ``default_rng(seed)`` (recorded as ``warmup_actions``), the policy's call is
    recorded as ``policy_kernel``, the env step as ``env_step``; ``timed`` times the policy on its device's clock,
    else the host clock's seconds go to ``record``. The algorithm's ``action_noise`` is added to every action
    (clipped to [-1, 1]) and reset where an episode ends. ``env_variant``: the plan's ``env_step`` variant.
    """

    def __init__(self, algorithm: BaseAlgorithm, seed: int, record: Record, policy_kernel: str = INFERENCE,
                 timed: TimeBlock | None = None, envs: range | None = None, env_variant: str = "reference") -> None:
        envs = envs if envs is not None else range(algorithm.config.n_envs)
        self.spec = algorithm.spec
        self.n_envs = len(envs)
        self.rng = np.random.default_rng(seed)
        self.envs = kernels.build(ENV_STEP, env_variant, algorithm.env_id, self.n_envs, seed + envs.start,
                                  self.spec.frame_stack, self.spec.env_kwargs)
        self.obs_dtype = np.dtype(self.spec.obs_dtype)     # uint8 frames stay uint8 (4x fewer bytes than float32)
        self.tracker = EpisodeTracker(self.n_envs)
        self.record, self.policy_kernel = record, policy_kernel
        self.timed = timed
        self.transform = algorithm.obs_transform
        self.noise = algorithm.action_noise(seed, envs)
        obs, _ = self.envs.reset(seed=[seed + i for i in envs])   # env i: seed + i, wherever it runs
        self.env_obs = obs.astype(self.obs_dtype, copy=False)
        """The envs' observations now, as they gave them."""
        self.obs = self.env_obs if self.transform is None else self.transform.begin(self.env_obs)
        """The observations now as the policy sees them (through the run's normalization, if any)."""

    def step(self, policy: Callable[[np.ndarray], np.ndarray | None] | None) -> Collected | None:
        """One vector step with ``policy(obs) -> actions`` (None: the warm-up's random actions); None, nothing
        stepped, when the policy returns None (an inference server's actor whose run stopped)."""
        kernel = WARMUP_ACTIONS if policy is None else self.policy_kernel
        if self.timed is not None:  # the kernel's device clock (events on a GPU); the policy never returns None
            with self.timed(kernel):
                actions = self.spec.random_actions(self.n_envs, self.rng) if policy is None else policy(self.obs)
        else:
            start = time.perf_counter()
            actions = self.spec.random_actions(self.n_envs, self.rng) if policy is None else policy(self.obs)
            if actions is None:
                return None
            self.record(kernel, time.perf_counter() - start)
        if self.noise is not None:
            actions = np.clip(actions + self.noise(), -1.0, 1.0).astype(np.float32)
        start = time.perf_counter()
        try:
            next_obs, rewards, terminated, truncated, infos = self.envs.step(self.spec.to_env_action(actions))
        finally:
            self.record(ENV_STEP, time.perf_counter() - start)
        done = terminated | truncated
        if self.noise is not None and done.any():
            self.noise.reset(done)
        next_obs = next_obs.astype(self.obs_dtype, copy=False)
        ended = self.tracker.step(rewards, done, infos)
        step = Collected(self.env_obs, actions, rewards.astype(np.float32), true_next_obs(next_obs, done, infos),
                         terminated, truncated, tuple(ended))
        self.env_obs = next_obs
        if self.transform is None:
            self.obs = next_obs
            return step
        return self._transformed(step)

    def _transformed(self, step: Collected) -> Collected:
        """``step`` through the run's transform, which it updates, as SB3's VecNormalize (the env's step kept as
        :attr:`Collected.env_step`; episode returns stay the env's)."""
        obs, done = self.transform.observe(self.env_obs), step.done
        final = {"final_obs": dict(zip(np.flatnonzero(done), self.transform.obs(step.next_obs[done])))}
        normalized = Collected(self.obs, step.actions, self.transform.reward(step.rewards, done),
                               true_next_obs(obs, done, final), step.terminated, step.truncated, step.ended,
                               env_step=step)
        self.obs = obs
        return normalized

    @property
    def episodes(self) -> int:
        """Episodes finished so far."""
        return self.tracker.finished

    def close(self) -> None:
        self.envs.close()

    def __enter__(self) -> Collector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ReplayAccess(Protocol):
    """Where a learner's batches come from and its priorities go: the replay itself or a server of it."""

    @property
    def prioritized(self) -> bool: ...

    def sample(self, batch_size: int, beta: float) -> SampleBatch: ...

    def update_priorities(self, indices: np.ndarray, td_abs: np.ndarray) -> None: ...


class TimedReplay:
    """A :class:`ReplayBuffer` in the learner's process, its sample and priority update timed."""

    def __init__(self, replay: ReplayBuffer, timer: KernelTimer) -> None:
        self.replay, self.timer = replay, timer

    @property
    def prioritized(self) -> bool:
        return self.replay.prioritized

    def sample(self, batch_size: int, beta: float) -> SampleBatch:
        with self.timer(REPLAY_SAMPLE):
            return self.replay.sample(batch_size, beta=beta)

    def update_priorities(self, indices: np.ndarray, td_abs: np.ndarray) -> None:
        with self.timer(PRIORITY_UPDATE):
            self.replay.update_priorities(indices, td_abs)


def tensor_batch(sample: Any, device: torch.device) -> TensorBatch:
    """A sampled batch on the learner's ``device``: numpy arrays (``ReplayBuffer``) or tensors (a
    ``TorchReplayBuffer``'s, moved only if it lives on another device)."""
    if not isinstance(sample.obs, torch.Tensor):
        return TensorBatch.from_numpy(sample, device)
    return TensorBatch(*(t.to(device, non_blocking=True) for t in (sample.obs, sample.actions, sample.rewards,
                                                                   sample.next_obs, sample.dones, sample.weights)))


def update_timing(update: Callable[[TensorBatch], UpdateResult]) -> str:
    """What the next call of ``update`` is timed as: its setup (``setup_timing``) when it first captures or compiles
    its step (a kernel's ``sets_up_next``), else ``learner_update``."""
    sets_up = getattr(update, "sets_up_next", None)
    return setup_timing(LEARNER_UPDATE) if sets_up is not None and sets_up() else LEARNER_UPDATE


def gradient_step(replay: ReplayAccess, update: Callable[[TensorBatch], UpdateResult], batch_size: int,
                  beta: float, device: torch.device, time_update: TimeBlock,
                  transform: ObsRewardNormalizer | None = None) -> UpdateResult:
    """One update in the serial order: sample a batch (normalized by ``transform``), update (timed:
    :func:`update_timing`), send the priorities (a torch replay gets ``|δ|`` where it is: no wait for the GPU)."""
    sample = replay.sample(batch_size, beta)
    if transform is not None:
        sample = transform.sample(sample)
    with time_update(update_timing(update)):
        out = update(tensor_batch(sample, device))
    if replay.prioritized:
        on_device = isinstance(sample.indices, torch.Tensor)
        replay.update_priorities(sample.indices, out.td_abs if on_device else out.td_abs.cpu().numpy())
    return out


def round_beta(algorithm: OffPolicyAlgorithm, schedule: TrainSchedule, step: int) -> float:
    """Importance-sampling exponent of the training round at vector step ``step``: the serial loop's, which
    anneals it by the progress before that step's transitions."""
    return algorithm.beta_at((step - 1) * schedule.n_envs / schedule.total_steps)


def round_progress_remaining(schedule: TrainSchedule, step: int) -> float:
    """``progress_remaining`` of the training round at vector step ``step``, after that step's transitions (SB3's
    ``1 - num_timesteps / total_timesteps`` when ``train`` runs): what ``Learner.set_learning_rate`` takes."""
    return 1.0 - step * schedule.n_envs / schedule.total_steps


class LossMeans:
    """Average losses over a round's updates (tensors summed lazily on their device): :meth:`means` now (waits),
    :meth:`pending` on their way to the host (``RunLog.train`` writes the row once they arrived)."""

    def __init__(self) -> None:
        self.totals: dict[str, torch.Tensor | float] = {}
        self.count = 0

    def add(self, out: UpdateResult) -> None:
        for name, value in out.losses.items():
            self.totals[name] = self.totals.get(name, 0.0) + value
        self.count += 1

    def means(self) -> dict[str, float]:
        return {name: float(total) / max(self.count, 1) for name, total in self.totals.items()}

    def pending(self, events: DeviceEvents | None) -> PendingLosses:
        """The means on their way to the host (``events``: the updates' device's; None: read now); nothing waits."""
        device = next((t.device for t in self.totals.values() if isinstance(t, torch.Tensor)), None)
        if events is None or device is None:
            return PendingLosses(self.means())
        means = torch.stack([torch.as_tensor(total, device=device).reshape(()).float()
                             for total in self.totals.values()]) / max(self.count, 1)
        host = means.to("cpu", non_blocking=True)  # a device-to-host copy with non_blocking lands in pinned memory
        arrived = events()
        arrived.record()
        return PendingLosses(dict(zip(self.totals, host)), arrived)


@dataclass
class PendingLosses:
    """A round's mean losses copied to the host: ``host`` holds them once ``arrived`` (an event recorded after the
    copy; None: already there) has completed."""

    host: dict[str, torch.Tensor | float]
    arrived: DeviceEvent | None = None

    def ready(self) -> bool:
        """Whether the values have arrived (never waits)."""
        return self.arrived is None or self.arrived.query()

    def values(self) -> dict[str, float]:
        """The mean losses by name, waiting for the copy if it has not arrived."""
        if not self.ready():
            self.arrived.synchronize()
        return {name: float(value) for name, value in self.host.items()}
