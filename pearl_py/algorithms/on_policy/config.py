"""Hyperparameters shared by every on-policy algorithm (names and defaults of Stable-Baselines3).

A value left out takes SB3's default for the algorithm (``PPOConfig``, ``A2CConfig``
override some); ``learning_rate`` (and PPO's ``clip_range``) accept rl-baselines3-zoo's
``lin_<number>`` schedules. The policy keys (``net_arch``, ``activation_fn``,
``ortho_init``, ``log_std_init``) are those SB3 takes in ``policy_kwargs``.

Example::

    >>> cfg = build(OnPolicyConfig, {"n_steps": 32, "n_envs": 8, "learning_rate": "lin_0.001"})
    >>> cfg.rollout_size, cfg.learning_rate(0.5)
    (256, 0.0005)
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from pearl_py.algorithms.obs_config import (
    env_kwargs_param,
    features_extractor_param,
    frame_stack_param,
    normalize_param,
)
from pearl_py.envs import EnvKwargs
from pearl_py.envs.normalize import Normalize
from pearl_py.algorithms.on_policy.schedules import Schedule
from pearl_py.config.fields import param
from pearl_py.errors import ConfigError


ACTIVATION_NAMES = ("tanh", "relu", "elu", "gelu", "leaky_relu", "silu")
"""``activation_fn`` values: torch's nn.Tanh, nn.ReLU, nn.ELU, nn.GELU, nn.LeakyReLU, nn.SiLU (SB3's names)."""


@dataclass(frozen=True)
class OnPolicyConfig:
    """Collect ``n_steps`` with each of ``n_envs`` envs, then learn on that rollout and discard it."""

    policy: str = param("MlpPolicy", "Policy class, as the zoo names it (MlpPolicy: separate pi and vf MLPs).",
                        choices=("MlpPolicy",))
    learning_rate: Schedule = param(Schedule(3e-4), "Optimizer step size: a number or `lin_<number>` (linear to 0).",
                                    low=0.0, low_open=True)
    n_steps: int = param(2048, "Steps collected with each env per rollout.", low=1)
    gamma: float = param(0.99, "Discount factor.", low=0.0, high=1.0)
    gae_lambda: float = param(0.95, "GAE(lambda) bias-variance trade-off (1: Monte-Carlo returns).",
                              low=0.0, high=1.0)
    ent_coef: float = param(0.0, "Weight of the entropy bonus in the loss.", low=0.0)
    vf_coef: float = param(0.5, "Weight of the value loss in the loss.", low=0.0)
    max_grad_norm: float = param(0.5, "Clip gradients to this global L2 norm.", low=0.0, low_open=True)
    normalize_advantage: bool = param(True, "Normalize advantages to mean 0, std 1 per minibatch.")
    n_envs: int = param(1, "Environments stepped together.", low=1, high=4096)
    net_arch: tuple[int, ...] = param((64, 64), "Hidden layer widths of the policy and of the value network "
                                      "(separate networks of the same widths).", low=1)
    activation_fn: str = param("tanh", "Activation of the hidden layers (tanh and relu run in the fused kernels).",
                               choices=ACTIVATION_NAMES)
    ortho_init: bool = param(True, "Orthogonal initialization (gains sqrt(2) hidden, 0.01 policy head, "
                             "1 value head), biases 0.")
    log_std_init: float = param(0.0, "Initial log standard deviation of the Gaussian policy (Box actions).")
    use_sde: bool = param(False, "Generalized state-dependent exploration (gSDE, Box actions): the Gaussian's noise is "
                          "the policy's last hidden features times an exploration matrix held between resamples.")
    sde_sample_freq: int = param(-1, "With use_sde: draw a new exploration matrix every this many steps (-1: only "
                                 "at each rollout's start).", low=-1)
    adam_eps: float = param(1e-5, "Adam epsilon (SB3's actor-critic policies use 1e-5).", low=0.0, low_open=True)
    features_extractor: str = features_extractor_param()
    frame_stack: int | None = frame_stack_param()
    env_kwargs: EnvKwargs = env_kwargs_param()
    normalize: Normalize = normalize_param()

    def __post_init__(self) -> None:
        check_sde_sample_freq(self.use_sde, self.sde_sample_freq)
        if self.normalize_advantage and self.rollout_size < 2:
            raise ConfigError("normalize_advantage needs n_steps * n_envs > 1 (the std of one advantage is "
                              f"undefined), got {self.n_steps} * {self.n_envs}", key="n_steps")

    @property
    def rollout_size(self) -> int:
        """Transitions per rollout: ``n_steps * n_envs``."""
        return self.n_steps * self.n_envs

    @property
    def epochs_per_rollout(self) -> int:
        """Passes over each rollout (1: A2C's single gradient step)."""
        return 1

    @property
    def minibatch_size(self) -> int:
        """Transitions per gradient step (the whole rollout unless a subclass sets ``batch_size``)."""
        return self.rollout_size

    @property
    def minibatches_per_epoch(self) -> int:
        """Gradient steps per pass; the last minibatch is smaller when it does not divide the rollout (as SB3)."""
        return math.ceil(self.rollout_size / min(self.minibatch_size, self.rollout_size))


def check_sde_sample_freq(use_sde: bool, sde_sample_freq: int) -> None:
    """``sde_sample_freq`` other than -1 means nothing without gSDE (PPO, A2C and SAC): a :class:`ConfigError`."""
    if sde_sample_freq != -1 and not use_sde:
        raise ConfigError(f"sde_sample_freq {sde_sample_freq} needs use_sde: true", key="sde_sample_freq")
