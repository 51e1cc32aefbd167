"""The training schedule a simulation plays: rounds of updates, the look-ahead window, syncs.

The parallel runtime's schedule (:class:`pearl_py.protocol.schedule.TrainSchedule`): after
every ``train_freq``-th vector step, once more than ``learning_starts`` transitions are
stored, the learner runs ``gradient_steps`` updates;
actors may run ``lookahead_rounds`` rounds of transitions ahead of the replay, within
``max_policy_lag`` updates of the serial order. From a
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

from pearl_py.protocol.kernel import ENV_STEP, LEARNER_UPDATE, PARAM_SYNC
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

    @classmethod
    def from_rates(cls, rates: Mapping[str, float], total_steps: int, **overrides: int) -> SimSchedule:
        """From calls per transition: ``env_step`` = 1/n_envs, ``param_sync`` = one per round."""
        n_envs = max(round(1.0 / rates[ENV_STEP]), 1)
        per_round = rates.get(PARAM_SYNC) or rates[LEARNER_UPDATE]
        train_freq = max(round(1.0 / (per_round * n_envs)), 1)
        gradient_steps = round(rates[LEARNER_UPDATE] / per_round)
        fields = dict(n_envs=n_envs, train_freq=train_freq, gradient_steps=gradient_steps, learning_starts=0)
        return cls(total_steps=total_steps, **{**fields, **overrides})

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
