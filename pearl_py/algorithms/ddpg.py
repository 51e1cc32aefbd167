"""DDPG (Lillicrap et al. 2016) with Gaussian or Ornstein-Uhlenbeck action noise and soft target updates.

Defaults equal Stable-Baselines3's DDPG (batch_size 256, tau 0.005, learning_rate 1e-3,
net_arch [400, 300], train_freq 1, no action noise: set ``noise_std`` as the zoo does); the
critic step comes before the actor step, as in SB3. ``noise_type: ornstein-uhlenbeck`` makes the noise of
``noise_std`` a per-env Ornstein-Uhlenbeck process
(:class:`~pearl_py.algorithms.off_policy.action_noise.OrnsteinUhlenbeckNoise`) that the collector adds to
every action, warm-up included (SB3 adds its action noise to the warm-up's random actions too); ``act``
then returns the actor's action.

Example::

    >>> algo = pearl.DDPG("Pendulum-v1", gamma=0.98, learning_starts=10_000, noise_std=0.1)
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from pearl_py.algorithms.cnn import critic, obs_mlp
from pearl_py.algorithms.losses import td_target, weighted_mean
from pearl_py.algorithms.networks import Networks
from pearl_py.algorithms.off_policy.action_noise import OrnsteinUhlenbeckNoise
from pearl_py.algorithms.off_policy.base import Algorithm, Loss
from pearl_py.algorithms.off_policy.config import OffPolicyConfig
from pearl_py.algorithms.off_policy.learner import TensorBatch
from pearl_py.algorithms.on_policy.schedules import Schedule
from pearl_py.config.fields import param


NOISE_TYPES = ("normal", "ornstein-uhlenbeck")
"""``noise_type`` values (the zoo's names)."""


@dataclass(frozen=True)
class DDPGConfig(OffPolicyConfig):
    """DDPG hyperparameters (rl-baselines3-zoo names; defaults are SB3's)."""

    learning_rate: Schedule = param(Schedule(1e-3), "Adam step size of actor and critic: a number or "
                                    "`lin_<number>`.", low=0.0, low_open=True)
    batch_size: int = param(256, "Transitions per gradient step.", low=1)
    tau: float = param(0.005, "Target-network Polyak coefficient.", low=0.0, low_open=True, high=1.0)
    train_freq: int = param(1, "Vector-env steps between training rounds.", low=1)
    target_update_interval: int = param(1, "Gradient steps between soft target updates.", low=1)
    net_arch: tuple[int, ...] = param((400, 300), "Hidden layer widths of actor and critic.", low=1)
    noise_std: float = param(0.0, "Std of the Gaussian exploration noise, in [-1, 1] action units "
                             "(0: none, as SB3's action_noise=None; the zoo sets 0.1).", low=0.0)
    noise_type: str = param("normal", "Exploration noise of noise_std: independent Gaussian draws (normal) or a "
                            "per-env Ornstein-Uhlenbeck process (theta 0.15, dt 0.01, reset at episode ends).",
                            choices=NOISE_TYPES)


class DDPG(Algorithm):
    """Deterministic policy gradient for continuous actions: actor, critic, and their targets."""

    name = "ddpg"
    Config = DDPGConfig
    discrete_actions = False
    target_networks = ("actor", "critic")
    acting_networks = ("actor",)
    acting_form = "deterministic_actor_noise"
    twin_critics = False
    """Whether the critic is a pair (TD3's)."""

    def build_networks(self) -> dict[str, nn.Module]:
        spec, arch, extractor = self.spec, self.config.net_arch, self.config.features_extractor
        return {
            "actor": obs_mlp(spec, extractor, arch, spec.action_dim, output_activation=nn.Tanh),
            "critic": critic(spec, extractor, arch, twin=self.twin_critics),
        }

    def losses(self) -> Sequence[Loss]:
        return [Loss("critic", trains="critic", fn=self._critic_loss, form="ddpg_critic"),
                Loss("actor", trains="actor", fn=self._actor_loss, form="dpg_actor")]

    def _critic_loss(self, nets: Networks, batch: TensorBatch) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.no_grad():
            next_value = nets.target.critic(batch.next_obs, nets.target.actor(batch.next_obs))
            target = td_target(batch, next_value, self.config.gamma)
        q = nets.online.critic(batch.obs, batch.actions)
        return weighted_mean(F.mse_loss(q, target, reduction="none"), batch), q - target

    def _actor_loss(self, nets: Networks, batch: TensorBatch) -> tuple[torch.Tensor, None]:
        return -nets.online.critic(batch.obs, nets.online.actor(batch.obs)).mean(), None

    @property
    def gaussian_noise_std(self) -> float:
        """The std of the Gaussian noise ``act`` adds (0 with Ornstein-Uhlenbeck noise, which the collector adds)."""
        return self.config.noise_std if self.config.noise_type == "normal" else 0.0

    def action_noise(self, seed: int, envs: range) -> OrnsteinUhlenbeckNoise | None:
        if self.config.noise_type != "ornstein-uhlenbeck" or self.config.noise_std == 0:
            return None
        return OrnsteinUhlenbeckNoise(self.config.noise_std, self.spec.action_dim, seed, envs)

    def act(self, nets: Networks, obs: torch.Tensor, *, explore: bool, progress: float) -> torch.Tensor:
        action = nets.online.actor(obs)
        if explore and self.gaussian_noise_std > 0:
            action = (action + self.gaussian_noise_std * torch.randn_like(action)).clamp(-1.0, 1.0)
        return action
