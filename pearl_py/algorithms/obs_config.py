"""The env and observation hyperparameters every family shares: the feature extractor, the frames stacked and
the env's keyword arguments.

Both config families (off-policy, on-policy) declare them with these factories, so the keys,
their documentation and their checks are written once.

Example::

    >>> pearl.DQN("MinAtar/Breakout-v1", features_extractor="small_cnn", net_arch=[128]).config.features_extractor
    'small_cnn'
    >>> pearl.TD3("Pendulum-v1", env_kwargs={"g": 9.81}).config.env_kwargs.to_config()
    {'g': 9.81}
"""
from __future__ import annotations

from typing import Any

from pearl_py.config.fields import param
from pearl_py.envs.kwargs import EnvKwargs
from pearl_py.envs.normalize import Normalize

EXTRACTORS = ("auto", "flatten", "nature_cnn", "small_cnn")
"""Values of the ``features_extractor`` hyperparameter (pearl_py.algorithms.cnn builds them)."""


def features_extractor_param() -> Any:
    return param("auto", "Observation encoder before the hidden layers: auto (uint8 frames: nature_cnn from "
                 "36x36 up, small_cnn below; vectors: none), flatten, nature_cnn, small_cnn.", choices=EXTRACTORS)


def frame_stack_param() -> Any:
    return param(None, "Frames stacked by the env's preprocessing (null: 4 for Atari ids, none otherwise).",
                 low=1, high=64)


def env_kwargs_param() -> Any:
    return param(EnvKwargs(), "Keyword arguments of the env (gymnasium.make), e.g. {continuous: true} for "
                 "LunarLander-v3; the zoo's env_kwargs. An Atari env's also take its preprocessing's (SB3's "
                 "AtariWrapper's): noop_max, frame_skip, screen_size, terminal_on_life_loss, clip_reward.")


def normalize_param() -> Any:
    return param(Normalize(), "Observation and reward normalization as SB3's VecNormalize (the zoo's normalize): "
                 "false, true, or a mapping of norm_obs, norm_reward, clip_obs, clip_reward, gamma (null: the "
                 "algorithm's) and epsilon. Training updates the running statistics; evaluation, pearl eval and "
                 "pearl.load use them frozen; they are saved with the policy and in checkpoints. Off-policy "
                 "algorithms store the env's transitions and normalize their samples, as SB3. Every executor (the "
                 "parallel runtime's and Ray's merge the actors' statistics exactly).")
