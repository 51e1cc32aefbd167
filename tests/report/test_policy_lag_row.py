"""The run report states the measured policy lag of a parallel run."""
from __future__ import annotations

import pearl_py as pearl
from pearl_py.plan import Plan
from pearl_py.report.measured import summary_rows


def test_the_policy_lag_row_shows_the_measured_lag_and_its_bound():
    plan = Plan.single_device(pearl.DQN("CartPole-v1").protocol())
    run = {"env_steps": 1000, "samples_per_second": 500.0, "wall_seconds": 2.0, "eval_return_mean": 9.0,
           "eval_return_std": 1.0, "backend": "local-parallel", "policy_lag": {"bound": 4, "max_observed": 3}}
    rows = dict(summary_rows(plan, run))
    assert rows["policy lag (measured)"] == "3 updates behind the serial order at most (bound 4)"
    unbounded = dict(summary_rows(plan, {**run, "policy_lag": {"bound": None, "max_observed": 128}}))
    assert unbounded["policy lag (measured)"] == "128 updates behind the serial order at most (unbounded)"
    # Ray does not measure it: no row rather than a made-up figure
    ray = dict(summary_rows(plan, {**run, "policy_lag": {"bound": 128, "max_observed": None}}))
    assert "policy lag (measured)" not in ray
