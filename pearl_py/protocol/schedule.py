"""The training schedule: which updates the data allows, and how far actors may run ahead.

Shared by the parallel runtime's rate limiter, the Ray backend and the simulator.

The serial executor trains ``gradient_steps`` times after every ``train_freq``-th vector
step once more than ``learning_starts`` transitions are stored. The parallel learner
replays that schedule on *virtual* vector steps (every ``n_envs`` inserted transitions),
whichever actor they came from, so the update-to-data ratio and the update count are the
serial run's exactly (Reverb's samples-per-insert limiter with zero tolerance on the
learner side). Actors may run ``window`` transitions ahead of what the learner has
consumed (plus at most one vector step per other actor that checked at the same time):
they collect the next round while the learner trains. Before the first training step
they run freely.

Example::

    >>> s = TrainSchedule(n_envs=1, train_freq=256, gradient_steps=128, learning_starts=1000,
    ...                   total_steps=50_000)
    >>> s.vector_steps, s.next_round(0), s.total_updates
    (50000, 1024, 24576)
    >>> s.window, s.actor_limit(0), s.actor_limit(1024)
    (256, 1024, 1280)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pearl_py.algorithms.config import OffPolicyConfig


@dataclass(frozen=True)
class TrainSchedule:
    """Rounds of updates on virtual vector steps; quotas and the look-ahead window of actors."""

    n_envs: int
    train_freq: int
    gradient_steps: int
    learning_starts: int
    total_steps: int
    lookahead_rounds: int = 1

    def __post_init__(self) -> None:
        for name in ("n_envs", "train_freq", "total_steps", "lookahead_rounds"):
            if getattr(self, name) < 1:
                raise ValueError(f"schedule: {name} must be >= 1, got {getattr(self, name)}")

    @classmethod
    def from_config(cls, cfg: OffPolicyConfig, total_steps: int, **overrides: int) -> TrainSchedule:
        """From an algorithm config (``n_envs``, ``train_freq``, ``gradient_steps``, ``learning_starts``)."""
        fields = dict(n_envs=cfg.n_envs, train_freq=cfg.train_freq, gradient_steps=cfg.gradient_steps,
                      learning_starts=cfg.learning_starts)
        return cls(total_steps=total_steps, **{**fields, **overrides})

    @property
    def vector_steps(self) -> int:
        """Vector steps of the run (the serial loop's count; the last one may overshoot total_steps)."""
        return -(-self.total_steps // self.n_envs)

    @property
    def env_steps(self) -> int:
        return self.vector_steps * self.n_envs

    def is_round(self, step: int) -> bool:
        """Whether the serial loop trains right after vector step ``step`` (1-based)."""
        return step % self.train_freq == 0 and step * self.n_envs > self.learning_starts

    def next_round(self, step: int) -> int:
        """The first training vector step after ``step``, or ``vector_steps`` when none is left."""
        candidate = (step // self.train_freq + 1) * self.train_freq
        while candidate <= self.vector_steps and not self.is_round(candidate):
            candidate += self.train_freq
        return min(candidate, self.vector_steps)

    def updates_until(self, step: int) -> int:
        """Gradient steps the serial loop has taken after vector step ``step``."""
        first = self.learning_starts // self.n_envs + 1  # first step with step * n_envs > learning_starts
        first = -(-first // self.train_freq) * self.train_freq
        if step < first:
            return 0
        return ((step - first) // self.train_freq + 1) * self.gradient_steps

    @property
    def total_updates(self) -> int:
        return self.updates_until(self.vector_steps)

    @property
    def window(self) -> int:
        """Transitions actors may collect beyond those the learner has consumed."""
        return self.lookahead_rounds * self.train_freq * self.n_envs

    def actor_limit(self, consumed: int) -> int:
        """Transitions all actors together may have produced once the learner consumed ``consumed``.

        ``consumed + window``, but never less than the first training step's transitions:
        before learning starts nothing waits on the learner, so actors run freely.
        """
        first = self.next_round(self.learning_starts // self.n_envs)
        return max(consumed + self.window, first * self.n_envs)

    def quotas(self, actors: int, done: int = 0) -> list[int]:
        """Vector steps each of ``actors`` actors still runs once ``done`` vector steps are consumed."""
        left = self.vector_steps - done
        return [left // actors + (i < left % actors) for i in range(actors)]
