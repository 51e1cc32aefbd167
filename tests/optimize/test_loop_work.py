"""The training loop's own work: measured by the serial executors, calibrated per family (per vector step and per
update), charged with every env step and update by the cost model, and shown as its own row in a run's report."""
from __future__ import annotations

import re

import pytest
from variant_helpers import synthetic_calibration

import pearl_py as pearl
from pearl_py.estimate import Estimator
from pearl_py.estimate.calibration import IN_LOOP_KEY, LOOP_KEY
from pearl_py.optimize.api import plan
from pearl_py.profile.loop_overhead import LoopWork, time_loop_work
from pearl_py.protocol.kernel import ENV_STEP, INFERENCE, LEARNER_UPDATE, LOOP_WORK
from pearl_py.report import measured
from pearl_py.runtime.families import family_named


def _env_step(algo):
    return algo.protocol().by_kind(ENV_STEP)[0]


def _timed(**families):
    calibration = synthetic_calibration()
    calibration.meta[LOOP_KEY] = {family: LoopWork(*work).to_dict() for family, work in families.items()}
    return calibration


def test_env_steps_and_updates_carry_their_familys_calibrated_loop_work():
    timed = Estimator(_timed(off_policy=(20e-6, 5e-6), on_policy=(50e-6, 30e-6)))
    untimed = Estimator(use_cache=False)
    cpu = pearl.Platform.local().by_kind("cpu")[0]
    for algo, per_step, per_update in ((pearl.DQN("CartPole-v1"), 20e-6, 5e-6),
                                       (pearl.PPO("CartPole-v1", n_envs=8, n_steps=32), 50e-6, 30e-6)):
        protocol = algo.protocol()
        for kind, loop in ((ENV_STEP, per_step), (LEARNER_UPDATE, per_update)):
            kernel = protocol.by_kind(kind)[0]
            cost = timed.cost(kernel, cpu)
            assert (cost.loop_s, cost.loop_source) == (pytest.approx(loop), "calibrated")
            bare = timed.kernel_cost(kernel, cpu)
            assert cost.latency_s == pytest.approx(bare.latency_s + loop)
            assert cost.energy_j == pytest.approx(bare.energy_j * cost.latency_s / bare.latency_s)
            # without a timed figure: the assumed ones of estimators/roofline.yaml, labelled modelled (an update
            # carries its share of the round's log row)
            rounds = 1 / getattr(kernel.workload, "updates_per_round", 1)
            assumed = 20e-6 if kind == ENV_STEP else 10e-6 + 40e-6 * rounds
            assert untimed.cost(kernel, cpu).loop_s == pytest.approx(assumed)
            assert untimed.cost(kernel, cpu).loop_source == "modelled"
        # the other kernels carry none
        assert timed.cost(protocol.by_kind("inference")[0], cpu).loop_s == 0.0


class _Ran:
    """What a calibration run returns: its kernel times."""

    def __init__(self, loop_s: float, steps: int, updates: int, env_s: float = 0.0, inference_s: float | None = None):
        self.kernel_times = {LOOP_WORK: {"calls": steps, "total_s": loop_s},
                             LEARNER_UPDATE: {"calls": updates, "total_s": 0.0},
                             ENV_STEP: {"calls": steps, "total_s": env_s}}
        if inference_s is not None:
            self.kernel_times[INFERENCE] = {"calls": steps, "total_s": inference_s}


def test_the_calibration_splits_the_loop_into_per_step_per_update_and_per_round_work(monkeypatch):
    import pearl_py.profile.loop_overhead as loop_overhead

    plan = loop_overhead.calibration_plan(pearl.PPO("CartPole-v1", n_envs=8, n_steps=32))
    runs = family_named("on_policy").calibration_runs()     # 2, 16 and 2 updates per round
    a, b, c = 30e-6, 20e-6, 50e-6                            # per step, per update, per round

    def ran(steps: int, updates: int, per_round: int) -> _Ran:
        return _Ran(steps * a + updates * b + updates / per_round * c, steps, updates, steps * 5e-6)

    fakes = iter([ran(100, 10, runs[0].updates_per_round), ran(100, 80, runs[1].updates_per_round),
                  ran(100, 40, runs[2].updates_per_round)])
    monkeypatch.setattr(loop_overhead, "_loop_of_run", lambda algo, steps, out_dir: (next(fakes), plan, 1.0))
    alone = {ENV_STEP: 3e-6, LEARNER_UPDATE: 0.0}     # the env steps took 5 us a call, 3 us alone
    work = time_loop_work("on_policy", alone=lambda kernel, variant: alone.get(str(kernel.kind), 0.0))
    assert (work.per_step, work.per_update, work.per_round) == (pytest.approx(a), pytest.approx(b), pytest.approx(c))
    assert work.in_loop[ENV_STEP] == pytest.approx(2e-6) and work.in_loop[LEARNER_UPDATE] == 0.0
    # noise that would make a term negative leaves it at 0 (non-negative least squares), never below
    fakes = iter([_Ran(0.004, 100, 10), _Ran(0.0039, 100, 80), _Ran(0.004, 100, 40)])
    work = time_loop_work("on_policy")
    assert min(work.per_step, work.per_update, work.per_round) >= 0.0 and work.in_loop == {}


