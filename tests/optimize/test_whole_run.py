"""The whole-run prediction: the actors' start, warm-up steps at the env-step-and-insert rate, learning steps at
the plan's steady state, plus one-off setups; shown in the plan's report and set beside a run's measured
samples/s (start-up included when the run measured it)."""
from __future__ import annotations

import pytest
from variant_helpers import estimator, synthetic_calibration

import pearl_py as pearl
from pearl_py.estimate import Estimator
from pearl_py.optimize.api import plan
from pearl_py.optimize.builder import build_problem
from pearl_py.optimize.model import Choice, evaluate
from pearl_py.optimize.whole_run import whole_run, whole_vector_steps
from pearl_py.report import content, measured


@pytest.fixture(scope="module")
def ddpg():
    return pearl.DDPG("Pendulum-v1", learning_starts=10_000, net_arch=[64, 64])


def test_warmup_runs_at_the_rate_of_env_step_and_insert_alone(ddpg):
    p = plan(ddpg, "pearl-cpu-gpu-fpga", estimator=Estimator(use_cache=False), horizon=20_000, pareto_points=2)
    run = p.prediction.run
    protocol = ddpg.protocol()
    problem = build_problem(protocol, pearl.Platform.load("pearl-cpu-gpu-fpga"), Estimator(use_cache=False),
                            horizon=20_000)
    choices = {k: Choice(pl.device, pl.variant, pl.replicas) for k, pl in p.placements.items()}
    warm = evaluate(problem, {k: choices[k] for k in ("env_step", "replay_insert")})
    assert run.warmup_steps == 10_000 and run.env_steps == 20_000
    assert run.warmup_s == pytest.approx(10_000 * warm.time_per_sample)
    assert run.learning_s == pytest.approx(10_000 * p.prediction.figures.time_per_sample_s)
    assert run.seconds == pytest.approx(run.startup_s + run.warmup_s + run.learning_s + run.setup_s)
    assert run.samples_per_s == pytest.approx(20_000 / run.seconds)
    # random actions skip inference and training, so warming up is faster than learning
    assert warm.time_per_sample < p.prediction.figures.time_per_sample_s
    assert (run.seconds - run.startup_s) < 20_000 * p.prediction.figures.time_per_sample_s


def test_warmup_longer_than_the_run_is_cut_to_the_run(ddpg):
    p = plan(ddpg, "pearl-cpu-gpu-fpga", estimator=Estimator(use_cache=False), horizon=4_000, pareto_points=2)
    run = p.prediction.run
    assert run.warmup_steps == 4_000 and run.learning_s == 0.0


def test_unknown_or_endless_runs_have_no_whole_run_figure(ddpg):
    for horizon in (None, float("inf")):
        p = plan(ddpg, "pearl-cpu-gpu-fpga", estimator=Estimator(use_cache=False), horizon=horizon,
                 pareto_points=2)
        assert p.prediction.run is None
        assert not any(label.startswith("Samples per second, whole run") for label, _ in content.summary_rows(p))


def test_one_off_setups_are_charged_once():
    algo = pearl.DQN("CartPole-v1", batch_size=64, net_arch=[256, 256])
    p = plan(algo, pearl.Platform.local(), estimator=estimator(), horizon=1e6, pareto_points=2)
    assert p.placements["learner_update"].variant == "compiled"
    setup = synthetic_calibration().meta["setup"]["learner_update/compiled"]["seconds"]
    assert p.prediction.run.setup_s == pytest.approx(setup)
    label, text = content.whole_run_row(p.prediction.run)
    assert label == "Samples per second, whole run of 1,000,000 steps"
    assert "one-off setup 9.0 s" in text and text.endswith("modelled)")


def test_a_run_is_compared_with_the_whole_run_prediction_of_its_length(ddpg):
    p = plan(ddpg, "pearl-cpu-gpu-fpga", estimator=Estimator(use_cache=False), horizon=20_000, pareto_points=2)
    whole = p.prediction.run.samples_per_s
    run = {"env_steps": 20_000, "samples_per_second": 0.9 * whole, "wall_seconds": 1.0, "eval_return_mean": 0.0,
           "eval_return_std": 0.0}
    rows = dict(measured.summary_rows(p, run))
    assert rows["measured / predicted"] == "0.90"
    assert "samples/s measured (training)" in rows  # no start-up measured: the training clock's figure
    assert "samples/s predicted (whole run: 2.5 s start-up + 10,000 warm-up + 10,000 learning steps)" in rows
    assert "samples/s predicted (steady state of the learning phase)" in rows
    # a run of another length than the plan was made for is compared with the steady state
    rows = dict(measured.summary_rows(p, {**run, "env_steps": 5_000}))
    assert "samples/s predicted (steady state of the learning phase)" in rows
    assert rows["measured / predicted"] == f"{0.9 * whole / p.prediction.samples_per_s:.2f}"


