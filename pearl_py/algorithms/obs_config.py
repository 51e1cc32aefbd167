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

from dataclasses import dataclass
from typing import Any, ClassVar

from pearl_py.config.fields import param

EXTRACTORS = ("auto", "flatten", "nature_cnn", "small_cnn")
"""Values of the ``features_extractor`` hyperparameter (pearl_py.algorithms.cnn builds them)."""


def features_extractor_param() -> Any:
    return param("auto", "Observation encoder before the hidden layers: auto (uint8 frames: nature_cnn from "
                 "36x36 up, small_cnn below; vectors: none), flatten, nature_cnn, small_cnn.", choices=EXTRACTORS)


def frame_stack_param() -> Any:
    return param(None, "Frames stacked by the env's preprocessing (null: 4 for Atari ids, none otherwise).",
                 low=1, high=64)


@dataclass(frozen=True)
class EnvKwargs:
    """Keyword arguments for ``gymnasium.make`` (the zoo's ``env_kwargs``): plain names to YAML scalars or lists
    of them, kept as sorted pairs so a config stays hashable and compares by value."""

    items: tuple[tuple[str, Any], ...] = ()

    config_type_name: ClassVar[str] = "mapping"

    @classmethod
    def from_config(cls, value: Any) -> EnvKwargs:
        """A mapping (or null: none); ``ValueError`` naming the first key or value that is not plain."""
        if isinstance(value, EnvKwargs):
            return value
        if value is None:
            return cls()
        if not isinstance(value, dict):
            raise ValueError(f"expected a mapping of keyword arguments (continuous: true), got "
                             f"{type(value).__name__} {value!r}")
        for key, item in value.items():
            if not isinstance(key, str) or not key.isidentifier():
                raise ValueError(f"keyword {key!r} is not a Python name")
            if not _plain(item):
                raise ValueError(f"{key}: expected a number, text, true/false, null or a list of them, got "
                                 f"{type(item).__name__} {item!r}")
        return cls(tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in value.items())))

    def to_config(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.items}

    def __str__(self) -> str:
        return "{" + ", ".join(f"{k}: {v}" for k, v in self.to_config().items()) + "}"


def _plain(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_plain(v) and not isinstance(v, (list, tuple)) for v in value)
    return value is None or isinstance(value, (bool, int, float, str))


def env_kwargs_param() -> Any:
    return param(EnvKwargs(), "Keyword arguments of the env (gymnasium.make), e.g. {continuous: true} for "
                 "LunarLander-v3; the zoo's env_kwargs.")