def test_what_a_round_costs_the_calls_after_it_is_charged_per_round_not_with_every_call(monkeypatch):
    """The calibration configs run a round every 1-4 env steps, the README job's every 256: the fused inference's
    re-pack of the weights a round changed, charged as a mean per call, came with every call (+31 us where the README
    run measured +6.5 us) and its whole-run prediction was 0.76-0.84 of what it measured."""
    import pearl_py.profile.loop_overhead as loop_overhead

    runs = family_named("off_policy").calibration_runs()    # 1, 4 and 1 updates a round of 4, 4 and 1 env steps
    plan = loop_overhead.calibration_plan(runs[0].algorithm)
    a, b, c = 30e-6, 10e-6, 150e-6                           # the loop's own work per step, per update, per round
    per_call, per_round = 6.5e-6, 90e-6                      # the inference's excess over its 5 us alone

    def ran(steps: int, rounds: int, updates_per_round: int, share: float) -> tuple[_Ran, object, float]:
        """A run that had a core ``share`` of its wall time (other processes took the rest)."""
        updates = rounds * updates_per_round
        return _Ran((steps * a + updates * b + rounds * c) / share, steps, updates,
                    inference_s=(steps * (5e-6 + per_call) + rounds * per_round) / share), plan, share

    for share in (1.0, 0.25):     # a quiet machine; one where the runs had a core a quarter of their wall time
        fakes = iter([ran(6_000, 1_250, 1, share), ran(6_000, 1_250, 4, share), ran(6_000, 5_000, 1, share)])
        monkeypatch.setattr(loop_overhead, "_loop_of_run", lambda algo, steps, out_dir: next(fakes))
        work = time_loop_work("off_policy", alone=lambda kernel, variant: 5e-6 if kernel.kind == INFERENCE else 0.0)
        assert work.in_loop[INFERENCE] == pytest.approx(per_call)        # the mean over the runs' calls: 44 us
        assert work.in_round[INFERENCE] == pytest.approx(per_round)
        assert (work.per_step, work.per_update, work.per_round) == (pytest.approx(a), pytest.approx(b),
                                                                    pytest.approx(c + per_round))
    # the README job (a round of 128 updates every 256 steps) is charged the round's cost once a round
    calibration = _timed(off_policy=(work.per_step, work.per_update, work.per_round))
    calibration.meta[IN_LOOP_KEY] = {"off_policy": work.in_loop}
    estimator, cpu = Estimator(calibration), pearl.Platform.local().by_kind("cpu")[0]
    protocol = pearl.DQN("CartPole-v1", train_freq=256, gradient_steps=128).protocol(serialized=True)
    inference, update = protocol.by_kind(INFERENCE)[0], protocol.by_kind(LEARNER_UPDATE)[0]
    assert estimator.cost(inference, cpu).latency_s - estimator.kernel_cost(inference, cpu).latency_s == \
        pytest.approx(per_call)
    assert update.rate * estimator.cost(update, cpu).loop_s == pytest.approx((b * 128 + c + per_round) / 256)