def test_whole_run_needs_a_horizon(ddpg):
    protocol = ddpg.protocol()
    problem = build_problem(protocol, pearl.Platform.load("pearl-cpu-gpu-fpga"), Estimator(use_cache=False))
    assert whole_run(problem, protocol, {}, evaluate(problem, {}), horizon=0) is None


def test_kernel_rows_spread_learning_kernels_over_the_learning_steps_only(ddpg):
    p = plan(ddpg, "pearl-cpu-gpu-fpga", estimator=Estimator(use_cache=False), horizon=20_000, pareto_points=2)
    rates = p.prediction.rates
    assert measured.predicted_calls_per_sample(p, "learner_update", 20_000) == pytest.approx(
        rates["learner_update"] / 2)  # 10,000 of the 20,000 steps learn
    assert measured.predicted_calls_per_sample(p, "env_step", 20_000) == rates["env_step"]  # also in the warm-up
    assert measured.predicted_calls_per_sample(p, "learner_update", 5_000) == rates["learner_update"]
    cost = content.placed_cost(p, "learner_update")
    latency = cost.latency_s - cost.loop_s  # the update alone: the loop's work around it is a row of its own
    # a run whose updates took exactly the predicted time per call measures 1.00x per sample
    run = {"env_steps": 20_000, "kernel_times": {"learner_update": {
        "mean_s": latency, "calls": 10_000, "total_s": latency * 10_000 * rates["learner_update"]}}}
    row = next(r for r in measured.kernel_rows(p, run) if r[0] == "learner_update")
    assert row[-1] == "1.00×"


def test_steps_are_whole_vector_steps_as_the_executors_count_them():
    algo = pearl.DDPG("Pendulum-v1", learning_starts=1_001, n_envs=4, net_arch=[64, 64])
    p = plan(algo, "pearl-cpu-gpu-fpga", estimator=Estimator(use_cache=False), horizon=10_002, pareto_points=2)
    run = p.prediction.run
    assert run.env_steps == 10_004 and run.warmup_steps == 1_004  # ceil to multiples of 4
    assert whole_vector_steps(10_000, 4) == 10_000 and whole_vector_steps(1, 4) == 4


def test_actor_processes_start_once_per_wave_and_a_serialized_plan_starts_none(ddpg):
    platform = pearl.Platform.load("pearl-cpu-gpu-fpga")
    modelled = Estimator(use_cache=False)
    assert modelled.process_start() == (2.5, "modelled")    # estimators/roofline.yaml's assumed figure
    p = plan(ddpg, platform, estimator=modelled, horizon=20_000, pareto_points=2)
    actors = p.placements["env_step"].replicas
    cores = platform.device(p.placements["env_step"].device).parallel_units
    assert p.mode == "overlapped" and actors >= 1
    assert p.prediction.run.startup_s == pytest.approx(2.5 * -(-actors // cores))
    assert p.prediction.run.startup_source == "modelled"
    serial = plan(ddpg.protocol(serialized=True), platform, estimator=modelled, horizon=20_000, pareto_points=2)
    assert serial.prediction.run.startup_s == 0.0
    assert "start-up" not in content.whole_run_row(serial.prediction.run)[1]
    # a calibration that timed the process start costs it as timed, labelled calibrated
    timed = synthetic_calibration()
    timed.meta["process_start_s"] = 1.25
    local = plan(ddpg, pearl.Platform.local(), estimator=Estimator(timed), horizon=20_000, pareto_points=2)
    assert (local.prediction.run.startup_s, local.prediction.run.startup_source) == (1.25, "calibrated")
    assert "actor start-up 1.2 s (calibrated)" in content.whole_run_row(local.prediction.run)[1]


def test_a_measured_start_up_is_compared_with_the_predicted_one(ddpg):
    p = plan(ddpg, "pearl-cpu-gpu-fpga", estimator=Estimator(use_cache=False), horizon=20_000, pareto_points=2)
    whole = p.prediction.run
    run = {"env_steps": 20_000, "samples_per_second": 20_000 / 1.0, "wall_seconds": 1.0, "startup_seconds": 3.0,
           "run_samples_per_second": 20_000 / 4.0, "eval_return_mean": 0.0, "eval_return_std": 0.0}
    rows = dict(measured.summary_rows(p, run))
    assert rows["samples/s measured (whole run: start-up + training)"] == "5,000"
    assert rows["measured / predicted"] == f"{5_000 / whole.samples_per_s:.2f}"
    assert rows["samples/s measured (training)"] == "20,000"
    assert rows["start-up (measured)"] == "3.0 s"
