"""The vector envs every collector steps, and their autoreset contract.

Contract (``SAME_STEP`` autoreset): when an env's episode ends (terminated or truncated) in ``step``, it is reset
in that same step; the returned observation is the new episode's first, and the ended episode's last observation
is ``info["final_obs"][i]`` (with ``info["_final_obs"][i]`` true), so a truncated episode bootstraps from its true
last state. :func:`make_vector_env` (env ``i`` resets with seed ``seed + i``) and :func:`make_native_vector_env`
(one random stream draws every env's start state) are the ``env_step`` kernel's variants (docs/kernels.md,
"Env backends").

Example::

    >>> envs = make_vector_env("CartPole-v1", n_envs=2, seed=0)
    >>> envs.reset(seed=0)[0].shape
    (2, 4)
    >>> native_vector_reason("Pendulum-v1")
    "gymnasium registers no numpy vector_entry_point for 'Pendulum-v1' (it has one for CartPole-v0, CartPole-v1)"
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import gymnasium as gym
import numpy as np

from pearl_py.envs.families import family, registered_name
from pearl_py.envs.kwargs import EnvKwargs
from pearl_py.envs.make import make_env


class OneEnvVector(gym.vector.VectorEnv):
    """One env as a vector of one under the module's autoreset contract: what ``SyncVectorEnv`` returns for it
    (observations of the space's dtype in a new array each call, float64 rewards, bool ends, the vector form of the
    infos with the final observation and info of an ended episode) without its per-step generic work (batching
    helpers dispatched by space, a deep copy of the observations).

    Only for ``Box`` observations (``SyncVectorEnv`` batches other spaces by their structure). Example::

        >>> envs = OneEnvVector(make_env("CartPole-v1"))
        >>> obs, _ = envs.reset(seed=[0])
        >>> obs.shape, envs.step(np.array([1]))[1]
        ((1, 4), array([1.]))
    """

    def __init__(self, env: gym.Env) -> None:
        if not isinstance(env.observation_space, gym.spaces.Box):
            raise TypeError(f"OneEnvVector takes Box observations, not {env.observation_space}")
        self.env, self.envs, self.num_envs = env, [env], 1
        self.single_observation_space, self.single_action_space = env.observation_space, env.action_space
        self.observation_space = gym.vector.utils.batch_space(env.observation_space, 1)
        self.action_space = gym.vector.utils.batch_space(env.action_space, 1)
        self.metadata = {**env.metadata, "autoreset_mode": gym.vector.AutoresetMode.SAME_STEP}
        self.render_mode = env.render_mode
        self.dtype = env.observation_space.dtype

    def reset(self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None):
        """``seed``: the env's (an int, or a list of one, as ``SyncVectorEnv`` takes)."""
        first = seed[0] if isinstance(seed, (list, tuple)) else seed
        obs, info = self.env.reset(seed=first, options=options)
        return np.array(obs, self.dtype)[None], self._add_info({}, info, 0)

    def step(self, actions: np.ndarray):
        obs, reward, terminated, truncated, info = self.env.step(actions[0])
        infos = {}
        if terminated or truncated:    # SAME_STEP: the next episode starts now; the ended one's end goes in the infos
            infos = self._add_info(infos, {"final_obs": obs, "final_info": info}, 0)
            obs, info = self.env.reset()
        if info:
            infos = self._add_info(infos, info, 0)
        return (np.array(obs, self.dtype)[None], np.array([reward], np.float64), np.array([terminated], np.bool_),
                np.array([truncated], np.bool_), infos)

    def close_extras(self, **kwargs: Any) -> None:
        self.env.close()


