"""The training loop's own work per vector step: measured by the serial executors, calibrated per family, charged
with every env step by the cost model, and shown as its own row beside the kernels in a run's report."""
from __future__ import annotations

import pytest
from variant_helpers import synthetic_calibration

import pearl_py as pearl
from pearl_py.estimate import Estimator
from pearl_py.estimate.loop_overhead import LOOP_STEP_KEY
from pearl_py.optimize.api import plan
from pearl_py.protocol.kernel import ENV_STEP, LOOP_WORK
from pearl_py.report import measured


def _env_step(algo):
    return algo.protocol().by_kind(ENV_STEP)[0]


def test_an_env_step_call_carries_its_familys_calibrated_loop_work():
    calibration = synthetic_calibration()
    calibration.meta[LOOP_STEP_KEY] = {"off_policy": 20e-6, "on_policy": 50e-6}
    timed, untimed = Estimator(calibration), Estimator(use_cache=False)
    cpu = pearl.Platform.local().by_kind("cpu")[0]
    for algo, loop in ((pearl.DQN("CartPole-v1"), 20e-6), (pearl.PPO("CartPole-v1", n_envs=8, n_steps=32), 50e-6)):
        kernel = _env_step(algo)
        cost = timed.cost(kernel, cpu)
        assert (cost.loop_s, cost.loop_source) == (pytest.approx(loop), "calibrated")
        bare = timed._kernel_cost(kernel, cpu, "reference", 1)
        assert cost.latency_s == pytest.approx(bare.latency_s + loop)
        assert cost.energy_j == pytest.approx(bare.energy_j * cost.latency_s / bare.latency_s)
        # without a timed figure: the assumed one of estimators/roofline.yaml, labelled modelled
        assert untimed.cost(kernel, cpu).loop_s == pytest.approx(20e-6)
        assert untimed.cost(kernel, cpu).loop_source == "modelled"
    # only the env step carries it
    inference = pearl.DQN("CartPole-v1").protocol().by_kind("inference")[0]
    assert timed.cost(inference, cpu).loop_s == 0.0


def test_a_serial_run_times_its_loop_work_and_the_parts_add_up_to_its_training_time():
    algo = pearl.DQN("CartPole-v1", net_arch=[16], learning_starts=200, batch_size=16, buffer_size=1_000)
    result = pearl.train(algo, total_steps=600, seed=0, eval_episodes=0, progress=False, log=lambda line: None)
    loop = result.kernel_times[LOOP_WORK]
    assert loop["calls"] == 600  # one per vector step of the one env
    assert loop["total_s"] > 0
    total = sum(t["total_s"] for t in result.kernel_times.values())
    assert total == pytest.approx(result.wall_seconds, rel=1e-6)


def test_the_report_sets_the_measured_loop_beside_the_predicted_one():
    calibration = synthetic_calibration()
    calibration.meta[LOOP_STEP_KEY] = {"off_policy": 20e-6}
    algo = pearl.DQN("CartPole-v1", learning_starts=0)
    p = plan(algo.protocol(serialized=True), pearl.Platform.local(), estimator=Estimator(calibration),
             horizon=1_000, pareto_points=2)
    env_cost = p.prediction.cost(ENV_STEP, p.placements[ENV_STEP].device, p.placements[ENV_STEP].variant)
    run = {"env_steps": 1_000, "kernel_times": {
        ENV_STEP: {"calls": 1_000, "total_s": 1_000 * (env_cost.latency_s - env_cost.loop_s), "mean_s": 1e-5},
        LOOP_WORK: {"calls": 1_000, "total_s": 1_000 * 30e-6, "mean_s": 30e-6}}}
    rows = {row[0]: row for row in measured.kernel_rows(p, run)}
    assert rows[ENV_STEP][-1] == "1.00×"            # the env step alone, as the executor times it
    loop = next(row for name, row in rows.items() if name.startswith(LOOP_WORK))
    assert loop[2] == "20.0 us (calibrated)" and loop[3] == "30.0 us" and loop[-1] == "1.50×"
    # a parallel run's actors do not time their loop: predicted, not measured
    del run["kernel_times"][LOOP_WORK]
    loop = next(row for row in measured.kernel_rows(p, run) if row[0].startswith(LOOP_WORK))
    assert loop[3].startswith("not measured") and loop[-1] == "–"
