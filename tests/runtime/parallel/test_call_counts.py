"""Every kernel is charged at the rate the parallel runtime runs it: the model's call counts over a run
(:func:`pearl_py.optimize.whole_run.modelled_calls`) equal what a short run measures, for DQN, DDPG and PER DQN.

The cases cover the two ways parameters get published: every 4 updates (DQN: rounds of 10 updates) and, where
rounds are one update long, whenever the policy-lag bound needs fresher ones (DDPG, PER DQN)."""
from __future__ import annotations

import dataclasses

import pytest

import pearl_py as pearl
from pearl_py.optimize.whole_run import modelled_calls
from pearl_py.plan import Plan
from pearl_py.runtime.parallel import ParallelExecutor

SMALL = dict(net_arch=[16], batch_size=16, learning_starts=200, buffer_size=5_000)
CASES = {
    "dqn": lambda: pearl.DQN("CartPole-v1", train_freq=50, gradient_steps=10, **SMALL),
    "per_dqn": lambda: pearl.DQN("CartPole-v1", train_freq=4, gradient_steps=1, prioritized_replay=True, **SMALL),
    "ddpg": lambda: pearl.DDPG("Pendulum-v1", **SMALL),
}
STEPS = 1_200


@pytest.mark.parametrize("case", sorted(CASES))
def test_modelled_call_counts_equal_the_measured_ones(case):
    algo = CASES[case]()
    protocol = algo.protocol()
    plan = dataclasses.replace(Plan.single_device(protocol), mode="overlapped")
    result = ParallelExecutor(algo, plan, seed=0, eval_episodes=1).run(STEPS)
    modelled = modelled_calls(protocol, STEPS)
    measured = {kernel: result.kernel_times.get(kernel, {}).get("calls", 0) for kernel in modelled}
    for kernel, calls in modelled.items():
        assert measured[kernel] == pytest.approx(calls, abs=1.0), (kernel, measured, modelled)
    assert modelled["param_sync"] > 0 and set(modelled) == set(plan.placements)
