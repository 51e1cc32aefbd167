"""Evaluation episodes with the deterministic policy.

Example::

    >>> returns = evaluate(algo, learner.nets, torch.device("cpu"), episodes=10, seed=10_000)
    >>> len(returns)
    10
"""
from __future__ import annotations

import time
from collections.abc import Callable

import gymnasium as gym
import numpy as np
import torch

from pearl_py.algorithms.env_make import make_env
from pearl_py.algorithms.networks import Networks
from pearl_py.algorithms.off_policy.base import Algorithm

EVAL_SEED_OFFSET = 10_000
"""Evaluation episodes reset with seeds disjoint from the training envs'."""


def evaluate(algorithm: Algorithm, nets: Networks, device: torch.device, episodes: int, seed: int,
             env_factory: Callable[[], gym.Env] | None = None) -> list[float]:
    """Undiscounted returns of ``episodes`` greedy episodes; episode ``i`` resets with ``seed + i``.

    ``env_factory``: builds the env (default: the algorithm's env with its family's preprocessing and frame stack,
    :func:`~pearl_py.algorithms.env_make.make_env`; ``pearl eval --video`` films it).
    """
    env = env_factory() if env_factory is not None else make_env(algorithm.env_id, algorithm.spec.frame_stack)
    returns: list[float] = []
    try:
        for i in range(episodes):
            obs, _ = env.reset(seed=seed + i)
            total, done = 0.0, False
            while not done:
                batch = np.asarray(obs, dtype=algorithm.spec.obs_dtype)[None]
                action = algorithm.greedy_actions(nets, batch, device)[0]
                obs, reward, terminated, truncated, _ = env.step(algorithm.spec.to_env_action(action))
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
    finally:
        env.close()
    return returns


def evaluation_points(eval_freq: int, n_envs: int, before: int, after: int) -> list[int]:
    """The env-step counts after the vector steps from ``before`` (excluded) to ``after`` at which a run evaluates
    every ``eval_freq`` steps: those with ``steps % eval_freq < n_envs`` (the vector step that reaches a multiple).
    The parallel runtime evaluates at the end of a rollout's collection for every such step: the networks do not
    change while a rollout is collected, so the returns are the serial run's."""
    if not eval_freq:
        return []
    return [s for s in range(before + n_envs, after + 1, n_envs) if s % eval_freq < n_envs]


def eval_point(step: int, returns: list[float]) -> dict[str, float]:
    """One periodic evaluation as a run's ``eval_history`` records it."""
    return {"step": step, "return_mean": float(np.mean(returns)), "return_std": float(np.std(returns))}


class PeriodicEvaluation:
    """A serial executor's evaluations during training, appended to a run's ``eval_history``.

    Example::

        >>> evals = PeriodicEvaluation(algo, device, episodes=10, seed=run_seed + EVAL_SEED_OFFSET, history=[])
        >>> evals.run(learner.nets, step=5_000)       # appends {"step": 5000, "return_mean": ..., ...}
        0.41
    """

    def __init__(self, algorithm: Algorithm, device: torch.device, episodes: int, seed: int,
                 history: list[dict[str, float]]) -> None:
        self.algorithm, self.device, self.episodes, self.seed = algorithm, device, episodes, seed
        self.history = history

    def run(self, nets: Networks, step: int) -> float:
        """Evaluate at ``step``; the seconds it took (not training time: executors take them off their clock)."""
        started = time.perf_counter()
        returns = evaluate(self.algorithm, nets, self.device, self.episodes, self.seed)
        self.history.append(eval_point(step, returns))
        return time.perf_counter() - started
