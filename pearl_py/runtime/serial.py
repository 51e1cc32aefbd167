"""The serial executor: the whole protocol in one process, in order — the reference run.

Deterministic for a seed: the same seed gives the same returns, bit for bit. It drives the
loop's two halves (:mod:`pearl_py.runtime.collect`) in the serial order: one vector step,
its transitions into the replay, the per-step hook, then a training round when the schedule
says so.

Example::

    >>> result = SerialExecutor(pearl.DQN("CartPole-v1"), seed=0).run(total_steps=5_000)
    >>> result.env_steps
    5000
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from pearl_py import kernels
from pearl_py.algorithms.off_policy.base import Algorithm
from pearl_py.algorithms.off_policy.learner import Learner, TensorBatch, UpdateResult
from pearl_py.kernels.affinity import pinned_threads
from pearl_py.plan import Plan
from pearl_py.protocol.kernel import INFERENCE, LEARNER_UPDATE, REPLAY_INSERT
from pearl_py.protocol.schedule import TrainSchedule
from pearl_py.runtime.collect import Collector, LossMeans, TimedReplay, gradient_step
from pearl_py.runtime.evaluation import EVAL_SEED_OFFSET, evaluate
from pearl_py.runtime.result import RunResult
from pearl_py.runtime.run_log import RunLog
from pearl_py.runtime.timing import KernelTimer


class SerialExecutor:
    """Runs collection and learning alternately in this process, timing every kernel."""

    def __init__(self, algorithm: Algorithm, seed: int = 0, *, device: str = "cpu",
                 out_dir: Path | None = None, eval_episodes: int = 10, eval_freq: int = 0,
                 progress: bool | None = None, plan: Plan | None = None, threads: int | None = None) -> None:
        self.algorithm = algorithm
        self.seed = seed
        self.device = torch.device(device)
        self.out_dir = out_dir
        self.eval_episodes = eval_episodes
        self.eval_freq = eval_freq
        self.progress = progress
        self.plan = plan or Plan.single_device(algorithm.protocol(serialized=True))
        self.threads = threads if threads is not None else self.plan.learner_threads
        """Torch intra-op threads of this process (default: the plan's learner threads, ``Plan.learner_threads``;
        1 in the default plan, one core per process as the cost models are calibrated)."""

    def run(self, total_steps: int) -> RunResult:
        algo, cfg = self.algorithm, self.algorithm.config
        torch.set_num_threads(self.threads)
        torch.manual_seed(self.seed)
        learner = Learner(algo, self.device)
        update = self._learner_update(learner)
        infer = self._inference(algo, learner)
        timer = KernelTimer()
        log = RunLog(self.out_dir, total_steps, self.progress)
        collector = Collector(algo, self.seed, timer.add)
        replay = algo.make_replay(seed=self.seed)
        timed_replay = TimedReplay(replay, timer)
        schedule = TrainSchedule.from_config(cfg, total_steps)
        eval_history: list[dict[str, float]] = []
        steps = vector_steps = 0
        eval_seconds = 0.0
        with contextlib.ExitStack() as stack:
            for close in (log.close, replay.close, collector.close):  # closed in the reverse order
                stack.callback(close)
            stack.enter_context(pinned_threads(self.threads))
            start = time.perf_counter()
            while steps < total_steps:
                progress = steps / total_steps
                policy = None if steps < cfg.learning_starts else (
                    lambda obs: infer(obs, explore=True, progress=progress))  # noqa: B023 (called at once)
                step = collector.step(policy)
                with timer(REPLAY_INSERT):
                    replay.add(step.obs, step.actions, step.rewards, step.next_obs, step.terminated)
                for _, episode_return, length in step.ended:
                    log.episode(steps + cfg.n_envs, episode_return, length)
                steps += cfg.n_envs
                vector_steps += 1
                algo.after_env_step(learner.nets, vector_steps)
                if schedule.is_round(vector_steps):
                    means = LossMeans()
                    for _ in range(cfg.gradient_steps):
                        means.add(gradient_step(timed_replay, update, cfg.batch_size, algo.beta_at(progress),
                                                self.device, timer))
                    log.train(steps, means.means(), steps / (time.perf_counter() - start - eval_seconds))
                if self.eval_freq and steps % self.eval_freq < cfg.n_envs:
                    t0 = time.perf_counter()
                    returns = evaluate(algo, learner.nets, self.device, self.eval_episodes,
                                       self.seed + EVAL_SEED_OFFSET)
                    eval_seconds += time.perf_counter() - t0
                    eval_history.append({"step": steps, "return_mean": float(np.mean(returns)),
                                         "return_std": float(np.std(returns))})
                log.tick(steps, steps / max(time.perf_counter() - start - eval_seconds, 1e-9))
            wall = time.perf_counter() - start - eval_seconds
        eval_returns = evaluate(algo, learner.nets, self.device, self.eval_episodes,
                                self.seed + EVAL_SEED_OFFSET)
        self.learner = learner
        return RunResult(algorithm=algo.name, env=algo.env_id, seed=self.seed, env_steps=steps,
                         gradient_steps=learner.gradient_steps, wall_seconds=wall, eval_returns=eval_returns,
                         plan=self.plan.to_dict(), kernel_times=timer.summary(), episodes=collector.episodes,
                         eval_history=eval_history, backend="serial")

    def _learner_update(self, learner: Learner) -> Callable[[TensorBatch], UpdateResult]:
        """The plan's ``learner_update`` variant from ``pearl_py.kernels`` ("reference": ``learner.update``)."""
        placement = self.plan.placements.get(LEARNER_UPDATE)
        return kernels.build(LEARNER_UPDATE, placement.variant if placement else "reference",
                             learner, device_class=kernels.device_class(self.device))

    def _inference(self, algo: Algorithm, learner: Learner) -> kernels.inference.Inference:
        """The plan's ``inference`` variant from ``pearl_py.kernels`` ("reference": ``algo.act`` under
        ``no_grad``, what this loop always ran); built after ``torch.manual_seed(seed)``."""
        placement = self.plan.placements.get(INFERENCE)
        return kernels.build(INFERENCE, placement.variant if placement else "reference",
                             algo, learner.nets, device_class=kernels.device_class(self.device))
