"""Evaluation episodes with the deterministic policy.

Example::

    >>> returns = evaluate(algo, learner.nets, torch.device("cpu"), episodes=10, seed=10_000)
    >>> len(returns)
    10
"""
from __future__ import annotations

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
