"""The vector env every collector steps, and its autoreset contract.

Contract (``SAME_STEP`` autoreset): when an env's episode ends (terminated or truncated) in ``step``, it is reset
in that same step; the returned observation is the new episode's first, and the ended episode's last observation
is ``info["final_obs"][i]`` (with ``info["_final_obs"][i]`` true). Collectors store that final observation as the
transition's next observation, so a truncated episode bootstraps from its true last state.

Example::

    >>> envs = make_vector_env("CartPole-v1", n_envs=2, seed=0)
    >>> envs.reset(seed=0)[0].shape
    (2, 4)
"""
from __future__ import annotations

import gymnasium as gym

from pearl_py.envs.kwargs import EnvKwargs
from pearl_py.envs.make import make_env


def make_vector_env(env_id: str, n_envs: int, seed: int, frame_stack: int | None = None,
                    env_kwargs: EnvKwargs | None = None) -> gym.vector.VectorEnv:
    """A synchronous vector of ``n_envs`` envs (their family's preprocessing) with the module's autoreset
    contract; its action space is seeded with ``seed``."""
    envs = gym.vector.SyncVectorEnv(
        [lambda: make_env(env_id, frame_stack, env_kwargs=env_kwargs) for _ in range(n_envs)],
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
    )
    envs.action_space.seed(seed)
    return envs
