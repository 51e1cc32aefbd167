"""What an algorithm needs to know of an environment, and how actions are scaled.

Continuous actions live in [-1, 1] inside pearl_py (networks, noise, replay) and are
rescaled to the env's bounds only when handed to ``env.step``, as Stable-Baselines3 does.

Example::

    >>> spec = EnvSpec.from_env_id("Pendulum-v1")
    >>> spec.obs_dim, spec.action_dim, spec.discrete
    (3, 1, False)
    >>> spec.to_env_action(np.array([[1.0]], dtype=np.float32))
    array([[2.]], dtype=float32)
    >>> pixels = EnvSpec.from_env_id("MinAtar/Breakout-v1")     # image observations (pip install 'pearl_py[minatar]')
    >>> pixels.obs_shape, pixels.obs_dtype, pixels.is_image
    ((4, 10, 10), 'uint8', True)
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from pearl_py.envs.families import EnvError, register_family, registered_name
from pearl_py.envs.kwargs import EnvKwargs
from pearl_py.envs.make import default_frame_stack, make_env


@dataclass(frozen=True)
class EnvSpec:
    """Observation and action shapes of a gymnasium env (after its family's preprocessing), read once.

    Observations are Boxes of any rank: float32 vectors (``obs_shape == (obs_dim,)``) or uint8
    frames, channel-first (``(C, H, W)``), stored and moved as uint8 and divided by 255 in the network.
    """

    env_id: str
    obs_dim: int
    """Elements of one observation (the product of ``obs_shape``)."""
    action_dim: int
    """Number of discrete actions, or the size of the continuous action vector."""
    discrete: bool
    action_low: tuple[float, ...] = ()
    action_high: tuple[float, ...] = ()
    obs_shape: tuple[int, ...] = ()
    """Shape of one observation; () is read as ``(obs_dim,)``."""
    obs_dtype: str = "float32"
    """``float32``, or ``uint8`` for image frames."""
    frame_stack: int = 1
    """Frames stacked by the env's preprocessing (:mod:`pearl_py.envs.make`)."""
    env_kwargs: EnvKwargs = EnvKwargs()
    """Keyword arguments the env is made with."""

    def __post_init__(self) -> None:
        if not self.obs_shape:
            object.__setattr__(self, "obs_shape", (self.obs_dim,))

    @classmethod
    def from_env_id(cls, env_id: str, frame_stack: int | None = None, env_kwargs: EnvKwargs | None = None) -> EnvSpec:
        """The spec of ``env_id`` as :func:`~pearl_py.envs.make.make_env` makes it (family preprocessing)."""
        check_env_id(env_id)
        kwargs = env_kwargs or EnvKwargs()
        env = make_env(env_id, frame_stack, env_kwargs=kwargs)
        try:
            stack = default_frame_stack(env_id) if frame_stack is None else frame_stack
            spec = cls.from_spaces(env_id, env.observation_space, env.action_space, stack)
        finally:
            env.close()
        return dataclasses.replace(spec, env_kwargs=kwargs)

    @classmethod
    def from_spaces(cls, env_id: str, obs_space: gym.Space, action_space: gym.Space,
                    frame_stack: int = 1) -> EnvSpec:
        if not isinstance(obs_space, gym.spaces.Box) or not obs_space.shape:
            raise EnvError(f"env {env_id!r}: observation space {obs_space} is not supported: pearl_py takes Box "
                           "observations of any rank and Discrete ones (one-hot encoded); Dict, Tuple, "
                           "MultiDiscrete and MultiBinary observations are not implemented")
        obs_dtype = "uint8" if obs_space.dtype == np.uint8 else "float32"
        obs = {"obs_shape": tuple(int(d) for d in obs_space.shape), "obs_dtype": obs_dtype, "frame_stack": frame_stack}
        obs_dim = int(np.prod(obs_space.shape))
        if isinstance(action_space, gym.spaces.Discrete):
            return cls(env_id, obs_dim, int(action_space.n), True, **obs)
        if isinstance(action_space, gym.spaces.Box) and len(action_space.shape) == 1:
            low = tuple(float(x) for x in action_space.low)
            high = tuple(float(x) for x in action_space.high)
            if not all(np.isfinite(low + high)):
                raise EnvError(f"env {env_id!r}: action bounds must be finite, got {low}..{high}")
            return cls(env_id, obs_dim, int(action_space.shape[0]), False, low, high, **obs)
        raise EnvError(f"env {env_id!r}: action space {action_space} is not supported: pearl_py takes Discrete "
                       "and 1-D Box actions (MultiDiscrete, MultiBinary, Dict and Tuple actions are not implemented)")

    @property
    def is_image(self) -> bool:
        """uint8 frames of rank 3, channel-first (what the CNN feature extractors take)."""
        return self.obs_dtype == "uint8" and len(self.obs_shape) == 3

    @property
    def obs_item_bytes(self) -> int:
        """Bytes of one stored observation (uint8 frames: one byte per element)."""
        return self.obs_dim * np.dtype(self.obs_dtype).itemsize

    @property
    def action_shape(self) -> tuple[int, ...]:
        """Shape of one stored action: () for a discrete index, (action_dim,) otherwise."""
        return () if self.discrete else (self.action_dim,)

    @property
    def action_dtype(self) -> type:
        return np.int64 if self.discrete else np.float32

    def random_actions(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Uniform random actions in pearl_py's action space (warm-up before learning starts)."""
        if self.discrete:
            return rng.integers(0, self.action_dim, size=n, dtype=np.int64)
        return rng.uniform(-1.0, 1.0, size=(n, self.action_dim)).astype(np.float32)

    def to_env_action(self, actions: np.ndarray) -> np.ndarray:
        """Map actions from pearl_py's space to the env's (identity for discrete)."""
        if self.discrete:
            return actions
        low = np.asarray(self.action_low, dtype=np.float32)
        high = np.asarray(self.action_high, dtype=np.float32)
        return (low + (np.clip(actions, -1.0, 1.0) + 1.0) * 0.5 * (high - low)).astype(np.float32)


def check_env_id(env_id: str) -> None:
    """Raise :class:`EnvError` unless gymnasium knows ``env_id`` (registering Atari and MinAtar ids first, importing
    the module of a ``module:EnvName-v0`` id); whether the packages its env needs are installed is checked where it
    is made (:func:`~pearl_py.envs.make.make_env`)."""
    register_family(env_id)
    try:
        gym.spec(registered_name(env_id))
    except gym.error.Error as exc:
        hint = "" if ":" in env_id else "; an env of your own: env_module (--env-module) names the module that registers it"
        raise EnvError(f"unknown gymnasium env id {env_id!r} ({exc}){hint}") from None
