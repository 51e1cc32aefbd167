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

from pearl_py.envs import make_env
from pearl_py.algorithms.networks import Networks
from pearl_py.algorithms.off_policy.base import Algorithm

EVAL_SEED_OFFSET = 10_000
"""Evaluation episodes reset with seeds disjoint from the training envs'."""


def evaluate(algorithm: Algorithm, nets: Networks, device: torch.device, episodes: int, seed: int,
             env_factory: Callable[[], gym.Env] | None = None) -> list[float]:
    """Undiscounted returns of ``episodes`` greedy episodes; episode ``i`` resets with ``seed + i``.

    The episodes run side by side, one env each, their observations batched through one
    ``greedy_actions`` call per step: the greedy policy acts on each row alone, so an episode plays as it
    would alone up to the float rounding of a batched matrix product (a discrete action flips only on an
    exact tie; continuous returns moved by ~1e-10 relative when this replaced one episode after another).
    ``env_factory``: builds each env (default: the algorithm's env with its family's preprocessing and frame
    stack, :func:`~pearl_py.envs.make_env`; ``pearl eval --video`` films the first one's). Observations go through
    the algorithm's normalization with its statistics frozen.
    """
    make = env_factory or (lambda: make_env(algorithm.env_id, algorithm.spec.frame_stack,
                                            env_kwargs=algorithm.spec.env_kwargs))
    envs: list[gym.Env] = []
    try:
        for _ in range(episodes):
            envs.append(make())      # one at a time: those made before a failing one are closed below
        obs = {i: env.reset(seed=seed + i)[0] for i, env in enumerate(envs)}
        returns = [0.0] * episodes
        while obs:     # invariant: obs holds the episodes still running, by index
            running = list(obs)
            batch = np.stack([np.asarray(obs[i], dtype=algorithm.spec.obs_dtype) for i in running])
            if algorithm.obs_transform is not None:      # the statistics frozen; rewards stay the env's
                batch = algorithm.obs_transform.obs(batch)
            actions = algorithm.greedy_actions(nets, batch, device)
            for i, action in zip(running, actions):
                next_obs, reward, terminated, truncated, _ = envs[i].step(algorithm.spec.to_env_action(action))
                returns[i] += float(reward)
                if terminated or truncated:
                    del obs[i]
                else:
                    obs[i] = next_obs
    finally:
        for env in envs:
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
