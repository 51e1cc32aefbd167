"""DQN (Mnih et al. 2015) with the double-DQN option (van Hasselt et al. 2016).

Defaults equal Stable-Baselines3's DQN; the target network is updated every
``target_update_interval`` vector-env steps, as in SB3.

Example::

    >>> algo = pearl.DQN("CartPole-v1", learning_rate=2.3e-3, net_arch=[256, 256])
    >>> result = pearl.train(algo, total_steps=50_000, seed=0)
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from pearl_py.algorithms.cnn import obs_mlp
from pearl_py.algorithms.losses import td_target, weighted_mean
from pearl_py.algorithms.networks import Networks
from pearl_py.algorithms.off_policy.base import Algorithm, Loss
from pearl_py.algorithms.off_policy.config import OffPolicyConfig
from pearl_py.algorithms.off_policy.learner import TensorBatch
from pearl_py.algorithms.schedules import linear_schedule
from pearl_py.config.fields import param


@dataclass(frozen=True)
class DQNConfig(OffPolicyConfig):
    """DQN hyperparameters (rl-baselines3-zoo names; defaults are SB3's)."""

    target_update_interval: int = param(10_000, "Vector-env steps between target-network updates.", low=1)
    max_grad_norm: float | None = param(10.0, "Clip gradients to this global L2 norm (null: no clip).",
                                        low=0.0, low_open=True)
    exploration_fraction: float = param(0.1, "Fraction of training over which epsilon decays.",
                                        low=0.0, high=1.0)
    exploration_initial_eps: float = param(1.0, "Epsilon at the start of training.", low=0.0, high=1.0)
    exploration_final_eps: float = param(0.05, "Epsilon after the decay.", low=0.0, high=1.0)
    double_q: bool = param(False, "Double DQN: the online network picks the next action.")


class DQN(Algorithm):
    """Deep Q-network for discrete actions: one Q network, a target copy, epsilon-greedy acting."""

    name = "dqn"
    Config = DQNConfig
    discrete_actions = True
    target_networks = ("q",)
    acting_networks = ("q",)
    acting_form = "epsilon_greedy_q"
    target_update_unit = "env_steps"

    def build_networks(self) -> dict[str, torch.nn.Module]:
        cfg = self.config
        return {"q": obs_mlp(self.spec, cfg.features_extractor, cfg.net_arch, self.spec.action_dim)}

    def losses(self) -> Sequence[Loss]:
        return [Loss("q", trains="q", fn=self._q_loss, form="dqn_td")]

    def _q_loss(self, nets: Networks, batch: TensorBatch) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.no_grad():
            next_q = nets.target.q(batch.next_obs)
            if self.config.double_q:
                best = nets.online.q(batch.next_obs).argmax(dim=1, keepdim=True)
                next_value = next_q.gather(1, best).squeeze(1)
            else:
                next_value = next_q.max(dim=1).values
            target = td_target(batch, next_value, self.config.gamma)
        q = nets.online.q(batch.obs).gather(1, batch.actions.long().unsqueeze(1)).squeeze(1)
        loss = weighted_mean(F.smooth_l1_loss(q, target, reduction="none"), batch)
        return loss, q - target

    def epsilon(self, progress: float) -> float:
        cfg = self.config
        return linear_schedule(cfg.exploration_initial_eps, cfg.exploration_final_eps,
                               cfg.exploration_fraction, progress)

    def act(self, nets: Networks, obs: torch.Tensor, *, explore: bool, progress: float) -> torch.Tensor:
        greedy = nets.online.q(obs).argmax(dim=1)
        return self.epsilon_greedy(greedy, progress) if explore else greedy

    def epsilon_greedy(self, greedy: torch.Tensor, progress: float) -> torch.Tensor:
        """``greedy`` actions, each replaced by a uniform random one with probability ``epsilon(progress)``."""
        n = greedy.shape[0]
        take_random = torch.rand(n, device=greedy.device) < self.epsilon(progress)
        random_actions = torch.randint(0, self.spec.action_dim, (n,), device=greedy.device)
        return torch.where(take_random, random_actions, greedy)
