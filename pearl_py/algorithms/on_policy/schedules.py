"""Hyperparameter schedules over ``progress_remaining`` (1 at the start of training, 0 at the end).

A config value is a number (constant) or ``lin_<number>``, rl-baselines3-zoo's linear
schedule: ``lin_0.001`` is ``0.001 * progress_remaining``, decaying to 0 at the end of
training. Stable-Baselines3 evaluates them once per rollout, after collecting it, with
``progress_remaining = 1 - env_steps / total_steps``.

Example::

    >>> Schedule.from_config("lin_0.001")(0.25)
    0.00025
    >>> Schedule.from_config(3e-4)(0.25), str(Schedule.from_config("lin_0.2"))
    (0.0003, 'lin_0.2')
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

_NUMBER = r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?"
_CONSTANT = re.compile(rf"^{_NUMBER}$")
_LINEAR = re.compile(rf"^lin_({_NUMBER})$")


@dataclass(frozen=True)
class Schedule:
    """A constant, or a linear decay from ``initial`` (``progress_remaining`` 1) to 0 (``progress_remaining`` 0)."""

    initial: float
    linear: bool = False

    config_type_name: ClassVar[str] = "number or schedule"

    def __call__(self, progress_remaining: float) -> float:
        return self.initial * progress_remaining if self.linear else self.initial

    @property
    def config_number(self) -> float:
        """The number a config's ``low``/``high`` bounds check: the value at the start."""
        return self.initial

    @classmethod
    def from_config(cls, value: Any) -> Schedule:
        """Parse a config value: a number (also as text, "3e-4") or ``lin_<number>``; ``ValueError`` otherwise."""
        if isinstance(value, Schedule):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return cls(float(value))
        if isinstance(value, str):
            text = value.strip()
            if _CONSTANT.match(text):
                return cls(float(text))
            linear = _LINEAR.match(text)
            if linear:
                return cls(float(linear.group(1)), linear=True)
        raise ValueError(f"expected a number or a linear schedule such as lin_0.001, got "
                         f"{type(value).__name__} {value!r}")

    def to_config(self) -> float | str:
        """The config value :meth:`from_config` reads back exactly: the number, or ``lin_<number>`` (full precision)."""
        return f"lin_{self.initial!r}" if self.linear else self.initial

    def __str__(self) -> str:
        return f"lin_{self.initial:g}" if self.linear else f"{self.initial:g}"
