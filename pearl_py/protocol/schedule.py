"""The training schedules: which updates the data allows, and how far actors may run ahead.

Shared by the parallel runtime's rate limiter, the Ray backend and the simulator. :class:`TrainSchedule` is the
off-policy family's (:class:`SimSchedule`: as a simulation plays it, with its parameter publications);
:class:`RolloutSchedule` the on-policy family's synchronous one. The learner's update count is the serial run's;
actors run up to ``window`` transitions ahead, on parameters at most ``max_policy_lag`` updates staler than the
serial run's (docs/runtime.md, "The rate limiter").

Example::

    >>> s = TrainSchedule(n_envs=1, train_freq=256, gradient_steps=128, learning_starts=1000,
    ...                   total_steps=50_000)                    # max_policy_lag 4 by default
    >>> s.vector_steps, s.next_round(0), s.total_updates
    (50000, 1024, 24576)
    >>> s.window, s.actor_limit(0), s.actor_limit(1024, updates_done=0), s.actor_limit(1024, updates_done=124)
    (256, 1024, 1024, 1280)
    >>> s.overlap
    0.03125
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

DEFAULT_SYNC_EVERY = 4
"""Updates between two parameter publications to the actors (the plan's K)."""
DEFAULT_POLICY_LAG = DEFAULT_SYNC_EVERY
"""Default ``max_policy_lag``: actors act on parameters at most one publication interval old."""

if TYPE_CHECKING:
    from pearl_py.algorithms.off_policy.config import OffPolicyConfig
    from pearl_py.algorithms.on_policy.config import OnPolicyConfig


def _at_least_one(schedule: object, *names: str) -> None:
    for name in names:
        if getattr(schedule, name) < 1:
            raise ValueError(f"schedule: {name} must be >= 1, got {getattr(schedule, name)}")


def _shares(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` near-equal whole shares, larger ones first."""
    return [total // parts + (i < total % parts) for i in range(parts)]


@dataclass(frozen=True)
class TrainSchedule:
    """Rounds of updates on virtual vector steps; quotas and the look-ahead window of actors."""

    n_envs: int
    train_freq: int
    gradient_steps: int
    learning_starts: int
    total_steps: int
    lookahead_rounds: int = 1
    max_policy_lag: int | None = DEFAULT_POLICY_LAG
    """Updates the acting parameters may trail the serial run's (None: only the window binds)."""

    def __post_init__(self) -> None:
        _at_least_one(self, "n_envs", "train_freq", "total_steps", "lookahead_rounds")
        if self.max_policy_lag is not None and self.max_policy_lag < 0:
            raise ValueError(f"schedule: max_policy_lag must be >= 0 or None, got {self.max_policy_lag}")

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
        # rounds are the multiples of train_freq from first_round_step on (O(1): the learner asks every step)
        candidate = max((step // self.train_freq + 1) * self.train_freq, self.first_round_step)
        return min(candidate, self.vector_steps)

    @property
    def first_round_step(self) -> int:
        """The first training vector step: a multiple of ``train_freq`` with ``step * n_envs > learning_starts``."""
        first = self.learning_starts // self.n_envs + 1
        return -(-first // self.train_freq) * self.train_freq

    def updates_until(self, step: int) -> int:
        """Gradient steps the serial loop has taken after vector step ``step``."""
        first = self.first_round_step
        if step < first:
            return 0
        return ((step - first) // self.train_freq + 1) * self.gradient_steps

    def policy_lag(self, env_steps: int, updates_held: int) -> int:
        """Updates the parameters ``updates_held`` trail the serial run's when acting after ``env_steps`` transitions."""
        return self.updates_until(env_steps // self.n_envs) - updates_held

    @property
    def total_updates(self) -> int:
        return self.updates_until(self.vector_steps)

    @property
    def window(self) -> int:
        """Transitions actors may collect beyond those the learner has consumed."""
        return self.lookahead_rounds * self.train_freq * self.n_envs

    @property
    def overlap(self) -> float:
        """Fraction of a training round during which actors may collect the next one."""
        if self.max_policy_lag is None or self.gradient_steps <= 0:
            return 1.0
        return min(self.max_policy_lag / self.gradient_steps, 1.0)

    def lag_steps(self, updates_done: int) -> int:
        """Vector steps actors may collect once the learner has done ``updates_done`` updates.

        The serial run collects step ``j`` after ``updates_until(j - 1)`` updates; allowed are
        the steps with ``updates_until(j - 1) <= updates_done + max_policy_lag``: every step up
        to the round step whose updates would exceed that.
        """
        if self.max_policy_lag is None or self.gradient_steps <= 0:
            return self.vector_steps
        rounds = (updates_done + self.max_policy_lag) // self.gradient_steps
        return min(self.first_round_step + rounds * self.train_freq, self.vector_steps)

    def params_needed(self, limit: int) -> int:
        """The fewest updates the published parameters must hold once actors may produce ``limit`` transitions:
        the last step that admits is collected, in the serial order, after ``updates_until(step - 1)`` updates,
        and may act on parameters at most ``max_policy_lag`` behind them (0 without a bound)."""
        if self.max_policy_lag is None:
            return 0
        return max(self.updates_until(limit // self.n_envs - 1) - self.max_policy_lag, 0)

    @functools.lru_cache(maxsize=64)  # a run derives its parallel protocol for each plan; schedules are small values
    def publications_per_update(self, sync_every: int, rounds: int = 8) -> float:
        """Parameter publications per update of the parallel runtime in the steady state (after the first round).

        The learner publishes every ``sync_every``-th update, and whenever the actors' limit rises to admit
        steps that need fresher parameters than the last published (:meth:`params_needed`). Worked out by
        playing the learner loop's order (insert a vector step, raise the limit, run the round's updates, each
        followed by a raise) over ``rounds`` rounds, with actors always at their limit."""
        first, n = self.first_round_step, self.n_envs
        play = dataclasses.replace(self, total_steps=(first + (rounds + 2) * self.train_freq) * n)
        state = {"limit": play.actor_limit(0, 0), "published": 0, "publishes": 0, "updates": 0}

        def publish() -> None:
            state["published"], state["publishes"] = state["updates"], state["publishes"] + 1

        def raise_limit(step: int) -> None:
            limit = play.actor_limit(step * n, state["updates"])
            if limit > state["limit"]:
                if state["published"] < play.params_needed(limit):
                    publish()
                state["limit"] = limit

        start = None
        for step in range(1, first + (rounds + 1) * self.train_freq):
            raise_limit(step)
            while state["updates"] < play.updates_until(step):
                state["updates"] += 1
                if state["updates"] % sync_every == 0:
                    publish()
                raise_limit(step)
            if start is None and step >= first + self.train_freq - 1:
                start = (state["publishes"], state["updates"])
        return (state["publishes"] - start[0]) / max(state["updates"] - start[1], 1)

    def actor_limit(self, consumed: int, updates_done: int = 0) -> int:
        """Transitions all actors together may have produced once the learner consumed ``consumed``
        and did ``updates_done`` updates.

        ``consumed + window``, capped by the policy lag (:meth:`lag_steps`), but never less
        than the first training step's transitions: before learning starts nothing waits on
        the learner, so actors run freely.
        """
        first = self.next_round(self.learning_starts // self.n_envs)
        ahead = min(consumed + self.window, self.lag_steps(updates_done) * self.n_envs)
        return max(ahead, first * self.n_envs)

    def quotas(self, actors: int, done: int = 0) -> list[int]:
        """Vector steps each of ``actors`` actors still runs once ``done`` vector steps are consumed."""
        return _shares(self.vector_steps - done, actors)


@dataclass(frozen=True)
class SimSchedule(TrainSchedule):
    """:class:`TrainSchedule` plus how often parameters are published: the schedule a simulation plays (rounds on
    vector steps).

    Example::

        >>> s = SimSchedule.from_config(pearl.DQN("CartPole-v1", train_freq=256, gradient_steps=128).config,
        ...                             total_steps=2048, learning_starts=0)
        >>> s.train_freq, s.gradient_steps, s.updates_until(s.vector_steps)
        (256, 128, 1024)
    """

    sync_every: int = DEFAULT_SYNC_EVERY
    """Updates between two parameter publications (the parallel runtime's, as the protocol's ``param_sync`` rate)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        _at_least_one(self, "sync_every")

    @property
    def round_transitions(self) -> int:
        return self.train_freq * self.n_envs

    def to_dict(self) -> dict[str, int]:
        return {"n_envs": self.n_envs, "train_freq": self.train_freq, "gradient_steps": self.gradient_steps,
                "total_steps": self.total_steps, "learning_starts": self.learning_starts,
                "lookahead_rounds": self.lookahead_rounds, "max_policy_lag": self.max_policy_lag,
                "sync_every": self.sync_every}


@dataclass(frozen=True)
class RolloutSchedule:
    """The synchronous on-policy schedule, shared by the serial and parallel executors, the simulator and the
    whole-run model (docs/runtime.md, "On-policy").

    Rollouts of ``n_steps`` vector steps of all ``n_envs`` envs are collected while fewer than ``total_steps`` env
    steps are done (the last may pass it), each then learnt on (``epochs`` x ``minibatches`` updates). Actor ``i``
    steps the envs of its :meth:`env_split` range, which keep their global indices: the rollout is the serial run's.

    Example::

        >>> s = RolloutSchedule(n_steps=32, n_envs=8, total_steps=100_000, epochs=20, minibatches=1)
        >>> s.rollout_size, s.rollouts, s.env_steps, s.total_updates
        (256, 391, 100096, 7820)
        >>> s.env_split(3), s.progress_remaining(391)
        ((range(0, 3), range(3, 6), range(6, 8)), 0.0)
    """

    n_steps: int
    n_envs: int
    total_steps: int
    epochs: int = 1
    minibatches: int = 1
    """Minibatch updates per epoch."""

    def __post_init__(self) -> None:
        _at_least_one(self, "n_steps", "n_envs", "total_steps", "epochs", "minibatches")

    @classmethod
    def from_config(cls, cfg: OnPolicyConfig, total_steps: int) -> RolloutSchedule:
        """From an on-policy config (``n_steps``, ``n_envs``, its epochs and minibatches per rollout)."""
        return cls(n_steps=cfg.n_steps, n_envs=cfg.n_envs, total_steps=total_steps, epochs=cfg.epochs_per_rollout,
                   minibatches=cfg.minibatches_per_epoch)

    @property
    def rollout_size(self) -> int:
        return self.n_steps * self.n_envs

    @property
    def rollouts(self) -> int:
        """Rollouts of the run: collected while fewer than ``total_steps`` env steps are done."""
        return -(-self.total_steps // self.rollout_size)

    @property
    def env_steps(self) -> int:
        return self.rollouts * self.rollout_size

    @property
    def vector_steps(self) -> int:
        return self.rollouts * self.n_steps

    @property
    def updates_per_rollout(self) -> int:
        """Minibatch updates per rollout (fewer when an algorithm stops a rollout's epochs early: PPO's target_kl)."""
        return self.epochs * self.minibatches

    @property
    def total_updates(self) -> int:
        return self.rollouts * self.updates_per_rollout

    def progress_remaining(self, rollouts_done: int) -> float:
        """The schedules' ``progress_remaining`` when learning on rollout number ``rollouts_done`` (1-based):
        ``1 - env_steps / total_steps`` after collecting it, held at 0 past the end."""
        return max(1.0 - rollouts_done * self.rollout_size / self.total_steps, 0.0)

    def env_split(self, actors: int) -> tuple[range, ...]:
        """The envs of each of ``actors`` actors: contiguous ranges of global env indices, larger shares first."""
        if not 1 <= actors <= self.n_envs:
            raise ValueError(f"schedule: {actors} actors cannot split {self.n_envs} envs (1..{self.n_envs} actors)")
        ends = list(itertools.accumulate(_shares(self.n_envs, actors), initial=0))
        return tuple(range(a, b) for a, b in itertools.pairwise(ends))
