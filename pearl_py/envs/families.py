"""Env families: how the ids of one source of envs are recognised, registered with gymnasium and preprocessed.

:data:`FAMILIES` are asked in order; the first whose ``claims`` accepts the registered id (without a ``module:``
prefix) makes it: ``atari``, ``minatar``, ``frames`` (docs/api.md, "Image observations"), then ``gym``, which
claims every id. A new family is one :func:`register_env_family` call (docs/extending.md, "A new env family").

Example::

    >>> family_of("MinAtar/Breakout-v1").name, family_of("CartPole-v1").name
    ('minatar', 'gym')
"""
from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from typing import Any, Callable

import gymnasium as gym

from pearl_py.envs.atari import ZOO_DEFAULTS, AtariPreprocessing
from pearl_py.envs.wrappers import ChannelFirstFrames, RandomFrames
from pearl_py.errors import UserError


class EnvError(UserError):
    """The environment id is unknown or its spaces are not ones pearl_py supports."""


class EnvNotInstalled(EnvError):
    """The env id is known but a package its env needs is not installed; the message says what to install."""


@dataclass(frozen=True)
class EnvFamily:
    """One source of envs. ``make(env_id, kwargs)`` is ``gymnasium.make`` with the family's preprocessing, before
    frame stacking; ``register(env_id)`` registers the family's ids with gymnasium (raising
    :class:`EnvNotInstalled` naming the extra when its package is missing); ``frame_stack`` is the default number of
    stacked frames."""

    name: str
    claims: Callable[[str], bool]
    make: Callable[[str, dict[str, Any]], gym.Env]
    register: Callable[[str], None] = lambda env_id: None
    frame_stack: int = 1


def _import_extra(module: str, extra: str, env_id: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise EnvNotInstalled(f"env {env_id!r} needs the {module} package: pip install 'pearl_py[{extra}]'") from None


ATARI_LOW = {"noop_max": 0, "frame_skip": 1, "screen_size": 1}
"""The least value of each whole-number argument of the Atari preprocessing (the others are true or false)."""


def _make_atari(env_id: str, made: dict[str, Any]) -> gym.Env:
    """The env with ``made`` minus the preprocessing's own arguments (SB3's AtariWrapper's, :data:`ZOO_DEFAULTS`),
    which go to :class:`AtariPreprocessing`."""
    wrapper = {key: made.pop(key) for key in list(made) if key in ZOO_DEFAULTS}
    for key, value in wrapper.items():
        low = ATARI_LOW.get(key)       # None: a bool
        if (type(value) is not int or value < low) if low is not None else type(value) is not bool:
            raise EnvError(f"env {env_id!r}: env_kwargs {key} (AtariWrapper's, default {ZOO_DEFAULTS[key]!r}): "
                           f"expected {'true or false' if low is None else f'a whole number >= {low}'}, "
                           f"got {value!r}")
    env = gym.make(env_id, frameskip=1, **made) if env_id.startswith("ALE/") else gym.make(env_id, **made)
    if env.spec.max_episode_steps:     # a TimeLimit counts env.step calls, and the preprocessing steps the emulator
        raise EnvError(f"env {env_id!r}: max_episode_steps is not applied to Atari envs; limit an episode's frames "
                       "with env_kwargs max_num_frames_per_episode (the emulator's, 108000 by default)")
    return AtariPreprocessing(env, **wrapper)


def _register_minatar(env_id: str) -> None:
    _import_extra("minatar", "minatar", env_id)
    if "MinAtar/Breakout-v1" not in gym.registry:
        importlib.import_module("minatar.gym").register_envs()


SYNTHETIC = re.compile(r"^pearl/Frames(Box)?-(\d+)x(\d+)x(\d+)-v0$")
"""Ids of the random-frame envs: ``pearl/Frames-4x10x10-v0`` (discrete), ``pearl/FramesBox-4x84x84-v0``."""


def _register_frames(env_id: str) -> None:
    if env_id not in gym.registry:
        box, *shape = SYNTHETIC.match(env_id).groups()
        gym.register(env_id, entry_point=RandomFrames, max_episode_steps=RandomFrames.EPISODE,
                     kwargs={"shape": tuple(int(d) for d in shape), "continuous": bool(box)})


FAMILIES: list[EnvFamily] = [
    EnvFamily("atari", lambda i: i.startswith("ALE/") or i.endswith("NoFrameskip-v4"), _make_atari,
              lambda i: gym.register_envs(_import_extra("ale_py", "atari", i)), frame_stack=4),
    EnvFamily("minatar", lambda i: i.startswith("MinAtar/"),
              lambda i, made: ChannelFirstFrames(gym.make(i, **made)), _register_minatar),
    EnvFamily("frames", lambda i: bool(SYNTHETIC.match(i)), lambda i, made: gym.make(i, **made), _register_frames),
    EnvFamily("gym", lambda i: True, lambda i, made: gym.make(i, **made)),
]
"""The families, asked in order; ``gym`` claims every id and stays last."""


def register_env_family(family: EnvFamily) -> EnvFamily:
    """Add ``family``, asked before the catch-all ``gym`` family."""
    FAMILIES.insert(len(FAMILIES) - 1, family)
    return family


def registered_name(env_id: str) -> str:
    """The id gymnasium registers: ``env_id`` without the ``module:`` of gymnasium's ``module:EnvName-v0`` form."""
    return env_id.rpartition(":")[2]


def family_of(env_id: str) -> EnvFamily:
    """The first family that claims ``env_id``."""
    name = registered_name(env_id)
    return next(f for f in FAMILIES if f.claims(name))


def family(env_id: str) -> str:
    """The name of ``env_id``'s family: ``atari``, ``minatar``, ``frames``, ``gym``, or a registered one."""
    return family_of(env_id).name


def register_family(env_id: str) -> None:
    """Import the module a ``module:EnvName-v0`` id names (a user's package that registers its envs on import),
    then register the ids of ``env_id``'s family with gymnasium."""
    module = env_id.rpartition(":")[0]
    if module:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise EnvError(f"env {env_id!r}: cannot import {module!r}, the module that should register it "
                           f"({exc})") from None
    family_of(env_id).register(registered_name(env_id))
