"""The training schedule a simulation plays: rounds of updates, the look-ahead window, syncs.

The same schedule as the parallel runtime's rate limiter (``runtime.parallel.schedule``,
without importing torch): after every ``train_freq``-th vector step, once more than
``learning_starts`` transitions are stored, the learner runs ``gradient_steps`` updates;
actors may run ``lookahead_rounds`` rounds of transitions ahead of the replay. From a
config, or from a protocol's rates (calls per transition) when only a plan is known.

Example::

    >>> s = SimSchedule.from_rates({"env_step": 1.0, "learner_update": 0.5, "param_sync": 1 / 256},
    ...                            total_steps=2048)
    >>> s.train_freq, s.gradient_steps, s.updates_until(s.vector_steps)
    (256, 128, 1024)
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SimSchedule:
    """Rounds on vector steps (``n_envs`` transitions each); ``total_steps`` counts transitions."""

    n_envs: int
    train_freq: int
    gradient_steps: int
    total_steps: int
    learning_starts: int = 0
    lookahead_rounds: int = 1
    syncs_per_round: int = 1
    """Parameter publications per round (the protocol's ``param_sync`` rate: one per round)."""

    def __post_init__(self) -> None:
        for name in ("n_envs", "train_freq", "total_steps", "lookahead_rounds", "syncs_per_round"):
            if getattr(self, name) < 1:
                raise ValueError(f"schedule: {name} must be >= 1, got {getattr(self, name)}")

    @classmethod
    def from_config(cls, cfg: Any, total_steps: int, **overrides: int) -> SimSchedule:
        """From an algorithm config (``n_envs``, ``train_freq``, ``gradient_steps``, ``learning_starts``)."""
        fields = dict(n_envs=cfg.n_envs, train_freq=cfg.train_freq, gradient_steps=cfg.gradient_steps,
                      learning_starts=cfg.learning_starts)
        return cls(total_steps=total_steps, **{**fields, **overrides})

    @classmethod
    def from_rates(cls, rates: Mapping[str, float], total_steps: int, **overrides: int) -> SimSchedule:
        """From calls per transition: ``env_step`` = 1/n_envs, ``param_sync`` = one per round."""
        n_envs = max(round(1.0 / rates["env_step"]), 1)
        per_round = rates.get("param_sync") or rates["learner_update"]
        train_freq = max(round(1.0 / (per_round * n_envs)), 1)
        gradient_steps = round(rates["learner_update"] / per_round)
        return cls(n_envs=n_envs, train_freq=train_freq, gradient_steps=gradient_steps, total_steps=total_steps,
                   **overrides)

    @property
    def vector_steps(self) -> int:
        return -(-self.total_steps // self.n_envs)

    @property
    def round_transitions(self) -> int:
        return self.train_freq * self.n_envs

    @property
    def window(self) -> int:
        """Transitions actors may collect beyond those inserted into the replay."""
        return self.lookahead_rounds * self.round_transitions

    @property
    def sync_every(self) -> int:
        """Updates between two parameter publications."""
        return max(self.gradient_steps // self.syncs_per_round, 1)

    def is_round(self, step: int) -> bool:
        return step % self.train_freq == 0 and step * self.n_envs > self.learning_starts

    def next_round(self, step: int) -> int:
        """The first training vector step after ``step``, or ``vector_steps`` when none is left."""
        candidate = (step // self.train_freq + 1) * self.train_freq
        while candidate <= self.vector_steps and not self.is_round(candidate):
            candidate += self.train_freq
        return min(candidate, self.vector_steps)

    def updates_until(self, step: int) -> int:
        """Updates due once vector step ``step`` is in the replay (the serial loop's count)."""
        first = self.learning_starts // self.n_envs + 1
        first = -(-first // self.train_freq) * self.train_freq
        if step < first:
            return 0
        return ((step - first) // self.train_freq + 1) * self.gradient_steps

    @property
    def total_updates(self) -> int:
        return self.updates_until(self.vector_steps)

    def to_dict(self) -> dict[str, int]:
        return {"n_envs": self.n_envs, "train_freq": self.train_freq, "gradient_steps": self.gradient_steps,
                "total_steps": self.total_steps, "learning_starts": self.learning_starts,
                "lookahead_rounds": self.lookahead_rounds, "syncs_per_round": self.syncs_per_round}
