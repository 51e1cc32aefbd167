"""Make gymnasium envs with the standard preprocessing of their family: Atari, MinAtar, or none.

Atari ids (``ALE/Breakout-v5``, ``BreakoutNoFrameskip-v4``; ale-py ships the ROMs) get the
preprocessing of Mnih et al. (2015) as rl-baselines3-zoo applies it: gymnasium's
``AtariPreprocessing`` (up to 30 no-op starts, an action repeated on 4 frames with the max of
the last two, 84x84 grayscale), rewards clipped to their sign, and ``FrameStackObservation``
stacking the last 4 frames, channel-first: ``(4, 84, 84)`` uint8. MinAtar ids
(``MinAtar/Breakout-v1``) get their 10x10 boolean planes as channel-first uint8 frames of 0 and
255 (``(4, 10, 10)`` for Breakout), so every image observation is a uint8 frame that networks
divide by 255, as Stable-Baselines3 does. ``pearl/Frames-CxHxW-v0`` (3 discrete actions) and
``pearl/FramesBox-CxHxW-v0`` (2 continuous actions) are random uint8 frames of any shape, 32 steps
an episode, registered on first use: CNN micro-benchmarks and tests need no optional package.
Other ids are made as gymnasium registers them, including a user's env in gymnasium's ``module:EnvName-v0``
form (the module, imported first in every process that makes the env, registers it). Discrete observations
(FrozenLake, Taxi) are one-hot float vectors, as Stable-Baselines3 encodes them.
``frame_stack`` overrides the number of stacked frames (None: 4 for Atari, none otherwise).

Example::

    >>> env = make_env("MinAtar/Breakout-v1")
    >>> env.observation_space.shape, env.observation_space.dtype
    ((4, 10, 10), dtype('uint8'))
"""
from __future__ import annotations

import importlib
import re
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import load_env_creator

from pearl_py.algorithms.obs_config import EnvKwargs
from pearl_py.errors import UserError

ATARI_FRAME_STACK = 4
"""Frames stacked for Atari (Mnih et al. 2015; rl-baselines3-zoo's ``frame_stack: 4``)."""

EXTRAS = {"atari": ("ale_py", "atari"), "minatar": ("minatar", "minatar")}
"""Env family -> (module that registers its ids, the pearl_py extra that installs it)."""


class EnvError(UserError):
    """The environment id is unknown or its spaces are not ones pearl_py supports."""


class EnvNotInstalled(EnvError):
    """The env id is known but a package its env needs is not installed; the message says what to install."""


INSTALL = {"gymnasium.envs.box2d": "pip install 'pearl_py[box2d]'",
           "gymnasium.envs.mujoco": "pip install 'gymnasium[mujoco]' (pearl_py has no MuJoCo extra yet)"}
"""Module of a gymnasium entry point -> the command that installs what it needs."""


SYNTHETIC = re.compile(r"^pearl/Frames(Box)?-(\d+)x(\d+)x(\d+)-v0$")
"""Ids of the random-frame envs: ``pearl/Frames-4x10x10-v0`` (discrete), ``pearl/FramesBox-4x84x84-v0``."""


def registered_name(env_id: str) -> str:
    """The id gymnasium registers: ``env_id`` without the ``module:`` of gymnasium's ``module:EnvName-v0`` form."""
    return env_id.rpartition(":")[2]


def import_env_module(env_id: str) -> None:
    """Import the module of a ``module:EnvName-v0`` id (a user's package that registers its envs on import)."""
    module = env_id.rpartition(":")[0]
    if not module:
        return
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise EnvError(f"env {env_id!r}: cannot import {module!r}, the module that should register it ({exc})") from None


def family(env_id: str) -> str:
    """``atari``, ``minatar``, ``frames`` (random frames) or ``gym`` (no preprocessing), read from the id."""
    env_id = registered_name(env_id)
    if env_id.startswith("ALE/") or env_id.endswith("NoFrameskip-v4"):
        return "atari"
    if env_id.startswith("MinAtar/"):
        return "minatar"
    if SYNTHETIC.match(env_id):
        return "frames"
    return "gym"


def register_family(env_id: str) -> None:
    """Register the ids of ``env_id``'s optional env package with gymnasium, or import the module a
    ``module:EnvName-v0`` id names (no-op for plain ids)."""
    import_env_module(env_id)
    env_id = registered_name(env_id)
    kind = family(env_id)
    if kind == "gym":
        return
    if kind == "frames":
        if env_id not in gym.registry:
            box, *shape = SYNTHETIC.match(env_id).groups()
            gym.register(env_id, entry_point=RandomFrames, max_episode_steps=RandomFrames.EPISODE,
                         kwargs={"shape": tuple(int(d) for d in shape), "continuous": bool(box)})
        return
    module, extra = EXTRAS[kind]
    try:
        package = importlib.import_module(module)
    except ImportError:
        raise EnvNotInstalled(f"env {env_id!r} needs the {module} package: pip install 'pearl_py[{extra}]'") from None
    if kind == "atari":
        gym.register_envs(package)
    elif "MinAtar/Breakout-v1" not in gym.registry:
        importlib.import_module("minatar.gym").register_envs()


