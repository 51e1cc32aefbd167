"""Make one gymnasium env with its family's preprocessing (:mod:`pearl_py.envs.families`), its keyword arguments
and its frames stacked. Discrete observations (FrozenLake, Taxi) are one-hot float vectors, as Stable-Baselines3
encodes them. A user's env is made from gymnasium's ``module:EnvName-v0`` form (the module, imported first in
every process that makes the env, registers it).

Example::

    >>> env = make_env("MinAtar/Breakout-v1")
    >>> env.observation_space.shape, env.observation_space.dtype
    ((4, 10, 10), dtype('uint8'))
"""
from __future__ import annotations

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator

from pearl_py.envs.families import EnvError, EnvNotInstalled, family_of, register_family, registered_name
from pearl_py.envs.kwargs import EnvKwargs
from pearl_py.envs.wrappers import OneHotObservation, StackedFrames

INSTALL = {"gymnasium.envs.box2d": "pip install 'pearl_py[box2d]'",
           "gymnasium.envs.mujoco": "pip install 'pearl_py[mujoco]'"}
"""Module of a gymnasium entry point -> the command that installs what it needs."""


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
    """Frames stacked when the config does not say: the family's (4 for Atari, 1: no stacking, otherwise)."""
    return family_of(env_id).frame_stack


def make_env(env_id: str, frame_stack: int | None = None, render_mode: str | None = None,
             env_kwargs: EnvKwargs | None = None) -> gym.Env:
    """``env_id`` with its family's preprocessing and ``frame_stack`` frames stacked (None: the family's; image
    frames as the zoo's ``VecFrameStack``, :class:`~pearl_py.envs.wrappers.StackedFrames`);
    ``render_mode`` as gymnasium's (``rgb_array`` to film it); ``env_kwargs`` passed to ``gymnasium.make``
    (a keyword the env does not take is an :class:`EnvError` naming it)."""
    register_family(env_id)
    check_installed(env_id)
    made = (env_kwargs.to_config() if env_kwargs else {}) | ({"render_mode": render_mode} if render_mode else {})
    try:
        env = family_of(env_id).make(env_id, made)
    except TypeError as exc:
        if not made or "argument" not in str(exc):
            raise
        raise EnvError(f"env {env_id!r} does not take env_kwargs {env_kwargs}: {exc}") from None
    if isinstance(env.observation_space, gym.spaces.Discrete):
        env = OneHotObservation(env)
    stack = default_frame_stack(env_id) if frame_stack is None else frame_stack
    if stack > 1:
        frames = len(env.observation_space.shape) == 3      # (C, H, W) frames: channel-first (stack * C, H, W)
        env = StackedFrames(env, stack) if frames else gym.wrappers.FrameStackObservation(env, stack_size=stack)
    return env