def test_a_calibrated_cpu_adds_each_kinds_in_loop_excess():
    calibration = _timed(off_policy=(20e-6, 5e-6))
    calibration.meta[IN_LOOP_KEY] = {"off_policy": {ENV_STEP: 8e-6, LEARNER_UPDATE: 40e-6}}
    timed = Estimator(calibration)
    protocol = pearl.DQN("CartPole-v1").protocol()
    local = pearl.Platform.local().by_kind("cpu")[0]
    for kind, excess, loop in ((ENV_STEP, 8e-6, 20e-6), (LEARNER_UPDATE, 40e-6, 5e-6)):
        kernel = protocol.by_kind(kind)[0]
        cost = timed.cost(kernel, local)
        assert cost.latency_s == pytest.approx(timed.kernel_cost(kernel, local).latency_s + excess + loop)
        assert cost.detail["in_loop"] == pytest.approx(excess)
    # a catalogue CPU is not this machine: its costs take no excess measured here
    other = pearl.Platform.load("pearl-cpu-gpu-fpga").by_kind("cpu")[0]
    kernel = protocol.by_kind(ENV_STEP)[0]
    assert timed.cost(kernel, other).latency_s == pytest.approx(timed.kernel_cost(kernel, other).latency_s + 20e-6)


def test_a_serial_run_times_its_loop_work_and_the_parts_add_up_to_its_training_time():
    algo = pearl.DQN("CartPole-v1", net_arch=[16], learning_starts=200, batch_size=16, buffer_size=1_000)
    result = pearl.train(algo, total_steps=600, seed=0, eval_episodes=0, progress=False, log=lambda line: None)
    loop = result.kernel_times[LOOP_WORK]
    assert loop["calls"] == 600  # one per vector step of the one env
    assert loop["total_s"] > 0
    assert (loop["source"], loop["label"]) == ("derived", "derived: training time minus the timed kernels")
    total = sum(t["total_s"] for t in result.kernel_times.values())
    assert total == pytest.approx(result.wall_seconds, rel=1e-6)


def test_the_report_sets_the_measured_loop_beside_the_predicted_one():
    algo = pearl.DQN("CartPole-v1", learning_starts=0, train_freq=4)
    p = plan(algo.protocol(serialized=True), pearl.Platform.local(), estimator=Estimator(_timed(
        off_policy=(20e-6, 40e-6))), horizon=1_000, pareto_points=2)
    env_cost = p.prediction.cost(ENV_STEP, p.placements[ENV_STEP].device, p.placements[ENV_STEP].variant)
    run = {"env_steps": 1_000, "kernel_times": {
        ENV_STEP: {"calls": 1_000, "total_s": 1_000 * (env_cost.latency_s - env_cost.loop_s), "mean_s": 1e-5},
        LOOP_WORK: {"calls": 1_000, "total_s": 1_000 * 45e-6, "mean_s": 45e-6}}}
    rows = {row[0]: row for row in measured.kernel_rows(p, run)}
    assert rows[ENV_STEP][-1] == "1.00×"            # the env step alone, as the executor times it
    loop = next(row for name, row in rows.items() if name.startswith(LOOP_WORK))
    # per vector step: 20 us with the step, 40 us with every 4th step's update
    assert loop[2] == "30.0 us (calibrated)" and loop[-1] == "1.50×"
    assert loop[3] == "45.0 us (derived: training time minus the timed kernels)"   # a remainder, not a timing
    # a parallel run's loops are not timed: predicted, not measured
    del run["kernel_times"][LOOP_WORK]
    loop = next(row for row in measured.kernel_rows(p, run) if row[0].startswith(LOOP_WORK))
    assert loop[3].startswith("not measured") and loop[-1] == "–"


@pytest.mark.parametrize(("edit", "message"), [
    (lambda text: re.sub(r"\n  loop_per_step_us:.*", "", text), "cpu: missing required key 'loop_per_step_us'"),
    (lambda text: text.replace("  round_trip_us: 50.0", "  round_trip_us: fast"),
     "cpu.round_trip_us: must be a number >= 0, got 'fast'"),
    (lambda text: text.replace("  process_start_s: 2.5", "  process_start_s: -1"),
     "cpu.process_start_s: must be a number >= 0, got -1"),
])
def test_a_bad_assumed_figure_in_the_roofline_file_is_refused_at_its_line(tmp_path, edit, message):
    from pearl_py.errors import UserError
    from pearl_py.estimate.roofline import RooflineParams
    from pearl_py.resources import estimators_dir

    path = tmp_path / "roofline.yaml"
    path.write_text(edit((estimators_dir() / "roofline.yaml").read_text()))
    with pytest.raises(UserError) as refused:
        RooflineParams.load(path)
    assert re.fullmatch(rf"{re.escape(str(path))}:\d+: {re.escape(message)}", str(refused.value)), str(refused.value)
