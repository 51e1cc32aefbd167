"""TD3 (Fujimoto et al. 2018): DDPG with twin critics, target policy smoothing and a delayed actor.

Defaults equal Stable-Baselines3's TD3 (those of DDPG, which SB3 builds as a TD3 with
``policy_delay=1`` and no smoothing, plus ``policy_delay`` 2, ``target_policy_noise`` 0.2,
``target_noise_clip`` 0.5). As in SB3, the critic loss is the sum of both critics' MSEs,
the actor maximises the first critic, and the targets move with each actor step (every
``policy_delay`` gradient steps) unless ``target_update_interval`` says otherwise.

Example::

    >>> algo = pearl.TD3("Pendulum-v1", gamma=0.98, learning_starts=10_000, noise_std=0.1)
    >>> [(loss.name, loss.every) for loss in algo.losses()]
    [('critic', 1), ('actor', 2)]
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from pearl_py.algorithms.ddpg import DDPG, DDPGConfig
from pearl_py.algorithms.losses import td_target, weighted_mean
from pearl_py.algorithms.networks import Networks
from pearl_py.algorithms.off_policy.base import Loss
from pearl_py.algorithms.off_policy.learner import TensorBatch
from pearl_py.config.fields import param


@dataclass(frozen=True)
class TD3Config(DDPGConfig):
    """TD3 hyperparameters (rl-baselines3-zoo names; defaults are SB3's)."""

    target_update_interval: int | None = param(
        None, "Gradient steps between soft target updates (null: with every actor step, i.e. every "
        "policy_delay steps, as SB3's TD3).", low=1)
    policy_delay: int = param(2, "Critic steps per actor step: the actor is trained every policy_delay "
                              "gradient steps.", low=1)
    target_policy_noise: float = param(0.2, "Std of the Gaussian noise added to the target actor's action "
                                       "(target policy smoothing), in [-1, 1] action units.", low=0.0)
    target_noise_clip: float = param(0.5, "The smoothing noise is clipped to [-target_noise_clip, "
                                     "target_noise_clip].", low=0.0)

    @property
    def target_interval(self) -> int:
        """Gradient steps between soft target updates, ``policy_delay`` when not set."""
        return self.target_update_interval or self.policy_delay


class TD3(DDPG):
    """DDPG's tanh actor and noisy acting; twin critics, smoothed targets, delayed actor and targets."""

    name = "td3"
    Config = TD3Config
    twin_critics = True

    def losses(self) -> Sequence[Loss]:
        return [Loss("critic", trains="critic", fn=self._critic_loss, form="td3_critic"),
                Loss("actor", trains="actor", fn=self._actor_loss, every=self.config.policy_delay,
                     form="td3_actor")]

    def targets_due(self, gradient_steps: int) -> bool:
        return gradient_steps % self.config.target_interval == 0

    def _critic_loss(self, nets: Networks, batch: TensorBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """Both critics regress on ``r + gamma (1 - done) min(Q1_t, Q2_t)(s', clip(pi_t(s') + noise))``."""
        cfg = self.config
        with torch.no_grad():
            next_action = nets.target.actor(batch.next_obs)
            noise = (torch.randn_like(next_action) * cfg.target_policy_noise).clamp(
                -cfg.target_noise_clip, cfg.target_noise_clip)
            next_q = torch.min(*nets.target.critic(batch.next_obs, (next_action + noise).clamp(-1.0, 1.0)))
            target = td_target(batch, next_q, cfg.gamma)
        q1, q2 = nets.online.critic(batch.obs, batch.actions)
        per_item = F.mse_loss(q1, target, reduction="none") + F.mse_loss(q2, target, reduction="none")
        return weighted_mean(per_item, batch), q1 - target

    def _actor_loss(self, nets: Networks, batch: TensorBatch) -> tuple[torch.Tensor, None]:
        """``-Q1(s, pi(s))``: the deterministic policy gradient through the first critic only."""
        return -nets.online.critic.q1(batch.obs, nets.online.actor(batch.obs)).mean(), None
