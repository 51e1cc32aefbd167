"""EnvPool (C++ envs stepped by a thread pool; the ``envpool`` extra) as a vector env under the envs room's
SAME_STEP autoreset contract (:mod:`pearl_py.envs.vector`): the ended envs are stepped once more at once (by
``env_id``). The pool runs ``threads`` worker threads (at most one per env) and is seeded ``seed`` at make.
Offered for :data:`ENVPOOL_IDS` only (docs/kernels.md, "Env backends" and "EnvPool's Atari envs are not offered").

Example::

    >>> envs = make_envpool_vector_env("CartPole-v1", n_envs=4, seed=0)
    >>> envs.reset()[0].shape
    (4, 4)
"""
from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector.utils import batch_space

from pearl_py.envs.kwargs import EnvKwargs

ENVPOOL_IDS = ("CartPole-v1", "Acrobot-v1", "MountainCar-v0",
               "HalfCheetah-v4", "HalfCheetah-v5", "Hopper-v4", "Hopper-v5", "Walker2d-v4", "Walker2d-v5")
"""Gymnasium ids whose EnvPool task of the same id is offered as their env_step backend: the ones checked step by
step against gymnasium's env (tests/envs/test_vector_backends.py; not Pendulum-v1, whose steps part where the
speed clips: docs/kernels.md)."""


def envpool_available() -> tuple[bool, str]:
    """Whether the ``envpool`` package can be imported here (the ``envpool`` extra)."""
    if importlib.util.find_spec("envpool") is None:
        return False, "the envpool package is not installed: pip install 'pearl_py[envpool]'"
    return True, ""


def envpool_reason(env_id: str, frame_stack: int | None = None, env_kwargs: EnvKwargs | None = None) -> str | None:
    """None when :func:`make_envpool_vector_env` can make ``env_id`` (as configured), else why not."""
    if env_id not in ENVPOOL_IDS:
        return f"EnvPool is offered for {', '.join(ENVPOOL_IDS)} only, not {env_id!r}"
    if frame_stack not in (None, 1):
        return "EnvPool's envs stack no frames here"
    if env_kwargs is not None and env_kwargs.items:
        return "EnvPool's envs take no env_kwargs here"
    return None


class EnvPoolVector(gym.vector.VectorEnv):
    """An EnvPool pool (gymnasium interface) as a SAME_STEP vector env; see the module docstring."""

    metadata = {"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP}

    def __init__(self, pool: Any, n_envs: int) -> None:
        self.pool, self.num_envs = pool, n_envs
        self.single_observation_space, self.single_action_space = pool.observation_space, pool.action_space
        self.observation_space = batch_space(self.single_observation_space, n_envs)
        self.action_space = batch_space(self.single_action_space, n_envs)
        self._noop = np.zeros((n_envs, *self.single_action_space.shape), dtype=self.single_action_space.dtype)

    def reset(self, *, seed: int | Sequence[int] | None = None, options: dict[str, Any] | None = None):
        """Every env's first observation (``seed`` is ignored: the pool was seeded when made)."""
        return self.pool.reset()

    def step(self, actions: np.ndarray):
        obs, rewards, terminated, truncated, info = self.pool.step(np.asarray(actions))
        done = terminated | truncated
        if done.any():
            ended = np.flatnonzero(done).astype(np.int32)
            first, *_, reset_info = self.pool.step(self._noop[ended], env_id=ended)   # their NEXT_STEP reset, now
            info = {**info, "final_obs": obs.copy(), "_final_obs": done}
            obs[reset_info["env_id"]] = first
        return obs, rewards, terminated, truncated, info

    def close_extras(self, **kwargs: Any) -> None:
        self.pool.close()


def make_envpool_vector_env(env_id: str, n_envs: int, seed: int, frame_stack: int | None = None,
                            env_kwargs: EnvKwargs | None = None, threads: int = 1) -> EnvPoolVector:
    """EnvPool's ``env_id`` as ``n_envs`` envs of a pool seeded ``seed`` with ``threads`` worker threads (at most
    ``n_envs``), under the module's autoreset contract; its action space is seeded with ``seed``. A ValueError
    says why for an env :func:`envpool_reason` refuses."""
    reason = envpool_reason(env_id, frame_stack, env_kwargs)
    if reason is not None:
        raise ValueError(f"no EnvPool env for {env_id!r}: {reason}")
    import envpool

    envs = EnvPoolVector(envpool.make(env_id, env_type="gymnasium", num_envs=n_envs, seed=seed,
                                     num_threads=min(threads, n_envs)),
                         n_envs)
    envs.action_space.seed(seed)
    return envs
