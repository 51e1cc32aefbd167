"""Tuning: the measured-fastest candidate is kept (measurements injected), trials are sized and isolated."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

import pearl_py as pearl
from pearl_py.cli import main
from pearl_py.errors import UserError
from pearl_py.pipeline.planning import local_serial_plan
from pearl_py.pipeline.tune import (
    Measurement,
    TrialRunner,
    TuneOptions,
    round_clock,
    trial_algorithm,
    trial_steps,
    tune_plan,
)
from pearl_py.plan import Figures, KernelCost, Placement, Plan, Prediction, SolverInfo
from pearl_py.report import tuning as tuning_report

TINY = dict(net_arch=[16], batch_size=16, learning_starts=100, train_freq=50, gradient_steps=5, buffer_size=2_000)


def _candidate(variant: str, samples_per_s: float, mode: str = "overlapped") -> Plan:
    placements = {"env_step": Placement("cpu"), "learner_update": Placement("cpu", variant)}
    costs = {"env_step": {"cpu": {"reference": KernelCost(1e-5, 0.0, "calibrated")}},
             "learner_update": {"cpu": {variant: KernelCost(1e-4, 0.0, "modelled")}}}
    prediction = Prediction(Figures(samples_per_s, 0.0, 0.0, 1 / samples_per_s, 0.0, "cpu"),
                            SolverInfo("milp", True, 0.0, 0.0, 0.0), costs, rates={}, kinds={}, devices={})
    return Plan("local", "throughput", placements, mode=mode, devices={"cpu": "cpu"}, solver="milp",
                prediction=prediction)


CANDIDATES = [_candidate("fused", 3000.0), _candidate("fused", 3000.0, "serialized"), _candidate("reference", 1500.0)]


class Injected:
    """A measurement function: a fixed rate per candidate (by its learner variant and mode); records its calls."""

    def __init__(self, rates: dict[tuple[str, str], float | BaseException]) -> None:
        self.rates = rates
        self.calls: list[tuple[float, float]] = []

    def __call__(self, plan: Plan, seconds: float, expected: float) -> Measurement:
        self.calls.append((seconds, expected))
        rate = self.rates[(plan.placements["learner_update"].variant, plan.mode)]
        if isinstance(rate, BaseException):
            raise rate
        return Measurement(samples_per_s=rate, window_env_steps=1000, window_s=1000 / rate, trial_env_steps=1500,
                           trial_s=2.0)


def _quiet(_: str) -> None:
    pass


def test_the_measured_fastest_candidate_is_kept_with_every_trial_recorded():
    measure = Injected({("fused", "overlapped"): 1200.0, ("fused", "serialized"): 1500.0,
                        ("reference", "overlapped"): 900.0})
    kept = tune_plan(CANDIDATES, measure, TuneOptions(top_k=3, seconds=4), _quiet)
    record = kept.prediction.tuning
    assert kept.placements == CANDIDATES[1].placements and kept.mode == "serialized"
    assert record.kept == 2 and [t.kept for t in record.trials] == [False, True, False]
    assert [t.measured_samples_per_s for t in record.trials] == [1200.0, 1500.0, 900.0]
    assert [t.predicted_samples_per_s for t in record.trials] == [3000.0, 3000.0, 1500.0]
    assert record.trials[0].predicted_source == "calibrated+modelled"
    assert [t.executor for t in record.trials] == ["parallel", "serial", "parallel"]
    assert record.reason == ("fastest measured: 1,500 samples/s, 1.25× the optimizer's first choice "
                                "(1,200 samples/s)")
    assert record.seconds == 4 and record.top_k == 3
    # the first trial is sized by the prediction, later ones by it times the median measured/predicted so far
    assert measure.calls == [(4, 3000.0), (4, 3000.0 * 0.4), (4, 1500.0 * 0.45)]
    assert CANDIDATES[1].prediction.tuning is None  # the candidates themselves are left as they were


def test_the_optimizers_choice_stays_when_it_is_also_fastest_and_ties_go_to_the_better_predicted():
    measure = Injected({("fused", "overlapped"): 1500.0, ("fused", "serialized"): 1500.0,
                        ("reference", "overlapped"): 1000.0})
    record = tune_plan(CANDIDATES, measure, log=_quiet).prediction.tuning
    assert record.kept == 1
    assert record.reason == ("the optimizer's first choice was also the fastest measured: 1,500 samples/s, "
                                "1.00× the next")


def test_a_failed_trial_is_recorded_and_not_kept():
    measure = Injected({("fused", "overlapped"): RuntimeError("actor died"), ("fused", "serialized"): 800.0,
                        ("reference", "overlapped"): 900.0})
    kept = tune_plan(CANDIDATES, measure, log=_quiet)
    record = kept.prediction.tuning
    assert record.kept == 3 and record.trials[0].error == "RuntimeError: actor died"
    assert record.trials[0].measured_samples_per_s is None
    assert "the optimizer's first choice failed its trial (RuntimeError: actor died)" in record.reason
    rows = tuning_report.trial_rows(kept)
    assert rows[0][4] == "failed: RuntimeError: actor died" and rows[2][-1] == "kept"


def test_when_every_trial_fails_the_optimizers_choice_runs():
    boom = ValueError("no")
    measure = Injected({("fused", "overlapped"): boom, ("fused", "serialized"): boom,
                        ("reference", "overlapped"): boom})
    record = tune_plan(CANDIDATES, measure, log=_quiet).prediction.tuning
    assert record.kept == 1 and "every trial failed" in record.reason


def test_ctrl_c_during_a_trial_says_the_run_had_not_started():
    measure = Injected({("fused", "overlapped"): KeyboardInterrupt()})
    with pytest.raises(KeyboardInterrupt, match=r"interrupted while tuning \(trial 1 of 3\); the run had not started"):
        tune_plan(CANDIDATES, measure, log=_quiet)


def test_report_rows_name_only_the_placements_that_differ():
    measure = Injected({("fused", "overlapped"): 1200.0, ("fused", "serialized"): 1500.0,
                        ("reference", "overlapped"): 900.0})
    kept = tune_plan(CANDIDATES, measure, log=_quiet)
    rows = tuning_report.trial_rows(kept)
    assert rows[1] == ["2", "serial (serialized)", "learner_update: cpu / fused", "3,000 (calibrated+modelled)",
                       "1,500", "1,000 steps in 666.7 ms", "2.0 s", "kept"]
    assert rows[2][2] == "learner_update: cpu / reference"
    assert tuning_report.sentences(kept)[0] == f"Kept plan 2 of 3: {kept.prediction.tuning.reason}."


def test_trials_learn_after_a_short_prefill_and_run_whole_rounds_for_the_seconds_asked():
    algo = pearl.DQN("CartPole-v1", learning_starts=1000, train_freq=256, gradient_steps=128, batch_size=64)
    trial = trial_algorithm(algo)
    assert trial.config.learning_starts == 256 and algo.config.learning_starts == 1000
    assert dataclasses.replace(trial.config, learning_starts=1000) == algo.config
    cfg = trial.config
    # first training round at vector step 512 (the first multiple of 256 past 256 stored), then 20 rounds for 5 s
    assert trial_steps(cfg, expected_samples_per_s=1000, seconds=5, total_steps=50_000) == 512 + 20 * 256
    assert trial_steps(cfg, expected_samples_per_s=10, seconds=1, total_steps=50_000) == 512 + 2 * 256
    assert trial_steps(cfg, expected_samples_per_s=1e6, seconds=5, total_steps=2_000) == 512 + 5 * 256


def test_round_clock_reads_steps_and_training_seconds(tmp_path):
    path = tmp_path / "train.csv"
    path.write_text("step,loss_q,steps_per_second\n150,0.5,1500.0\n200,0.4,1000.0\n")
    assert round_clock(path) == [(150, 0.1), (200, 0.2)]


def test_a_real_trial_measures_steady_rounds_and_leaves_global_rng_alone():
    algo = pearl.DQN("CartPole-v1", **TINY)
    plan = local_serial_plan(algo, 300)
    torch.manual_seed(7)
    np.random.seed(7)
    expected = (torch.rand(3), np.random.rand(3))
    torch.manual_seed(7)
    np.random.seed(7)
    measured = TrialRunner(algo, seed=0, total_steps=300)(plan, seconds=0.01, expected_samples_per_s=100)
    assert torch.equal(torch.rand(3), expected[0]) and np.array_equal(np.random.rand(3), expected[1])
    # the copy learns after 50 stored (train_freq x n_envs < 100): rounds at vector steps 100, 150, 200
    assert measured.trial_env_steps == 200 and measured.window_env_steps == 100
    assert measured.samples_per_s == pytest.approx(measured.window_env_steps / measured.window_s)
    assert measured.trial_s >= measured.window_s > 0


@pytest.mark.parametrize("kwargs, message", [
    (dict(top_k=0), "tune top_k must be an integer >= 1, got 0"),
    (dict(top_k=2.5), "tune top_k must be an integer >= 1, got 2.5"),
    (dict(seconds=0), "tune seconds must be a number > 0, got 0"),
    (dict(seconds=float("nan")), "tune seconds must be a number > 0, got nan"),
])
def test_bad_tune_options_are_refused(kwargs, message):
    with pytest.raises(UserError, match=message):
        TuneOptions(**kwargs)


@pytest.mark.parametrize("kwargs, message", [
    (dict(plan="local"), "tune \\(--tune\\) trials the optimizer's top plans, so it needs plan='auto' \\(--auto\\), "
                         "got plan='local'"),
    (dict(plan="auto", objective="power"), "needs the throughput objective, got 'power'"),
    (dict(plan="auto", backend="ray"), "it cannot run on the Ray backend or continue a run"),
    (dict(plan="auto", tune="yes"), "tune must be True, False or a TuneOptions, got 'yes'"),
])
def test_train_refuses_tuning_it_cannot_do(kwargs, message):
    with pytest.raises(UserError, match=message):
        pearl.train(pearl.DQN("CartPole-v1", **TINY), total_steps=300, **{"tune": True, **kwargs})


@pytest.mark.parametrize("flags, message", [
    (["--tune"], "pearl run: error: --tune needs --auto (it trials the optimizer's top candidate plans)"),
    (["--plan", "p.yaml", "--tune"], "pearl run: error: --tune needs --auto"),
    (["--auto", "--tune-seconds", "2"], "pearl run: error: --tune-seconds needs --tune"),
    (["--auto", "--tune", "--tune-top-k", "0"], "pearl run: error: --tune-top-k must be >= 1, got 0"),
])
def test_cli_tune_flags_misused_exit_2(write_config, capsys, flags, message):
    config = write_config("algorithm: dqn\nenv: CartPole-v1\ntotal_steps: 100\n")
    with pytest.raises(SystemExit) as exit_:
        main(["run", str(config), *flags])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err
