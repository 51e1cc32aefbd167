"""The three kinds of Ray actor of a run, as plain classes (``ray.remote`` wraps them at start).

Imported only once :func:`import_ray` succeeded (this module imports ``ray``). :class:`ActorWorker` returns
transitions by the chunk, :class:`ReplayServer` owns the replay, :class:`LearnerWorker` pulls batches from it (one
request ahead) and sends priorities back. With ``normalize`` the driver hands each actor's share to the learner in
chunk order (docs/runtime.md, "normalize on the parallel runtime").

Example (what :class:`RayExecutor` does)::

    >>> replay = ray.remote(ReplayServer).options(num_cpus=0.5).remote(algo, seed=0)
    >>> rows, episodes, share = actor.collect.options(num_returns=3).remote(256, 0, learner.acting_params.remote())
    >>> replay.add.remote(rows)
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import ray
import torch

from pearl_py import kernels
from pearl_py.algorithms.networks import Networks
from pearl_py.algorithms.off_policy.base import Algorithm
from pearl_py.algorithms.off_policy.learner import Learner
from pearl_py.algorithms.on_policy.base import OnPolicyAlgorithm
from pearl_py.algorithms.on_policy.learner import OnPolicyLearner
from pearl_py.kernels.affinity import LearnerThreads
from pearl_py.kernels.registry import build_learner_update
from pearl_py.platform.runtimes import CUDA
from pearl_py.protocol.kernel import (
    INFERENCE,
    LEARNER_UPDATE,
    PARAM_SYNC,
    PRIORITY_UPDATE,
    REPLAY_INSERT,
    REPLAY_SAMPLE,
)
from pearl_py.replay.buffer import SampleBatch
from pearl_py.runtime.collect import PARAM_READ, Collector, LossMeans, TimedReplay, gradient_step
from pearl_py.runtime.checkpoints import restore_learner
from pearl_py.runtime.device_replay import replay_from_state, replay_on
from pearl_py.runtime.evaluation import evaluate
from pearl_py.runtime.first_calls import warm_up
from pearl_py.runtime.monitor import LearnerOption, VariantSwitch
from pearl_py.runtime.timing import KernelTimer

Rows = dict[str, np.ndarray]


Params = tuple[int, dict[str, np.ndarray]]
"""The acting parameters as the learner sends them: (its gradient-step count, the tensors as arrays)."""


class Timed:
    """Process id and per-kernel times, which every worker reports."""

    timer: KernelTimer

    def pid(self) -> int:
        return os.getpid()

    def node_id(self) -> str:
        """The Ray node this worker runs on."""
        return ray.get_runtime_context().get_node_id()

    def timings(self) -> dict[str, dict[str, float]]:
        return self.timer.summary()


class Acting(Timed):
    """An actor's copy of the acting networks, refreshed from the :data:`Params` each collection call carries
    (so a restarted actor, which Ray rebuilds from its constructor, acts on the current parameters at once)."""

    acting: dict[str, torch.Tensor]
    params_tag: int | None = None

    def load(self, params: Params, kernel: str) -> None:
        """Copy ``params`` into the acting networks unless they are the ones loaded (timed as ``kernel``)."""
        tag, state = params
        if tag == self.params_tag:
            return
        with self.timer(kernel):
            for name, value in state.items():
                self.acting[name].copy_(torch.from_numpy(np.array(value)))  # object-store arrays are read-only
        self.params_tag = tag


class LearnerState(Timed):
    """A learner worker's checkpoint part (its learner's state, this process's torch RNGs) and its restore; its
    threads and its update's variant, which the driver's monitor moves between updates (:meth:`scheduled`)."""

    algo: Algorithm | OnPolicyAlgorithm
    learner: Learner | OnPolicyLearner
    threads: LearnerThreads
    switch: VariantSwitch
    """The update as a variant switch over ``threads`` (the driver's monitor may switch variants)."""

    def scheduled(self, update: Callable[..., Any], options: list[int | LearnerOption] | None, seconds: list[float]
                  ) -> Callable[..., Any]:
        """``update`` with its calls run at ``options`` in turn (``Monitor.schedule``'s; threads set, not pinned) and
        each call's seconds appended to ``seconds``; ``update`` itself without options."""
        if options is None:
            return update
        chosen = iter(options)

        def call(*args: Any, **kwargs: Any) -> Any:
            option = next(chosen)
            # a variant set for the first time is built here, before the call is timed
            (self.switch if isinstance(option, LearnerOption) else self.threads).set(option)
            start = time.perf_counter()
            out = update(*args, **kwargs)
            seconds.append(time.perf_counter() - start)
            return out

        return call

    def checkpoint_state(self) -> tuple[dict[str, Any], torch.Tensor, list[torch.Tensor]]:
        """``(learner state on the CPU, torch RNG state, CUDA RNG states)``, taken between updates."""
        return _on_cpu(self.learner.state_dict()), torch.get_rng_state(), CUDA.rng_states()

    def restore(self, state: dict[str, Any], torch_rng: torch.Tensor, cuda_rng: list[torch.Tensor],
                source: str) -> None:
        restore_learner(self.learner, state, torch_rng, cuda_rng, source)

    def acting_params(self) -> Params:
        """The acting networks' tensors now (looked up each time: a ``fused`` update may replace their storage)."""
        with self.timer(PARAM_SYNC):
            state = self.learner.nets.acting_state(self.algo.acting_networks)
            return self.learner.gradient_steps, {k: v.detach().cpu().numpy().copy() for k, v in state.items()}

    def gradient_steps(self) -> int:
        return self.learner.gradient_steps

    def statistics(self) -> np.ndarray | None:
        """The ``normalize`` statistics as published to the actors (None without normalize)."""
        return None if self.algo.obs_transform is None else self.algo.obs_transform.vector()

    def networks_state(self) -> dict[str, torch.Tensor]:
        """Every network's tensors on the CPU (the trained policy the driver saves)."""
        return {k: v.detach().cpu() for k, v in self.learner.nets.state_dict().items()}

    def evaluate(self, episodes: int, seed: int) -> list[float]:
        return evaluate(self.algo, self.learner.nets, self.learner.device, episodes, seed)


def _on_cpu(value: Any) -> Any:
    """``value`` with every tensor inside (dicts, lists, tuples) moved to the CPU (the driver may have no GPU)."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {k: _on_cpu(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_on_cpu(v) for v in value)
    return value


class ActorWorker(Acting):
    """``n_envs`` envs seeded ``seed + index`` (the plan's ``env_step`` variant) and a copy of the acting networks on
    the planned inference ``device`` (``"cuda"``: the GPU Ray gave it, timed with CUDA events)."""

    def __init__(self, algorithm: Algorithm, index: int, seed: int, total_steps: int,
                 inference: str = "reference", device: str = "cpu", env_step: str = "reference") -> None:
        torch.set_num_threads(1)
        self.algo, self.total_steps = algorithm, total_steps
        self.seed = seed + index
        torch.manual_seed(self.seed)
        self.device = torch.device(device)
        self.nets = Networks(algorithm.build_networks()).to(self.device)
        self.acting = self.nets.acting_state(algorithm.acting_networks)
        self.infer = kernels.build(INFERENCE, inference, algorithm, self.nets,
                                   device_class=kernels.device_class(self.device))
        warm_up(algorithm, infer=self.infer)
        self.timer = KernelTimer({INFERENCE: self.device, PARAM_READ: self.device})
        if algorithm.obs_transform is not None:  # before the collector: its envs' reset observations count
            algorithm.obs_transform.track()
        self.collector = Collector(algorithm, self.seed, self.timer.add, timed=self.timer, env_variant=env_step)

    def collect(self, vector_steps: int, steps_before: int, params: Params, statistics: np.ndarray | None = None
                ) -> tuple[Rows, list[tuple[int, float, int]], np.ndarray | None]:
        """``vector_steps`` steps on ``params`` and the published ``statistics`` (``steps_before``: the run's
        transitions before): the env's transitions, the episodes that ended and this actor's ``normalize`` share."""
        algo, n, transform = self.algo, self.algo.config.n_envs, self.algo.obs_transform
        self.load(params, PARAM_READ)
        if transform is not None:
            transform.take_published(statistics)
        out: dict[str, list[np.ndarray]] = {k: [] for k in ("obs", "actions", "rewards", "next_obs", "terminated")}
        episodes: list[tuple[int, float, int]] = []
        for i in range(vector_steps):
            steps = steps_before + i * n
            step = self.collector.step(None if steps < algo.random_warmup_steps else (
                lambda obs: self.infer(obs, explore=True, progress=steps / self.total_steps)))  # noqa: B023
            episodes += [(i * n + j, ret, length) for j, ret, length in step.ended]
            stored = step.env_step or step  # the env's transitions: the learner normalizes its samples
            for key in out:
                out[key].append(np.asarray(getattr(stored, key)))
        share = None if transform is None else transform.take_share()
        return {k: np.concatenate(v) for k, v in out.items()}, episodes, share


class ReplayServer(TimedReplay, Timed):
    """The algorithm's replay buffer in a process of its own, on the planned ``device`` (a GPU: a TorchReplayBuffer),
    its sample and priority update timed (:class:`TimedReplay`); ``state``: a checkpoint's replay to continue from."""

    def __init__(self, algorithm: Algorithm, seed: int, device: str = "cpu", state: dict[str, Any] | None = None
                 ) -> None:
        device = torch.device(device)
        super().__init__(replay_from_state(state, device) if state is not None else replay_on(algorithm, seed, device),
                         KernelTimer({k: device for k in (REPLAY_INSERT, REPLAY_SAMPLE, PRIORITY_UPDATE)}))
        self.n_envs = algorithm.config.n_envs
        warm_up(algorithm, replay_device=device)

    def add(self, rows: Rows) -> int:
        with self.timer(REPLAY_INSERT, calls=len(rows["rewards"]) // self.n_envs):  # one call per vector step
            self.replay.add(rows["obs"], rows["actions"], rows["rewards"], rows["next_obs"], rows["terminated"])
        return len(self.replay)

    def state_dict(self) -> dict[str, Any]:
        """The buffer's checkpoint part (items, priorities, counters, sampling generator)."""
        return _on_cpu(self.replay.state_dict())


class _Prefetching:
    """The replay server seen from the learner: each sample asks for the next batch before this one is used."""

    def __init__(self, server: Any, prioritized: bool) -> None:
        self.server, self.prioritized = server, prioritized
        self.pending: Any = None
        self.ahead = False
        """Whether another batch will be needed after this one (then it is requested at once)."""

    def sample(self, batch_size: int, beta: float) -> SampleBatch:
        batch = ray.get(self.pending if self.pending is not None else self.server.sample.remote(batch_size, beta))
        self.pending = self.server.sample.remote(batch_size, beta) if self.ahead else None
        return batch

    def update_priorities(self, indices: np.ndarray, td_abs: np.ndarray) -> None:
        self.server.update_priorities.remote(indices, td_abs)


class LearnerWorker(LearnerState):
    """The learner: networks on the planned device, updates with the planned variant, switched to another by the
    driver's schedule (its ``fused`` and reference updates share the learner's memory: no update is lost)."""

    def __init__(self, algorithm: Algorithm, seed: int, device: str, variant: str, replay: Any) -> None:
        torch.set_num_threads(1)
        torch.manual_seed(seed)
        self.algo, self.replay = algorithm, replay
        self.learner = Learner(algorithm, device)
        self.timer = KernelTimer({LEARNER_UPDATE: self.learner.device, PARAM_SYNC: self.learner.device})
        self.threads = LearnerThreads(1, pin=False)
        self.switch = VariantSwitch(self.threads, variant, build_learner_update(self.learner, variant),
                                    lambda other: build_learner_update(self.learner, other))

    def train(self, updates: int, beta: float, progress_remaining: float,
              options: list[int | LearnerOption] | None = None) -> tuple[dict[str, float], list[float]]:
        """A training round of ``updates`` gradient steps at ``options`` (:meth:`scheduled`): mean losses and the
        updates' seconds."""
        self.learner.set_learning_rate(progress_remaining)
        replay = _Prefetching(self.replay, self.algo.config.prioritized_replay)
        means, seconds = LossMeans(), []
        update = self.scheduled(self.switch, options, seconds)
        for i in range(updates):
            replay.ahead = i + 1 < updates
            means.add(gradient_step(replay, update, self.algo.config.batch_size, beta, self.learner.device,
                                    self.timer, self.algo.obs_transform))
        return means.means(), seconds

    def merge_share(self, share: np.ndarray) -> None:
        """An actor's ``normalize`` share of a consumed chunk into the statistics (the driver calls it in chunk
        order, before the round that trains on the chunk)."""
        self.algo.obs_transform.merge_share(share)

    def after_env_steps(self, first: int, last: int) -> None:
        """The per-vector-step hooks (target updates counted in env steps) for steps ``first..last``."""
        for step in range(first, last + 1):
            self.algo.after_env_step(self.learner.nets, step)

