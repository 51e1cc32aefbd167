"""Simulating a run from its measured kernel latencies (no parallel run here: a synthetic result)."""
from __future__ import annotations

import pytest

import pearl_py as pearl
from pearl_py.plan import Placement, Plan
from pearl_py.runtime.result import RunResult
from pearl_py.simulate.measured import measured_problem, simulate_measured


def _run(algo, times: dict[str, tuple[int, float]], steps: int, updates: int) -> RunResult:
    kernel_times = {k: {"calls": c, "total_s": c * s, "mean_s": s} for k, (c, s) in times.items()}
    return RunResult(algorithm="dqn", env="CartPole-v1", seed=0, env_steps=steps, gradient_steps=updates,
                     wall_seconds=1.0, eval_returns=[], plan={}, kernel_times=kernel_times)


def test_a_learner_bound_run_is_simulated_at_the_learners_measured_pace() -> None:
    algo = pearl.DQN("CartPole-v1", train_freq=256, gradient_steps=128, batch_size=64, learning_starts=0)
    plan = Plan.single_device(algo.protocol())
    plan.placements.update(env_step=Placement("cpu", replicas=1), inference=Placement("cpu", replicas=1))
    steps, updates = 256 * 30, 128 * 30
    run = _run(algo, {"env_step": (steps, 2e-5), "inference": (steps, 5e-5), "replay_insert": (steps, 1e-5),
                      "replay_sample": (updates, 1e-4), "learner_update": (updates, 2e-3),
                      "param_sync": (updates // 4, 1e-4)}, steps, updates)
    problem = measured_problem(algo, plan, run.kernel_times, units=2, publications=updates // 4)
    assert {o.source for o in problem.options.values()} == {"measured"}
    sim = simulate_measured(algo, plan, run, units=2, sync_every=4)
    training = 0.5 * (1e-4 + 2e-3) + (0.5 / 4) * 1e-4   # sample, update, publish per transition
    # the policy lag (4 of 128 updates) lets the actors (7e-5 s per transition) overlap only the
    # round's last 4 updates: collection and the rest of the round run one after the other
    chained = (2e-5 + 5e-5) + (1 - 4 / 128) * training
    assert sim.samples_per_s == pytest.approx(1 / chained, rel=0.02)