def check_installed(env_id: str) -> None:
    """Raise :class:`EnvNotInstalled` when the module of ``env_id``'s registered entry point cannot be imported
    (LunarLander without Box2D): one line naming the missing package and the command that installs it."""
    entry = gym.spec(registered_name(env_id)).entry_point
    if not isinstance(entry, str):
        return  # a callable entry point is imported already
    try:
        load_env_creator(entry)
    except (gym.error.DependencyNotInstalled, ImportError) as exc:
        missing = getattr(exc.__cause__, "name", None) or getattr(exc, "name", None) or "a package"
        module = entry.partition(":")[0]
        install = next((how for prefix, how in INSTALL.items() if module.startswith(prefix)),
                       f"install the package that provides {missing}")
        raise EnvNotInstalled(f"env {env_id!r} needs {missing}, which is not installed: {install}") from None


def default_frame_stack(env_id: str) -> int:
    """Frames stacked when the config does not say: 4 for Atari, 1 (no stacking) otherwise."""
    return ATARI_FRAME_STACK if family(env_id) == "atari" else 1


def make_env(env_id: str, frame_stack: int | None = None, render_mode: str | None = None,
             env_kwargs: EnvKwargs | None = None) -> gym.Env:
    """``env_id`` with its family's preprocessing and ``frame_stack`` frames stacked (None: the family's);
    ``render_mode`` as gymnasium's (``rgb_array`` to film it); ``env_kwargs`` passed to ``gymnasium.make``
    (a keyword the env does not take is an :class:`EnvError` naming it)."""
    register_family(env_id)
    check_installed(env_id)
    kind = family(env_id)
    made = (env_kwargs.to_config() if env_kwargs else {}) | ({"render_mode": render_mode} if render_mode else {})
    try:
        env = _make(env_id, kind, made)
    except TypeError as exc:
        if not made or "argument" not in str(exc):
            raise
        raise EnvError(f"env {env_id!r} does not take env_kwargs {env_kwargs}: {exc}") from None
    stack = default_frame_stack(env_id) if frame_stack is None else frame_stack
    if stack > 1:
        env = gym.wrappers.FrameStackObservation(env, stack_size=stack)
        shape = env.observation_space.shape
        if len(shape) == 4:                  # stacked (C, H, W) frames: channel-first (stack * C, H, W)
            env = gym.wrappers.ReshapeObservation(env, (stack * shape[1], *shape[2:]))
    return env


def _make(env_id: str, kind: str, made: dict[str, Any]) -> gym.Env:
    """``gymnasium.make`` with ``made`` and the family's preprocessing (before frame stacking)."""
    if kind == "atari":
        env: gym.Env = gym.make(env_id, frameskip=1, **made) if env_id.startswith("ALE/") else gym.make(env_id, **made)
        env = gym.wrappers.AtariPreprocessing(env, noop_max=30, frame_skip=4, screen_size=84, grayscale_obs=True)
        env = gym.wrappers.TransformReward(env, lambda r: float(np.sign(r)))
    elif kind == "minatar":
        env = ChannelFirstFrames(gym.make(env_id, **made))
    else:
        env = gym.make(env_id, **made)
    if isinstance(env.observation_space, gym.spaces.Discrete):
        env = OneHotObservation(env)
    return env


class OneHotObservation(gym.ObservationWrapper):
    """A Discrete observation ``i`` of ``n`` as the float32 one-hot vector ``e_(i - start)`` of length ``n``
    (Stable-Baselines3's ``preprocess_obs`` for Discrete spaces)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        space = env.observation_space
        self.start, self.n = int(space.start), int(space.n)
        self.observation_space = gym.spaces.Box(0.0, 1.0, (self.n,), np.float32)

    def observation(self, observation: int) -> np.ndarray:
        out = np.zeros(self.n, np.float32)
        out[int(observation) - self.start] = 1.0
        return out


class ChannelFirstFrames(gym.ObservationWrapper):
    """Boolean or 0..1 ``(H, W, C)`` planes (MinAtar's) as ``(C, H, W)`` uint8 frames of 0 and 255."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        h, w, c = env.observation_space.shape
        self.observation_space = gym.spaces.Box(0, 255, (c, h, w), np.uint8)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(np.moveaxis(observation, -1, 0)).astype(np.uint8) * np.uint8(255)


class RandomFrames(gym.Env):
    """Uniform random uint8 frames of ``shape``; reward 1 for action 0 (discrete) or ``-|a|^2`` (continuous).

    Nothing to learn beyond the reward rule: it exercises CNN workloads (micro-benchmarks, tests) without
    an optional env package. Episodes end after ``EPISODE`` steps (a time limit: truncated).
    """

    EPISODE = 32

    def __init__(self, shape: tuple[int, int, int], continuous: bool = False) -> None:
        self.observation_space = gym.spaces.Box(0, 255, shape, np.uint8)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32) if continuous else gym.spaces.Discrete(3)
        self.continuous = continuous

    def _frame(self) -> np.ndarray:
        return self.np_random.integers(0, 256, self.observation_space.shape, dtype=np.uint8)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        return self._frame(), {}

    def step(self, action) -> tuple[np.ndarray, float, bool, bool, dict]:
        reward = -float(np.sum(np.square(action))) if self.continuous else float(action == 0)
        return self._frame(), reward, False, False, {}