def make_vector_env(env_id: str, n_envs: int, seed: int, frame_stack: int | None = None,
                    env_kwargs: EnvKwargs | None = None) -> gym.vector.VectorEnv:
    """A synchronous vector of ``n_envs`` envs (their family's preprocessing) with the module's autoreset
    contract (:class:`OneEnvVector` for one env with array observations); its action space is seeded with ``seed``."""
    make = partial(make_env, env_id, frame_stack, env_kwargs=env_kwargs)
    first = make()
    if n_envs == 1 and isinstance(first.observation_space, gym.spaces.Box):
        envs: gym.vector.VectorEnv = OneEnvVector(first)
    else:
        envs = gym.vector.SyncVectorEnv([lambda: first] + [make] * (n_envs - 1),
                                        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    envs.action_space.seed(seed)
    return envs


def _reset_cartpole(env: Any, done: np.ndarray) -> np.ndarray:
    """Reset the ended envs of a ``CartPoleVectorEnv`` as its own next step would (a uniform start state from its
    random stream, step count 0), now; the observations of all its envs."""
    env.state[:, done] = env.np_random.uniform(low=env.low, high=env.high, size=(env.state.shape[0], int(done.sum())))
    env.steps[done] = 0
    env.prev_done[done] = False           # its NEXT_STEP reset must not fire again
    return env.state.T.astype(np.float32)


PER_ENV_RESETS: dict[str, Callable[[Any, np.ndarray], np.ndarray]] = {
    "gymnasium.envs.classic_control.cartpole:CartPoleVectorEnv": _reset_cartpole,
}
"""gymnasium ``vector_entry_point`` -> how to reset some of its envs now (``(env, done mask) -> observations``).
A native vector env is offered only where it has one: gymnasium's vector envs reset all envs or autoreset on the
next step, neither of which is the SAME_STEP contract."""


class SameStepAutoreset(gym.vector.VectorWrapper):
    """A ``NEXT_STEP`` native vector env under the module's ``SAME_STEP`` contract (``reset_done(env, done)``:
    :data:`PER_ENV_RESETS`' entry for it)."""

    def __init__(self, env: gym.vector.VectorEnv, reset_done: Callable[[Any, np.ndarray], np.ndarray]) -> None:
        super().__init__(env)
        self.reset_done = reset_done
        self.metadata = {**env.metadata, "autoreset_mode": gym.vector.AutoresetMode.SAME_STEP}

    def reset(self, *, seed: int | Sequence[int] | None = None, options: dict[str, Any] | None = None):
        """``seed``: an int, or a list whose first seeds the one random stream of every env's start state."""
        first = seed[0] if isinstance(seed, (list, tuple)) else seed
        return self.env.reset(seed=first, options=options)

    def step(self, actions: np.ndarray):
        obs, rewards, terminated, truncated, info = self.env.step(actions)
        done = terminated | truncated
        if done.any():
            info = {**info, "final_obs": obs, "_final_obs": done}
            obs = self.reset_done(self.env.unwrapped, done)
        return obs, rewards, terminated, truncated, info


def native_vector_reason(env_id: str, frame_stack: int | None = None,
                         env_kwargs: EnvKwargs | None = None) -> str | None:
    """None when :func:`make_native_vector_env` can make ``env_id`` (as configured), else why not."""
    if family(env_id) != "gym" or ":" in env_id:
        return f"{env_id!r} is not one of gymnasium's own envs (its family is {family(env_id)!r})"
    if frame_stack not in (None, 1):
        return "a native vector env stacks no frames"
    if env_kwargs is not None and env_kwargs.items:
        return "a native vector env takes no env_kwargs here"
    spec = gym.registry.get(registered_name(env_id))
    if spec is None or spec.vector_entry_point not in PER_ENV_RESETS:
        known = ", ".join(sorted(k for k, s in gym.registry.items() if s.vector_entry_point in PER_ENV_RESETS))
        return f"gymnasium registers no numpy vector_entry_point for {env_id!r} (it has one for {known})"
    return None


def make_native_vector_env(env_id: str, n_envs: int, seed: int, frame_stack: int | None = None,
                           env_kwargs: EnvKwargs | None = None) -> gym.vector.VectorEnv:
    """``env_id``'s own vector env (``gymnasium.make_vec(..., vectorization_mode="vector_entry_point")``) under the
    module's autoreset contract; its action space is seeded with ``seed``. A ValueError says why for an env
    :func:`native_vector_reason` refuses."""
    reason = native_vector_reason(env_id, frame_stack, env_kwargs)
    if reason is not None:
        raise ValueError(f"no native vector env for {env_id!r}: {reason}")
    vector = gym.make_vec(env_id, n_envs, vectorization_mode="vector_entry_point")
    envs = SameStepAutoreset(vector, PER_ENV_RESETS[gym.registry[registered_name(env_id)].vector_entry_point])
    envs.action_space.seed(seed)
    return envs
