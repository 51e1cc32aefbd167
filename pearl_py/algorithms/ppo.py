"""PPO (Schulman et al. 2017): the clipped surrogate objective, several epochs of minibatches per rollout.

Defaults equal Stable-Baselines3's PPO (``n_steps`` 2048, ``batch_size`` 64, ``n_epochs`` 10,
``clip_range`` 0.2, Adam with eps 1e-5, ...); ``learning_rate``, ``clip_range`` and
``clip_range_vf`` take rl-baselines3-zoo's ``lin_<number>`` schedules.

Example::

    >>> algo = pearl.PPO("CartPole-v1", n_envs=8, n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98,
    ...                  n_epochs=20, learning_rate="lin_0.001", clip_range="lin_0.2")
    >>> result = pearl.train(algo, total_steps=100_000, seed=0)
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from pearl_py.algorithms.networks import Networks
from pearl_py.algorithms.on_policy.actor_critic import ActorCriticAlgorithm
from pearl_py.algorithms.on_policy.base import LossTerms
from pearl_py.algorithms.on_policy.config import OnPolicyConfig
from pearl_py.algorithms.on_policy.learner import RolloutBatch
from pearl_py.algorithms.on_policy.schedules import Schedule
from pearl_py.config.fields import param
from pearl_py.errors import ConfigError


@dataclass(frozen=True)
class PPOConfig(OnPolicyConfig):
    """PPO hyperparameters (SB3 names and defaults)."""

    batch_size: int = param(64, "Transitions per minibatch (the last of an epoch holds the remainder).", low=1)
    n_epochs: int = param(10, "Passes over each rollout.", low=1)
    clip_range: Schedule = param(Schedule(0.2), "Clip of the probability ratio: a number or `lin_<number>`.",
                                 low=0.0, low_open=True)
    clip_range_vf: Schedule | None = param(None, "Clip of the value change around the rollout's values "
                                           "(null: no clip; depends on the reward scale).", low=0.0, low_open=True)
    target_kl: float | None = param(None, "Stop a rollout's epochs once a minibatch's approximate KL exceeds "
                                    "1.5 x this (null: never).", low=0.0, low_open=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.normalize_advantage and self.batch_size < 2:
            raise ConfigError("normalize_advantage needs batch_size > 1 (the std of one advantage is undefined), "
                              f"got {self.batch_size}", key="batch_size")

    @property
    def epochs_per_rollout(self) -> int:
        return self.n_epochs

    @property
    def minibatch_size(self) -> int:
        return self.batch_size


class PPO(ActorCriticAlgorithm):
    """Proximal policy optimization, discrete (categorical) or continuous (diagonal Gaussian) actions."""

    name = "ppo"
    Config = PPOConfig

    def loss(self, nets: Networks, batch: RolloutBatch, *, progress_remaining: float) -> LossTerms:
        cfg = self.config
        clip = cfg.clip_range(progress_remaining)
        values, log_probs, entropy = nets.online.policy.evaluate(batch.obs, batch.actions)
        ratio = torch.exp(log_probs - batch.old_log_probs)
        surrogate = torch.min(batch.advantages * ratio, batch.advantages * torch.clamp(ratio, 1 - clip, 1 + clip))
        if cfg.clip_range_vf is not None:
            vf_clip = cfg.clip_range_vf(progress_remaining)
            values = batch.old_values + torch.clamp(values - batch.old_values, -vf_clip, vf_clip)
        with torch.no_grad():
            clip_fraction = ((ratio - 1).abs() > clip).float().mean()
        return LossTerms(policy_loss=-surrogate.mean(), value_loss=F.mse_loss(values, batch.returns),
                         entropy=entropy.mean(), log_probs=log_probs, clip_fraction=clip_fraction)

    def stop_early(self, approx_kl: torch.Tensor) -> bool:
        target = self.config.target_kl
        return target is not None and float(approx_kl) > 1.5 * target
