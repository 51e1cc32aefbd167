"""Make gymnasium envs with the standard preprocessing of their family: Atari, MinAtar, or none.

Atari ids (``ALE/Breakout-v5``, ``BreakoutNoFrameskip-v4``; ale-py ships the ROMs) get the
preprocessing of Mnih et al. (2015) as rl-baselines3-zoo applies it: gymnasium's
``AtariPreprocessing`` (up to 30 no-op starts, an action repeated on 4 frames with the max of
the last two, 84x84 grayscale), rewards clipped to their sign, and ``FrameStackObservation``
stacking the last 4 frames, channel-first: ``(4, 84, 84)`` uint8. MinAtar ids
(``MinAtar/Breakout-v1``) get their 10x10 boolean planes as channel-first uint8 frames of 0 and
255 (``(4, 10, 10)`` for Breakout), so every image observation is a uint8 frame that networks
divide by 255, as Stable-Baselines3 does. Other ids are made as gymnasium registers them.
``frame_stack`` overrides the number of stacked frames (None: 4 for Atari, none otherwise).

Example::

    >>> env = make_env("MinAtar/Breakout-v1")
    >>> env.observation_space.shape, env.observation_space.dtype
    ((4, 10, 10), dtype('uint8'))
"""
from __future__ import annotations

import importlib

import gymnasium as gym
import numpy as np

from pearl_py.errors import UserError

ATARI_FRAME_STACK = 4
"""Frames stacked for Atari (Mnih et al. 2015; rl-baselines3-zoo's ``frame_stack: 4``)."""

EXTRAS = {"atari": ("ale_py", "atari"), "minatar": ("minatar", "minatar")}
"""Env family -> (module that registers its ids, the pearl_py extra that installs it)."""


class EnvError(UserError):
    """The environment id is unknown or its spaces are not ones pearl_py supports."""


def family(env_id: str) -> str:
    """``atari``, ``minatar`` or ``gym`` (no preprocessing), read from the id."""
    if env_id.startswith("ALE/") or env_id.endswith("NoFrameskip-v4"):
        return "atari"
    if env_id.startswith("MinAtar/"):
        return "minatar"
    return "gym"


def register_family(env_id: str) -> None:
    """Register the ids of ``env_id``'s optional env package with gymnasium (no-op for plain ids)."""
    kind = family(env_id)
    if kind == "gym":
        return
    module, extra = EXTRAS[kind]
    try:
        package = importlib.import_module(module)
    except ImportError:
        raise EnvError(f"env {env_id!r} needs the {module} package: pip install 'pearl_py[{extra}]'") from None
    if kind == "atari":
        gym.register_envs(package)
    elif "MinAtar/Breakout-v1" not in gym.registry:
        importlib.import_module("minatar.gym").register_envs()


def default_frame_stack(env_id: str) -> int:
    """Frames stacked when the config does not say: 4 for Atari, 1 (no stacking) otherwise."""
    return ATARI_FRAME_STACK if family(env_id) == "atari" else 1


def make_env(env_id: str, frame_stack: int | None = None) -> gym.Env:
    """``env_id`` with its family's preprocessing and ``frame_stack`` frames stacked (None: the family's)."""
    register_family(env_id)
    kind = family(env_id)
    if kind == "atari":
        env: gym.Env = gym.make(env_id, frameskip=1) if env_id.startswith("ALE/") else gym.make(env_id)
        env = gym.wrappers.AtariPreprocessing(env, noop_max=30, frame_skip=4, screen_size=84, grayscale_obs=True)
        env = gym.wrappers.TransformReward(env, lambda r: float(np.sign(r)))
    elif kind == "minatar":
        env = ChannelFirstFrames(gym.make(env_id))
    else:
        env = gym.make(env_id)
    stack = default_frame_stack(env_id) if frame_stack is None else frame_stack
    if stack > 1:
        env = gym.wrappers.FrameStackObservation(env, stack_size=stack)
        shape = env.observation_space.shape
        if len(shape) == 4:                  # stacked (C, H, W) frames: channel-first (stack * C, H, W)
            env = gym.wrappers.ReshapeObservation(env, (stack * shape[1], *shape[2:]))
    return env


class ChannelFirstFrames(gym.ObservationWrapper):
    """Boolean or 0..1 ``(H, W, C)`` planes (MinAtar's) as ``(C, H, W)`` uint8 frames of 0 and 255."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        h, w, c = env.observation_space.shape
        self.observation_space = gym.spaces.Box(0, 255, (c, h, w), np.uint8)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(np.moveaxis(observation, -1, 0)).astype(np.uint8) * np.uint8(255)
