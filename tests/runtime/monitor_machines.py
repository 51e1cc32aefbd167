"""The monitor tests' fake machines (tests/runtime/test_monitor.py, test_ray_backend.py, no timing): a clock that only
the learner update moves, by a cost that depends on its thread count or its variant, with a slowdown injected after a
number of calls; and the plans that predict the quiet machine's costs."""
from __future__ import annotations

import dataclasses

import torch

from pearl_py.plan import Figures, KernelCost, Placement, Plan, Prediction, SolverInfo, ThreadCost

TINY_DQN = dict(net_arch=[32], batch_size=16, learning_starts=200, train_freq=50, gradient_steps=10,
                buffer_size=5_000, target_update_interval=100)
"""Rounds at vector steps 250, 300, ..., 2000 (round r at 200 + 50 r), 10 updates each."""
COST_S = {1: 12e-3, 2: 10e-3}
"""The fake machine's seconds per update at 1 and 2 threads, also the plan's predicted costs."""


class FakeMachine:
    """A clock that only the learner update moves: each call costs ``COST_S`` at the thread count it runs, 3x at
    2 threads from call ``slow_after + 1`` on (a neighbour arrived)."""

    def __init__(self, slow_after: float) -> None:
        self.slow_after, self.now, self.threads = slow_after, 0.0, []

    def clock(self) -> float:
        return self.now

    def wrap(self, update):
        def update_on_this_machine(batch):
            n = torch.get_num_threads()
            self.threads.append(n)
            self.now += COST_S[n] * (3 if n == 2 and len(self.threads) > self.slow_after else 1)
            return update(batch)
        return update_on_this_machine


def two_thread_plan(algo) -> Plan:
    """The serial plan with the learner at 2 threads, predicted as the fake machine's quiet costs."""
    plan = Plan.single_device(algo.protocol(serialized=True))
    placements = dict(plan.placements, learner_update=Placement("cpu", "reference", 2))
    costs = {"learner_update": {"cpu": {"reference": KernelCost(COST_S[1], 0.0, "calibrated",
                                                                threads=(ThreadCost(2, COST_S[2], 0.0),))}}}
    prediction = Prediction(Figures(1.0, 1.0, 1.0, 1.0, 1.0, "cpu"), SolverInfo("test", True, 1.0, 0.0, 0.0), costs,
                            rates={}, kinds={}, devices={})
    return dataclasses.replace(plan, placements=placements, prediction=prediction)


VARIANT_S = {"reference": 10e-3, "fused": 12e-3}
"""The fake machine's seconds per update of each variant (1 thread), also the plan's predicted costs: the fused update
predicted 1.2x the planned reference's, within the rule's ``disputed`` 1.5x."""


class VariantMachine(FakeMachine):
    """The fake clock by variant: each call costs ``VARIANT_S`` of the variant it runs, the reference's 3x from call
    ``slow_after + 1`` on; ``threads`` records the variant of every call."""

    def call(self, variant: str) -> float:
        """One call of ``variant`` on this machine: recorded, the clock moved by its seconds (returned)."""
        self.threads.append(variant)
        seconds = VARIANT_S[variant] * (3 if variant == "reference" and len(self.threads) > self.slow_after else 1)
        self.now += seconds
        return seconds

    def wrap_variant(self, update, variant: str):
        def update_on_this_machine(*args):
            self.call(variant)
            return update(*args)
        return update_on_this_machine


def variant_plan(algo) -> Plan:
    """The serial plan with the learner's reference update at 1 thread, and the fused one costed close beside it."""
    plan = two_thread_plan(algo)
    costs = {"learner_update": {"cpu": {v: KernelCost(s, 0.0, "calibrated") for v, s in VARIANT_S.items()}}}
    return dataclasses.replace(plan, placements=dict(plan.placements, learner_update=Placement("cpu", "reference", 1)),
                               prediction=dataclasses.replace(plan.prediction, costs=costs))


ENV_S = 2e-3
"""The fake machine's seconds per env step (one env), also the plan's predicted cost: with the learner at 1 thread
(12 ms, 0.2 updates a step) the serialized mode takes 4.4 ms an env step, the overlapped one max(2, 2.4) ms."""
RATES = {"env_step": 1.0, "learner_update": TINY_DQN["gradient_steps"] / TINY_DQN["train_freq"]}


def mode_plan(algo) -> Plan:
    """:func:`two_thread_plan` with the env step costed and the kernels' rates: a plan whose mode the monitor weighs."""
    plan = two_thread_plan(algo)
    costs = dict(plan.prediction.costs, env_step={"cpu": {"reference": KernelCost(ENV_S, 0.0, "calibrated")}})
    return dataclasses.replace(plan, prediction=dataclasses.replace(plan.prediction, costs=costs, rates=RATES))
