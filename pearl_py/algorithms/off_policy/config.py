"""Hyperparameters shared by every off-policy algorithm.

Names follow rl-baselines3-zoo; a value left out of a config takes
Stable-Baselines3's default for that algorithm (subclasses override defaults), so
side-by-side comparisons run the same algorithm.

Example::

    >>> cfg = DQNConfig(batch_size=64)
    >>> cfg.updates_per_transition
    0.25
    >>> DQNConfig(train_freq=4, n_envs=2, gradient_steps=-1).gradient_steps     # SB3's -1: one per env step
    8
"""
from __future__ import annotations

from dataclasses import dataclass

from pearl_py.algorithms.obs_config import (
    env_kwargs_param,
    features_extractor_param,
    frame_stack_param,
    normalize_param,
)
from pearl_py.algorithms.on_policy.schedules import Schedule
from pearl_py.envs import EnvKwargs
from pearl_py.envs.normalize import Normalize
from pearl_py.config.fields import param
from pearl_py.errors import ConfigError


@dataclass(frozen=True)
class OffPolicyConfig:
    """Replay-based training: collect with ``n_envs`` envs, learn every ``train_freq`` steps."""

    learning_rate: Schedule = param(Schedule(1e-4), "Adam step size: a number or `lin_<number>` (linear to 0, set "
                                    "once per training round).", low=0.0, low_open=True)
    batch_size: int = param(32, "Transitions per gradient step.", low=1)
    buffer_size: int = param(1_000_000, "Replay capacity in transitions.", low=1, high=100_000_000)
    learning_starts: int = param(100, "Env steps of uniform random actions before learning.", low=0)
    gamma: float = param(0.99, "Discount factor.", low=0.0, high=1.0)
    tau: float = param(1.0, "Target-network Polyak coefficient (1 = hard copy).", low=0.0, low_open=True,
                       high=1.0)
    train_freq: int = param(4, "Vector-env steps between training rounds.", low=1)
    gradient_steps: int = param(1, "Gradient steps per training round; -1: as many as the env steps a round "
                                "collects (train_freq * n_envs, SB3's meaning), resolved when the config is read.",
                                low=-1)
    target_update_interval: int = param(
        10_000, "Steps between target-network updates (unit set by the algorithm).", low=1)
    net_arch: tuple[int, ...] = param((64, 64), "Hidden layer widths of every network.", low=1)
    n_envs: int = param(1, "Environments stepped together per actor.", low=1, high=4096)
    adam_eps: float = param(1e-8, "Adam epsilon (torch's default, as SB3's DQN and DDPG; only its on-policy "
                            "policies set 1e-5).", low=0.0, low_open=True)
    max_grad_norm: float | None = param(None, "Clip gradients to this global L2 norm (null: no clip).",
                                        low=0.0, low_open=True)
    prioritized_replay: bool = param(False, "Prioritized experience replay (Schaul et al. 2016).")
    alpha: float = param(0.6, "Prioritization exponent.", low=0.0, high=1.0)
    beta: float = param(0.4, "Initial importance-sampling exponent.", low=0.0, high=1.0)
    beta_final: float = param(1.0, "Importance-sampling exponent at the end of training.", low=0.0, high=1.0)
    replay_fanout: int = param(16, "Sum-tree fanout of prioritized replay (16 as PEARL; measured fastest).", low=2, high=64)
    features_extractor: str = features_extractor_param()
    frame_stack: int | None = frame_stack_param()
    env_kwargs: EnvKwargs = env_kwargs_param()
    normalize: Normalize = normalize_param()

    def __post_init__(self) -> None:
        if not isinstance(self.learning_rate, Schedule):   # a number given to the dataclass itself, not a config
            object.__setattr__(self, "learning_rate", Schedule.from_config(self.learning_rate))
        if self.gradient_steps == -1:
            object.__setattr__(self, "gradient_steps", self.train_freq * self.n_envs)
        elif self.gradient_steps < 1:
            raise ConfigError(f"must be >= 1, or -1 (as many as the env steps of a round), got {self.gradient_steps}",
                              key="gradient_steps")
        if self.buffer_size < self.batch_size:
            raise ConfigError(f"{self.buffer_size} is less than batch_size {self.batch_size}: every batch would hold "
                              "the same transitions more than once; the replay must hold at least one batch",
                              key="buffer_size")

    @property
    def updates_per_transition(self) -> float:
        """Gradient steps per collected transition: the update-to-data ratio."""
        return self.gradient_steps / (self.train_freq * self.n_envs)
