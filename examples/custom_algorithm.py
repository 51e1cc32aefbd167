"""Define a new algorithm through pearl_py's public API alone: TD3 (Fujimoto et al. 2018).

TD3 = DDPG + twin critics (the smaller target), target policy smoothing, and a delayed
actor update. We only say what TD3 computes; pearl_py derives its kernels, builds its
replay and learner, and runs it. Run it:

    python examples/custom_algorithm.py --steps 15000
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

import pearl_py as pearl
from pearl_py.algorithms import StateActionValue
from pearl_py.algorithms.losses import td_target, weighted_mean


@dataclass(frozen=True)
class TD3Config(pearl.DDPGConfig):
    policy_delay: int = pearl.param(2, "Critic steps per actor step.", low=1)
    target_policy_noise: float = pearl.param(0.2, "Std of the target-action smoothing noise.", low=0.0)
    target_noise_clip: float = pearl.param(0.5, "Clip of the smoothing noise.", low=0.0)


class TwinQ(nn.Module):
    """Two independent Q(s, a) heads."""

    def __init__(self, obs_dim: int, action_dim: int, hidden: tuple[int, ...]) -> None:
        super().__init__()
        self.q1 = StateActionValue(obs_dim, action_dim, hidden)
        self.q2 = StateActionValue(obs_dim, action_dim, hidden)

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.q1(obs, action), self.q2(obs, action)


@pearl.register
class TD3(pearl.DDPG):
    """Inherits DDPG's actor, acting and soft target updates; replaces the critic and the losses."""

    name = "td3"
    Config = TD3Config

    def build_networks(self) -> dict[str, nn.Module]:
        nets = super().build_networks()
        nets["critic"] = TwinQ(self.spec.obs_dim, self.spec.action_dim, self.config.net_arch)
        return nets

    def losses(self) -> list[pearl.Loss]:
        return [pearl.Loss("critic", trains="critic", fn=self._twin_critic_loss),
                pearl.Loss("actor", trains="actor", fn=self._actor_loss, every=self.config.policy_delay)]

    def _twin_critic_loss(self, nets: pearl.Networks, batch):
        cfg = self.config
        with torch.no_grad():
            next_action = nets.target.actor(batch.next_obs)
            noise = (torch.randn_like(next_action) * cfg.target_policy_noise).clamp(
                -cfg.target_noise_clip, cfg.target_noise_clip)
            next_q = torch.min(*nets.target.critic(batch.next_obs, (next_action + noise).clamp(-1, 1)))
            target = td_target(batch, next_q, cfg.gamma)
        q1, q2 = nets.online.critic(batch.obs, batch.actions)
        per_item = F.mse_loss(q1, target, reduction="none") + F.mse_loss(q2, target, reduction="none")
        return weighted_mean(per_item, batch), q1 - target

    def _actor_loss(self, nets: pearl.Networks, batch):
        q1, _ = nets.online.critic(batch.obs, nets.online.actor(batch.obs))
        return -q1.mean(), None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=15_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="runs/td3_pendulum")
    args = parser.parse_args()
    # targets move on the delayed steps only, as in the paper
    algo = TD3("Pendulum-v1", gamma=0.98, learning_starts=5_000, buffer_size=200_000, target_update_interval=2)
    for kernel in algo.protocol().kernels():
        print(f"{kernel.name:15s} {kernel.kind.value:15s} {kernel.rate:6.3f} calls per transition")
    result = pearl.train(algo, total_steps=args.steps, seed=args.seed, out=args.out)
    print(f"TD3 eval return {result.eval_return_mean:.1f} ± {result.eval_return_std:.1f} "
          f"({result.samples_per_second:.0f} samples/s, measured)")


if __name__ == "__main__":
    main()
