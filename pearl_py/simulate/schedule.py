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

from pearl_py.protocol.schedule import TrainSchedule


@dataclass(frozen=True)
class SimSchedule(TrainSchedule):
    """:class:`TrainSchedule` plus parameter publications per round; rounds on vector steps."""

    syncs_per_round: int = 1
    """Parameter publications per round (the protocol's ``param_sync`` rate: one per round)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.syncs_per_round < 1:
            raise ValueError(f"schedule: syncs_per_round must be >= 1, got {self.syncs_per_round}")

    @property
    def round_transitions(self) -> int:
        return self.train_freq * self.n_envs

    @property
    def sync_every(self) -> int:
        """Updates between two parameter publications."""
        return max(self.gradient_steps // self.syncs_per_round, 1)

    def to_dict(self) -> dict[str, int]:
        return {"n_envs": self.n_envs, "train_freq": self.train_freq, "gradient_steps": self.gradient_steps,
                "total_steps": self.total_steps, "learning_starts": self.learning_starts,
                "lookahead_rounds": self.lookahead_rounds, "max_policy_lag": self.max_policy_lag,
                "syncs_per_round": self.syncs_per_round}
