"""The on-policy serial executor: collect a rollout, compute its advantages, learn on it — in one process.

The reference run of PPO, A2C and user on-policy algorithms, deterministic for a seed. As
Stable-Baselines3's ``OnPolicyAlgorithm.learn``: rollouts of ``n_steps`` vector steps are
collected while fewer than ``total_steps`` env steps are done (so the last rollout may pass
``total_steps``), the episodes ended by a time limit get ``gamma * V(final obs)`` added to
their last reward, and the schedules read ``progress_remaining = 1 - env_steps / total_steps``
after each rollout (held at 0 past the end, where SB3 lets it go negative).

Kernels timed (``RunResult.kernel_times``): ``inference`` (the policy on every env's
observation; also V of final observations of truncated episodes and of the rollout's last
observations), ``env_step``, ``rollout_insert``, ``advantage`` (GAE over the rollout) and
``learner_update`` (one call per minibatch step). The learner's networks are the actors'
networks: there is no ``param_sync`` in this loop.

Example::

    >>> result = OnPolicySerialExecutor(pearl.PPO("CartPole-v1", n_envs=8, n_steps=32), seed=0).run(10_000)
    >>> result.env_steps, result.kernel_times[LEARNER_UPDATE]["calls"]    # 40 rollouts of 256 steps
    (10240, 1600)
"""
from __future__ import annotations

import contextlib
import time
from pathlib import Path

import numpy as np
import torch

from pearl_py.algorithms.on_policy.base import OnPolicyAlgorithm
from pearl_py.algorithms.on_policy.learner import OnPolicyLearner
from pearl_py.kernels.affinity import pinned_threads
from pearl_py.plan import Placement, Plan
from pearl_py.protocol.kernel import (
    ADVANTAGE,
    ENV_STEP,
    INFERENCE,
    LEARNER_UPDATE,
    ROLLOUT_INSERT,
)
from pearl_py.replay.gae import bootstrap_truncated
from pearl_py.runtime.collect import Collected, Collector
from pearl_py.runtime.evaluation import EVAL_SEED_OFFSET, evaluate
from pearl_py.runtime.result import RunResult
from pearl_py.runtime.run_log import RunLog
from pearl_py.runtime.timing import KernelTimer

ON_POLICY_KERNELS = (ENV_STEP, INFERENCE, ROLLOUT_INSERT, ADVANTAGE, LEARNER_UPDATE)
"""The kernels of the serial on-policy loop, in the order one rollout runs them."""


def serial_plan(device: str = "cpu") -> Plan:
    """Every on-policy kernel on one device, reference implementation, unpredicted (this executor's plan)."""
    return Plan(platform="local", objective="none", placements={k: Placement(device) for k in ON_POLICY_KERNELS},
                mode="serialized", devices={device: "cpu"}, solver="single-device")


