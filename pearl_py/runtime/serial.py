"""The serial executor: the whole protocol in one process, in order — the reference run.

Deterministic for a seed: the same seed gives the same returns, bit for bit.

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
from pearl_py.algorithms.env_spec import make_vector_env
from pearl_py.algorithms.off_policy.base import Algorithm
from pearl_py.algorithms.off_policy.learner import Learner, TensorBatch, UpdateResult
from pearl_py.kernels.affinity import pinned_threads
from pearl_py.plan import Plan
from pearl_py.protocol.kernel import ENV_STEP, INFERENCE, LEARNER_UPDATE, PRIORITY_UPDATE, REPLAY_INSERT, REPLAY_SAMPLE
from pearl_py.protocol.schedule import TrainSchedule
from pearl_py.runtime.evaluation import evaluate
from pearl_py.runtime.result import RunResult
from pearl_py.runtime.run_log import RunLog
from pearl_py.runtime.timing import KernelTimer

EVAL_SEED_OFFSET = 10_000
"""Evaluation episodes reset with seeds disjoint from the training envs'."""


class EpisodeTracker:
    """Running return and length of every env of a vector; reports the episodes that end."""

    def __init__(self, n_envs: int) -> None:
        self.returns = np.zeros(n_envs)
        self.lengths = np.zeros(n_envs, dtype=np.int64)
        self.finished = 0

    def step(self, rewards: np.ndarray, done: np.ndarray) -> list[tuple[float, int]]:
        self.returns += rewards
        self.lengths += 1
        if not done.any():  # most steps: nothing ends
            return []
        ended = [(float(self.returns[i]), int(self.lengths[i])) for i in np.flatnonzero(done)]
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
        algo, cfg, spec = self.algorithm, self.algorithm.config, self.algorithm.spec
        torch.set_num_threads(self.threads)
        torch.manual_seed(self.seed)
        rng = np.random.default_rng(self.seed)
        learner = Learner(algo, self.device)
        update = self._learner_update(learner)
        infer = self._inference(algo, learner)
        timer = KernelTimer()
        log = RunLog(self.out_dir, total_steps, self.progress)
        envs = make_vector_env(algo.env_id, cfg.n_envs, self.seed)
        replay = algo.make_replay(seed=self.seed)
        tracker = EpisodeTracker(cfg.n_envs)
        schedule = TrainSchedule.from_config(cfg, total_steps)
        eval_history: list[dict[str, float]] = []
        steps = vector_steps = 0
        eval_seconds = 0.0
        with contextlib.ExitStack() as stack:
            for close in (log.close, replay.close, envs.close):  # closed in the reverse order
                stack.callback(close)
            stack.enter_context(pinned_threads(self.threads))
            obs, _ = envs.reset(seed=self.seed)
            obs = obs.astype(np.float32)
            start = time.perf_counter()
            while steps < total_steps:
                progress = steps / total_steps
                with timer(INFERENCE):
                    if steps < cfg.learning_starts:
                        actions = spec.random_actions(cfg.n_envs, rng)
                    else:
                        actions = infer(obs, explore=True, progress=progress)
                with timer(ENV_STEP):
                    next_obs, rewards, terminated, truncated, infos = envs.step(spec.to_env_action(actions))
                done = terminated | truncated
                next_obs = next_obs.astype(np.float32)
                with timer(REPLAY_INSERT):
                    replay.add(obs, actions, rewards.astype(np.float32), true_next_obs(next_obs, done, infos),
                               terminated)
                for episode_return, length in tracker.step(rewards, done):
                    log.episode(steps + cfg.n_envs, episode_return, length)
                obs = next_obs
                steps += cfg.n_envs
                vector_steps += 1
                algo.after_env_step(learner.nets, vector_steps)
                if schedule.is_round(vector_steps):
                    losses = self._train_round(update, replay, timer, algo.beta_at(progress))
                    log.train(steps, losses, steps / (time.perf_counter() - start - eval_seconds))
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
                         plan=self.plan.to_dict(), kernel_times=timer.summary(), episodes=tracker.finished,
                         eval_history=eval_history, backend="serial")

    def _learner_update(self, learner: Learner) -> Callable[[TensorBatch], UpdateResult]:
        """The plan's ``learner_update`` variant from ``pearl_py.kernels`` ("reference": ``learner.update``)."""
        placement = self.plan.placements.get(LEARNER_UPDATE)
        return kernels.build(kernels.KernelKind.LEARNER_UPDATE, placement.variant if placement else "reference",
                             learner, device_class=kernels.device_class(self.device))

    def _inference(self, algo: Algorithm, learner: Learner) -> kernels.inference.Inference:
        """The plan's ``inference`` variant from ``pearl_py.kernels`` ("reference": ``algo.act`` under
        ``no_grad``, what this loop always ran); built after ``torch.manual_seed(seed)``."""
        placement = self.plan.placements.get(INFERENCE)
        return kernels.build(kernels.KernelKind.INFERENCE, placement.variant if placement else "reference",
                             algo, learner.nets, device_class=kernels.device_class(self.device))

    def _train_round(self, update: Callable[[TensorBatch], UpdateResult], replay, timer: KernelTimer,
                     beta: float) -> dict[str, float]:
        cfg = self.algorithm.config
        totals: dict[str, torch.Tensor] = {}
        for _ in range(cfg.gradient_steps):
            with timer(REPLAY_SAMPLE):
                sample = replay.sample(cfg.batch_size, beta=beta)
            with timer(LEARNER_UPDATE):
                out = update(TensorBatch.from_numpy(sample, self.device))
            if replay.prioritized:
                with timer(PRIORITY_UPDATE):
                    replay.update_priorities(sample.indices, out.td_abs.cpu().numpy())
            for name, value in out.losses.items():
                totals[name] = totals.get(name, 0.0) + value
        return {name: float(total) / cfg.gradient_steps for name, total in totals.items()}
