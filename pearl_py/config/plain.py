"""A config dataclass as plain JSON values, and back: what saved policies and ``--set`` carry.

Each value is what a config file would hold: lists for tuples, a self-parsing value's own
config form (a schedule's ``lin_0.001``), numbers, text, booleans and null. :func:`build`
reads the result back into an equal dataclass.

Example::

    >>> values = plain_values(PPOConfig(learning_rate=Schedule(1e-3, linear=True)))
    >>> values["learning_rate"], values["net_arch"]
    ('lin_0.001', [64, 64])
    >>> build(PPOConfig, values) == PPOConfig(learning_rate=Schedule(1e-3, linear=True))
    True
"""
from __future__ import annotations

import dataclasses
from typing import Any


def plain_value(value: Any) -> Any:
    """One field's value as a config file holds it."""
    if hasattr(value, "to_config"):
        return value.to_config()
    if isinstance(value, (tuple, list)):
        return [plain_value(v) for v in value]
    return value


def plain_values(config: Any) -> dict[str, Any]:
    """Every field of a config dataclass instance, by name, as plain values (in field order)."""
    return {f.name: plain_value(getattr(config, f.name)) for f in dataclasses.fields(config)}