class OnPolicySerialExecutor:
    """Runs collection and learning alternately in this process, timing every kernel."""

    def __init__(self, algorithm: OnPolicyAlgorithm, seed: int = 0, *, device: str = "cpu",
                 out_dir: Path | None = None, eval_episodes: int = 10, eval_freq: int = 0,
                 progress: bool | None = None, threads: int = 1) -> None:
        self.algorithm = algorithm
        self.seed = seed
        self.device = torch.device(device)
        self.out_dir = out_dir
        self.eval_episodes = eval_episodes
        self.eval_freq = eval_freq
        self.progress = progress
        self.threads = threads
        """Torch intra-op threads of this process (1: one core, as the cost models are calibrated)."""

    def run(self, total_steps: int) -> RunResult:
        algo, cfg = self.algorithm, self.algorithm.config
        torch.set_num_threads(self.threads)
        torch.manual_seed(self.seed)
        learner = OnPolicyLearner(algo, self.device)
        timer = KernelTimer()
        log = RunLog(self.out_dir, total_steps, self.progress)
        collector = Collector(algo, self.seed, timer.add)
        rollout = algo.make_rollout(seed=self.seed)
        eval_history: list[dict[str, float]] = []
        steps = 0
        eval_seconds = 0.0
        with contextlib.ExitStack() as stack:
            for close in (log.close, collector.close):  # closed in the reverse order
                stack.callback(close)
            stack.enter_context(pinned_threads(self.threads))
            episode_starts = np.ones(cfg.n_envs, dtype=np.float32)  # every env starts an episode
            start = time.perf_counter()
            while steps < total_steps:
                rollout.reset()
                for _ in range(cfg.n_steps):
                    acted: list[tuple[np.ndarray, np.ndarray]] = []
                    step = collector.step(lambda obs: self._act(learner, obs, acted))  # noqa: B023 (called at once)
                    (values, log_probs), = acted
                    learned = self._bootstrap_truncated(learner, timer, step)
                    with timer(ROLLOUT_INSERT):
                        rollout.add(step.obs, step.actions, learned, episode_starts, values, log_probs)
                    steps += cfg.n_envs
                    for _, episode_return, length in step.ended:
                        log.episode(steps, episode_return, length)
                    episode_starts = step.done.astype(np.float32)
                    if self.eval_freq and steps % self.eval_freq < cfg.n_envs:
                        t0 = time.perf_counter()
                        returns = evaluate(algo, learner.nets, self.device, self.eval_episodes,
                                           self.seed + EVAL_SEED_OFFSET)
                        eval_seconds += time.perf_counter() - t0
                        eval_history.append({"step": steps, "return_mean": float(np.mean(returns)),
                                             "return_std": float(np.std(returns))})
                    log.tick(steps, steps / max(time.perf_counter() - start - eval_seconds, 1e-9))
                with timer(INFERENCE):
                    last_values = self._values(learner, collector.obs)
                with timer(ADVANTAGE):
                    rollout.compute_advantages(last_values, episode_starts, cfg.gamma, cfg.gae_lambda)
                stats = learner.learn(rollout, max(1.0 - steps / total_steps, 0.0), timer)
                log.train(steps, stats.as_log(), steps / max(time.perf_counter() - start - eval_seconds, 1e-9))
            wall = time.perf_counter() - start - eval_seconds
        eval_returns = evaluate(algo, learner.nets, self.device, self.eval_episodes, self.seed + EVAL_SEED_OFFSET)
        self.learner, self.rollout = learner, rollout  # the trained networks and the last rollout, for inspection
        return RunResult(algorithm=algo.name, env=algo.env_id, seed=self.seed, env_steps=steps,
                         gradient_steps=learner.gradient_steps, wall_seconds=wall, eval_returns=eval_returns,
                         plan=serial_plan(self.device.type).to_dict(), kernel_times=timer.summary(),
                         episodes=collector.episodes, eval_history=eval_history, backend="serial")

    def _act(self, learner: OnPolicyLearner, obs: np.ndarray, acted: list[tuple[np.ndarray, np.ndarray]]
             ) -> np.ndarray:
        """The ``inference`` kernel: sampled actions, as numpy; V(obs) and the log-probabilities go to ``acted``."""
        with torch.no_grad():
            step = self.algorithm.act(learner.nets, torch.as_tensor(obs, device=self.device), explore=True)
        acted.append((step.values.cpu().numpy(), step.log_probs.cpu().numpy()))
        return step.actions.cpu().numpy()

    def _values(self, learner: OnPolicyLearner, obs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return self.algorithm.value(learner.nets, torch.as_tensor(obs, device=self.device)).cpu().numpy()

    def _bootstrap_truncated(self, learner: OnPolicyLearner, timer: KernelTimer, step: Collected) -> np.ndarray:
        """Rewards plus ``gamma * V(final obs)`` for episodes a time limit cut (none on most steps)."""
        cut = step.truncated & ~step.terminated
        final_values = np.zeros(len(step.rewards), dtype=np.float32)
        if cut.any():
            with timer(INFERENCE):
                final_values[cut] = self._values(learner, step.next_obs[cut])
        return bootstrap_truncated(step.rewards, step.terminated, step.truncated, final_values,
                                   self.algorithm.config.gamma)
