"""Define a new algorithm through pearl_py's public API alone: Averaged-DQN (Anschel et al. 2017).

Averaged-DQN bootstraps from the mean of the K most recent Q-networks instead of one
frozen copy: averaging cuts the variance of the target, and with it DQN's overestimation
and instability. We say only what it computes, starting from the built-in DQN:

* its own target: a module keeping K snapshots of the Q-network, pushed every
  ``target_update_interval`` env steps by the ``after_env_step`` hook (DQN's hard copy
  is replaced: ``target_networks = ()``);
* its own loss, declared with ``form="custom"`` (the default): it is not DQN's math any
  more, so the kernels written for DQN (``form="dqn_td"``, the ``fused`` learner update)
  refuse it and the plan uses the generic ones; acting is still DQN's epsilon-greedy,
  so the ``fused`` inference still serves it.

pearl_py derives its kernels (the K snapshot forwards show up in the learner's
workload), builds replay and learner, and runs it. Run it:

    python examples/custom_algorithm.py --steps 50000
"""
from __future__ import annotations

import argparse
import copy
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

import pearl_py as pearl
from pearl_py.algorithms.losses import td_target, weighted_mean


@dataclass(frozen=True)
class AveragedDQNConfig(pearl.DQNConfig):
    n_averaged: int = pearl.param(5, "Q-network snapshots averaged in the target (K).", low=1)


class QSnapshots(nn.Module):
    """The last K copies of a Q-network, overwritten oldest first; calling it averages their Q-values."""

    def __init__(self, q: nn.Module, k: int) -> None:
        super().__init__()
        self.copies = nn.ModuleList(copy.deepcopy(q).requires_grad_(False) for _ in range(k))
        self.register_buffer("oldest", torch.zeros((), dtype=torch.long))   # a buffer: checkpoints keep it

    @torch.no_grad()
    def push(self, q: nn.Module) -> None:
        slot = int(self.oldest)
        for snapshot, online in zip(self.copies[slot].parameters(), q.parameters()):
            snapshot.copy_(online)
        self.oldest.fill_((slot + 1) % len(self.copies))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.stack([q(obs) for q in self.copies]).mean(dim=0)


@pearl.register
class AveragedDQN(pearl.DQN):
    """DQN's network, acting and exploration; the target is the mean of K snapshots."""

    name = "averaged_dqn"
    Config = AveragedDQNConfig
    target_networks = ()

    def build_networks(self) -> dict[str, nn.Module]:
        nets = super().build_networks()
        nets["snapshots"] = QSnapshots(nets["q"], self.config.n_averaged)
        return nets

    def losses(self) -> list[pearl.Loss]:
        return [pearl.Loss("q", trains="q", fn=self._averaged_q_loss)]   # form "custom": not DQN's math

    def after_env_step(self, nets: pearl.Networks, vector_steps: int) -> None:
        every = max(self.config.target_update_interval // self.config.n_envs, 1)
        if vector_steps % every == 0:
            nets.online.snapshots.push(nets.online.q)

    def _averaged_q_loss(self, nets: pearl.Networks, batch):
        with torch.no_grad():
            next_value = nets.online.snapshots(batch.next_obs).max(dim=1).values
            target = td_target(batch, next_value, self.config.gamma)
        q = nets.online.q(batch.obs).gather(1, batch.actions.long().unsqueeze(1)).squeeze(1)
        return weighted_mean(F.smooth_l1_loss(q, target, reduction="none"), batch), q - target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="runs/averaged_dqn_cartpole")
    args = parser.parse_args()
    # DQN's CartPole zoo hyperparameters (examples/configs/dqn_cartpole.yaml), K = 5
    algo = AveragedDQN("CartPole-v1", learning_rate=2.3e-3, batch_size=64, buffer_size=100_000,
                       learning_starts=1000, target_update_interval=10, train_freq=256, gradient_steps=128,
                       exploration_fraction=0.16, exploration_final_eps=0.04, net_arch=[256, 256])
    for kernel in algo.protocol().kernels():
        print(f"{kernel.name:15s} {kernel.kind.value:15s} {kernel.rate:6.3f} calls per transition")
    result = pearl.train(algo, total_steps=args.steps, seed=args.seed, out=args.out)
    print(f"Averaged-DQN eval return {result.eval_return_mean:.1f} ± {result.eval_return_std:.1f} "
          f"({result.samples_per_second:.0f} samples/s, measured)")


if __name__ == "__main__":
    main()
