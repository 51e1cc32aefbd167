"""Evaluation episodes with the deterministic policy.

Example::

    >>> returns = evaluate(algo, learner.nets, torch.device("cpu"), episodes=10, seed=10_000)
    >>> len(returns)
    10
"""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from pearl_py.envs import make_env
from pearl_py.envs.episodes import GAME_FRAMES, GAME_RETURN, game_over
from pearl_py.algorithms.networks import Networks
from pearl_py.algorithms.off_policy.base import Algorithm
from pearl_py.runtime.run_log import RunLog
from pearl_py.runtime.policy_files import save_policy

EVAL_SEED_OFFSET = 10_000
"""Evaluation episodes reset with seeds disjoint from the training envs'."""


def evaluate(algorithm: Algorithm, nets: Networks, device: torch.device, episodes: int, seed: int,
             env_factory: Callable[[], gym.Env] | None = None) -> list[float]:
    """Undiscounted returns of ``episodes`` greedy episodes; episode ``i`` resets with ``seed + i``
    (:func:`play`'s returns)."""
    return play(algorithm, nets, device, episodes, seed, env_factory)[0]


def play(algorithm: Algorithm, nets: Networks, device: torch.device, episodes: int, seed: int,
         env_factory: Callable[[], gym.Env] | None = None) -> tuple[list[float], list[int]]:
    """Undiscounted returns and lengths of ``episodes`` greedy episodes; episode ``i`` resets with ``seed + i``.

    True episodes (an Atari game, not its lives: :mod:`pearl_py.envs.episodes`), run side by side, one env each,
    batched through one ``greedy_actions`` call per step (each row acts alone: an episode plays as it would alone,
    up to a batched product's rounding). ``env_factory``: builds each env (default :func:`~pearl_py.envs.make_env`).
    Observations go through the algorithm's normalization with its statistics frozen.
    """
    make = env_factory or (lambda: make_env(algorithm.env_id, algorithm.spec.frame_stack,
                                            env_kwargs=algorithm.spec.env_kwargs))
    envs: list[gym.Env] = []
    try:
        for _ in range(episodes):
            envs.append(make())      # one at a time: those made before a failing one are closed below
        obs = {i: env.reset(seed=seed + i)[0] for i, env in enumerate(envs)}
        returns, lengths = [0.0] * episodes, [0] * episodes
        while obs:     # invariant: obs holds the episodes still running, by index
            running = list(obs)
            batch = np.stack([np.asarray(obs[i], dtype=algorithm.spec.obs_dtype) for i in running])
            if algorithm.obs_transform is not None:      # the statistics frozen; rewards stay the env's
                batch = algorithm.obs_transform.obs(batch)
            actions = algorithm.greedy_actions(nets, batch, device)
            for i, action in zip(running, actions):
                next_obs, reward, terminated, truncated, info = envs[i].step(algorithm.spec.to_env_action(action))
                returns[i] += float(reward)
                lengths[i] += 1
                ended = terminated or truncated
                if ended and not game_over(info):      # a life lost: the game goes on (or ends inside the reset)
                    next_obs, info = envs[i].reset()
                    ended = GAME_RETURN in info
                if GAME_RETURN in info:
                    returns[i], lengths[i] = info[GAME_RETURN], info[GAME_FRAMES]
                if ended:
                    del obs[i]
                else:
                    obs[i] = next_obs
    finally:
        for env in envs:
            env.close()
    return returns, lengths


def evaluation_points(eval_freq: int, n_envs: int, before: int, after: int) -> list[int]:
    """The env-step counts after the vector steps from ``before`` (excluded) to ``after`` at which a run evaluates
    every ``eval_freq`` steps: those with ``steps % eval_freq < n_envs`` (the vector step that reaches a multiple).
    An on-policy run evaluates them after a rollout's collection: its networks do not change while it is collected."""
    if not eval_freq:
        return []
    return [s for s in range(before + n_envs, after + 1, n_envs) if s % eval_freq < n_envs]


def eval_point(step: int, returns: list[float]) -> dict[str, float]:
    """One periodic evaluation as a run's ``eval_history`` records it."""
    return {"step": step, "return_mean": float(np.mean(returns)), "return_std": float(np.std(returns))}


class PeriodicEvaluation:
    """Every executor's evaluations during training: each appends a point to ``history``, goes to the run log and,
    when it beats every earlier point (a resumed run's included), saves ``out_dir/best_policy.pt`` atomically.

    Example::

        >>> evals = PeriodicEvaluation(algo, learner, episodes=10, seed=run_seed, history=[], log=log,
        ...                            out_dir=Path("runs/dqn"))
        >>> evals.run(step=5_000)       # appends {"step": 5000, "return_mean": ..., ...}; best_policy.pt if best
        0.41
    """

    def __init__(self, algorithm: Algorithm, learner: Any, episodes: int, seed: int,
                 history: list[dict[str, float]], log: RunLog | None = None, out_dir: Path | None = None) -> None:
        self.algorithm, self.learner, self.episodes, self.run_seed = algorithm, learner, episodes, seed
        self.history, self.log, self.out_dir = history, log, out_dir
        self.best = max((p["return_mean"] for p in history), default=None)
        """The best mean return so far (None before the first evaluation)."""

    def run(self, step: int) -> float:
        """Evaluate at ``step``; the seconds it took (not training time: executors take them off their clock)."""
        started = time.perf_counter()
        learner = self.learner
        returns, lengths = play(self.algorithm, learner.nets, learner.device, self.episodes,
                                self.run_seed + EVAL_SEED_OFFSET)
        point = eval_point(step, returns)
        self.history.append(point)
        if self.log is not None:
            self.log.evaluation(step, point["return_mean"], float(np.mean(lengths)))
        if self.best is None or point["return_mean"] > self.best:
            self.best = point["return_mean"]
            if self.out_dir is not None:
                save_policy(self.out_dir, self.algorithm, learner.nets, seed=self.run_seed, env_steps=step,
                            gradient_steps=learner.gradient_steps, best_evaluation=point)
        return time.perf_counter() - started
