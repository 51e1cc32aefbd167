"""The env's keyword arguments (the zoo's ``env_kwargs``) as a hashable config value.

Example::

    >>> EnvKwargs.from_config({"continuous": True}).to_config()
    {'continuous': True}
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar


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
