"""Helpers for the replay-server and central-inference tests: a policy that ignores the network.

``FixedPolicyDQN`` acts greedily with a fixed rule of the observation (push towards the
pole's fall) and explores as DQN does, so what actors collect does not depend on when
parameters arrive: runs that differ only in timing collect the same transitions. Its
loss records a fingerprint of every batch the learner trains on (in the learner
process: this one) and counts transitions whose action is not the rule's. Actor and
server processes import this module to unpickle the class.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import torch

import pearl_py as pearl
from pearl_py.plan import Figures, KernelCost, Placement, Plan, Prediction, SolverInfo

SEEN: list[tuple[float, float, float]] = []
"""Fingerprint (sums of obs, actions, rewards) of every batch the learner trained on."""
MISROUTED: list[int] = []
"""Per batch: transitions whose action is not ``rule(obs)``."""

SMALL_DQN = dict(net_arch=[16], batch_size=8, learning_starts=100, train_freq=25, gradient_steps=5,
                 buffer_size=2_000, target_update_interval=50)


def rule(obs: torch.Tensor) -> torch.Tensor:
    """CartPole action 1 (push right) when the pole leans or turns right."""
    return (obs[:, 2] + 0.5 * obs[:, 3] > 0).long()


class FixedPolicyDQN(pearl.DQN):
    """DQN acting by :func:`rule` (epsilon-greedy around it), recording every batch it learns from."""

    def act(self, nets, obs, *, explore, progress):
        greedy = rule(obs)
        return self.epsilon_greedy(greedy, progress) if explore else greedy

    def losses(self):
        (loss,) = super().losses()

        def fn(nets, batch):
            SEEN.append((float(batch.obs.sum()), float(batch.actions.float().sum()), float(batch.rewards.sum())))
            MISROUTED.append(int((batch.actions.long() != rule(batch.obs)).sum()))
            return loss.fn(nets, batch)

        return [pearl.Loss(loss.name, loss.trains, fn)]


KINDS = {"cpu": "cpu", "cpu1": "cpu", "fpga0": "fpga", "gpu0": "gpu"}
"""The kinds of the devices these tests place kernels on."""


def plan_with(algo: pearl.Algorithm, actors: int = 1, **devices: str) -> Plan:
    """Every kernel on the CPU, ``actors`` actor processes, overlapped; ``devices`` moves kernels (kernel=device)."""
    plan = Plan.single_device(algo.protocol())
    placements = {**plan.placements, "env_step": Placement("cpu", replicas=actors)}
    for kernel, device in devices.items():
        placements[kernel] = Placement(device, plan.placements[kernel].variant)
    used = {p.device for p in placements.values()}
    return dataclasses.replace(plan, placements=placements, mode="overlapped",
                               devices={d: KINDS[d] for d in sorted(used)})


def with_modelled_costs(plan: Plan, latencies: dict[str, float]) -> Plan:
    """``plan`` with a minimal prediction: each named kernel's modelled latency per call as placed."""
    costs = {k: {plan.placements[k].device: {plan.placements[k].variant: KernelCost(s, 0.0, "modelled")}}
             for k, s in latencies.items()}
    prediction = Prediction(Figures(1.0, 1.0, 1.0, 1.0, 1.0, "cpu"), SolverInfo("test", True, 1.0, 0.0, 0.0), costs,
                            rates={}, kinds={}, devices={})
    return plan.with_prediction(prediction)


def reset_records() -> None:
    SEEN.clear()
    MISROUTED.clear()


def transitions(algo: pearl.Algorithm, count: int, start: int = 0) -> dict[str, np.ndarray]:
    """``count`` distinct synthetic transitions (an actor ring's record layout), numbered from ``start``."""
    k = np.arange(start, start + count, dtype=np.float32)
    obs = np.stack([k, -k, k / 7, np.sin(k)], axis=1).astype(np.float32)
    return {"obs": obs, "actions": (k % 2).astype(np.int64), "rewards": np.ones(count, np.float32),
            "next_obs": obs + 1, "terminated": (k % 13 == 12), "episode_return": np.where(k % 13 == 12, k, 0.0),
            "episode_length": np.where(k % 13 == 12, 13, 0).astype(np.int64)}
