"""The training schedule a simulation plays: rounds of updates, the look-ahead window, syncs.

The parallel runtime's schedule (:class:`pearl_py.protocol.schedule.TrainSchedule`): after
every ``train_freq``-th vector step, once more than ``learning_starts`` transitions are
stored, the learner runs ``gradient_steps`` updates;
actors may run ``lookahead_rounds`` rounds of transitions ahead of the replay, within
``max_policy_lag`` updates of the serial order; built from an algorithm's config.

Example::

    >>> s = SimSchedule.from_config(pearl.DQN("CartPole-v1", train_freq=256, gradient_steps=128).config,
    ...                             total_steps=2048, learning_starts=0)
    >>> s.train_freq, s.gradient_steps, s.updates_until(s.vector_steps)
    (256, 128, 1024)
"""
from __future__ import annotations

from dataclasses import dataclass

from pearl_py.protocol.schedule import DEFAULT_SYNC_EVERY, TrainSchedule


@dataclass(frozen=True)
class SimSchedule(TrainSchedule):
    """:class:`TrainSchedule` plus how often parameters are published; rounds on vector steps."""

    sync_every: int = DEFAULT_SYNC_EVERY
    """Updates between two parameter publications (the parallel runtime's, as the protocol's ``param_sync`` rate)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.sync_every < 1:
            raise ValueError(f"schedule: sync_every must be >= 1, got {self.sync_every}")

    @property
    def round_transitions(self) -> int:
        return self.train_freq * self.n_envs

    def to_dict(self) -> dict[str, int]:
        return {"n_envs": self.n_envs, "train_freq": self.train_freq, "gradient_steps": self.gradient_steps,
                "total_steps": self.total_steps, "learning_starts": self.learning_starts,
                "lookahead_rounds": self.lookahead_rounds, "max_policy_lag": self.max_policy_lag,
                "sync_every": self.sync_every}
