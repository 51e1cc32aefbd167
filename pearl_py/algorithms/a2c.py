"""A2C (Mnih et al. 2016, synchronous): one gradient step on each whole rollout.

Defaults equal Stable-Baselines3's A2C (``n_steps`` 5, ``learning_rate`` 7e-4, ``gae_lambda`` 1,
no advantage normalization, RMSprop with alpha 0.99 and eps 1e-5).

Example::

    >>> algo = pearl.A2C("CartPole-v1", n_envs=8)
    >>> result = pearl.train(algo, total_steps=500_000, seed=0)
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from pearl_py.algorithms.networks import Networks
from pearl_py.algorithms.on_policy.actor_critic import ActorCriticAlgorithm
from pearl_py.algorithms.on_policy.base import LossTerms
from pearl_py.algorithms.on_policy.config import OnPolicyConfig
from pearl_py.algorithms.on_policy.learner import RolloutBatch
from pearl_py.algorithms.on_policy.schedules import Schedule
from pearl_py.algorithms.optimizers import RMSprop
from pearl_py.config.fields import param

RMSPROP_ALPHA = 0.99
"""RMSprop's smoothing constant in SB3's A2C."""


@dataclass(frozen=True)
class A2CConfig(OnPolicyConfig):
    """A2C hyperparameters (SB3 names and defaults)."""

    learning_rate: Schedule = param(Schedule(7e-4), "Optimizer step size: a number or `lin_<number>` (linear to 0).",
                                    low=0.0, low_open=True)
    n_steps: int = param(5, "Steps collected with each env per rollout (one gradient step each).", low=1)
    gae_lambda: float = param(1.0, "GAE(lambda) bias-variance trade-off (1: Monte-Carlo returns).",
                              low=0.0, high=1.0)
    normalize_advantage: bool = param(False, "Normalize the rollout's advantages to mean 0, std 1.")
    use_rms_prop: bool = param(True, "RMSprop (alpha 0.99) as the original A2C; false: Adam with adam_eps.")
    rms_prop_eps: float = param(1e-5, "RMSprop epsilon.", low=0.0, low_open=True)


class A2C(ActorCriticAlgorithm):
    """Advantage actor-critic, discrete (categorical) or continuous (diagonal Gaussian) actions."""

    name = "a2c"
    Config = A2CConfig
    loss_form = "a2c_pg"

    def loss(self, nets: Networks, batch: RolloutBatch, *, progress_remaining: float) -> LossTerms:
        values, log_probs, entropy = nets.online.policy.evaluate(batch.obs, batch.actions)
        return LossTerms(policy_loss=-(batch.advantages * log_probs).mean(),
                         value_loss=F.mse_loss(values, batch.returns), entropy=entropy.mean(), log_probs=log_probs)

    def make_optimizer(self, parameters: Iterable[nn.Parameter], learning_rate: float) -> torch.optim.Optimizer:
        cfg = self.config
        if cfg.use_rms_prop:
            return RMSprop(parameters, lr=learning_rate, alpha=RMSPROP_ALPHA, eps=cfg.rms_prop_eps,
                                       weight_decay=0.0)
        return super().make_optimizer(parameters, learning_rate)
