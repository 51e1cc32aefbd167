"""Calibration at more than one thread (the learner update's) and how the estimator costs it."""
from __future__ import annotations

import contextlib
import dataclasses

import pytest
import torch

import pearl_py as pearl
from pearl_py.estimate import Calibration, Estimator
from pearl_py.profile import profiler
from pearl_py.profile.microbench import OFF_POLICY
from pearl_py.estimate.calibration import model_key
from pearl_py.estimate.cost import Infeasible
from pearl_py.estimate.fit import FittedModel
from pearl_py.profile.load import LoadProbe, LoadSample
from pearl_py.profile.microbench import BenchPoint
from pearl_py.platform import Platform

NET = ("flops", "bytes", "ops")


def test_model_keys_name_the_thread_count():
    assert model_key("learner_update", "fused") == "learner_update/fused"
    assert model_key("learner_update", "fused", threads=2) == "learner_update/fused@2threads"


def test_thread_counts_follow_the_cores_and_the_threaded_variants(monkeypatch):
    monkeypatch.setattr(profiler, "usable_cores", lambda: 8)
    assert profiler.thread_counts("learner_update", "fused", OFF_POLICY) == [2]           # at most MAX_THREADS
    assert profiler.thread_counts("learner_update", "compiled", OFF_POLICY) == []
    assert profiler.thread_counts("inference", "fused", OFF_POLICY) == []
    monkeypatch.setattr(profiler, "usable_cores", lambda: 1)
    assert profiler.thread_counts("learner_update", "fused", OFF_POLICY) == []


class IdleMachine(LoadProbe):
    """A probe that sees no other process (the load rule is tested in tests/workflow/test_calibration_load.py)."""

    @contextlib.contextmanager
    def timing(self, threads: int = 1):
        yield LoadSample(threads=threads, spare_cores=self.usable_cores - threads, others_cores=0.0)


def test_profile_fits_a_model_per_thread_count_and_restores_the_threads(monkeypatch):
    points = [BenchPoint("learner_update", algo="dqn", width=16, batch=8),
              BenchPoint("learner_update", algo="dqn", width=32, batch=16),
              BenchPoint("learner_update", algo="ddpg", width=16, batch=8),
              BenchPoint("learner_update", algo="ddpg", width=32, batch=16),
              BenchPoint("learner_update", algo="dqn", width=64, batch=32)]
    monkeypatch.setattr(profiler, "calibration_grid",
                        lambda kind, quick=False, variant="reference", **grid: points)
    monkeypatch.setattr(profiler, "variants", lambda kind, family="off_policy": ["reference"])
    monkeypatch.setattr(profiler, "families", lambda kind: ["off_policy"])
    monkeypatch.setattr(profiler, "usable_cores", lambda: 2)
    monkeypatch.setattr(profiler, "THREAD_PASSES", 1)
    before = torch.get_num_threads()
    lines: list[str] = []
    cal = profiler.profile(kinds=("learner_update",), log=lines.append, probe=IdleMachine(2))
    assert torch.get_num_threads() == before
    assert set(cal.models) == {"learner_update/reference", "learner_update/reference@2threads"}
    assert cal.meta["threaded"] == {"learner_update/reference": [1, 2]}
    assert any(line.startswith("learner_update/reference@2threads") for line in lines)
    # each model's spread: its points' p90 over median, and a threaded variant's slowdown beside a light neighbour
    spread = cal.meta["spread"]
    assert set(spread) == {"learner_update/reference", "learner_update/reference@2threads"}
    assert all(entry["p90_over_median"] >= 1.0 and entry["light_neighbour"] > 0 for entry in spread.values())
    assert any("beside a light neighbour" in line for line in lines)
    # the cache round-trips the new keys; a cache without them still loads
    assert set(Calibration.from_dict(cal.to_dict()).models) == set(cal.models)


def calibration(threaded: bool) -> Calibration:
    models = {model_key("learner_update", "fused"): FittedModel("linear", NET, (2e-3, 1e-11, 0, 0), "flops")}
    if threaded:
        models[model_key("learner_update", "fused", threads=2)] = FittedModel("linear", NET, (1e-3, 6e-12, 0, 0),
                                                                              "flops")
    return Calibration("test", models)


@pytest.fixture(scope="module")
def cpu():
    device = Platform.local().device("cpu")
    return dataclasses.replace(device, spec=dataclasses.replace(device.spec, cores=2))


def test_the_estimator_costs_calibrated_thread_counts_only(cpu):
    kernel = pearl.DDPG("Pendulum-v1").protocol().kernel("learner_update")
    threaded = Estimator(calibration(threaded=True))
    assert threaded.thread_counts(kernel, cpu, "fused") == [1, 2]
    assert threaded.thread_counts(kernel, cpu, "reference") == [1]
    one, two = threaded.cost(kernel, cpu, "fused"), threaded.cost(kernel, cpu, "fused", threads=2)
    assert two.latency_s < one.latency_s and two.source == "calibrated" and two.resources["cores"] == 2
    assert threaded.thread_note(kernel, cpu) is None
    with pytest.raises(Infeasible, match="threads"):
        threaded.cost(kernel, cpu, "reference", threads=2)
    old = Estimator(calibration(threaded=False))
    assert old.thread_counts(kernel, cpu, "fused") == [1]
    assert "predates threaded calibration" in old.thread_note(kernel, cpu)
    refused = calibration(threaded=False)
    refused.meta = {"threaded": {}, "load": {"refused": {"learner_update/fused@2threads": "3 of 8 points distorted: "
                                                         "other processes kept up to 1.6 cores busy"}}}
    assert Estimator(refused).thread_note(kernel, cpu) == (
        "learner_update: one thread only on cpu: `pearl profile` refused its model at 2 or more threads for load "
        "(learner_update/fused@2threads: 3 of 8 points distorted: other processes kept up to 1.6 cores busy); "
        "profile again on an idle machine for threaded plans")
    deferred = calibration(threaded=False)
    deferred.meta = {"threaded": {}, "deferred": {"learner_update/fused@2threads": "it cannot win"}}
    assert Estimator(deferred).thread_note(kernel, cpu) == (
        "learner_update: one thread only on cpu: the first run's calibration deferred its model at 2 or more threads "
        "(learner_update/fused@2threads: it cannot win); a run it could win in calibrates it first")
    catalogue = Platform.load("pearl-cpu-gpu-fpga").device("cpu")
    assert old.thread_counts(kernel, catalogue, "fused") == [1]


def test_the_neighbour_process_runs_meanwhile_and_stops():
    """No timing, no counting of other processes: only this neighbour's own process and events, so load can
    only make it slower, never fail it (it waits up to READY_TIMEOUT_S to start and STOP_TIMEOUT_S to stop)."""
    from pearl_py.profile.neighbour import neighbour

    with neighbour("actor") as beside:
        assert beside.ready.is_set()  # entered only once the neighbour's loop had begun: start-up is never timed
        assert beside.process.is_alive()
    assert not beside.process.is_alive() and beside.process.exitcode == 0
    with pytest.raises(ValueError, match="neighbour kind"), neighbour("busy"):
        pass


def test_a_neighbour_that_does_not_start_in_time_stops_the_measurement():
    from pearl_py.profile.neighbour import neighbour

    refused = pytest.raises(RuntimeError, match="did not start within 0 s")
    with refused, neighbour("actor", ready_timeout_s=0.0) as beside:  # a spawned interpreter is never ready at once
        pytest.fail(f"entered without the neighbour ready: {beside}")


def spread_calibration(beside_one: float, beside_two: float) -> Calibration:
    """Two threads 15% faster alone than one (as the README job's learner: 356 vs 432 us), and how each ran beside a
    light neighbour."""
    cal = calibration(threaded=True)
    cal.models[model_key("learner_update", "fused")] = FittedModel("linear", NET, (432e-6, 0, 0, 0), "flops")
    cal.models[model_key("learner_update", "fused", threads=2)] = FittedModel("linear", NET, (0.85 * 432e-6, 0, 0, 0),
                                                                              "flops")
    cal.meta["spread"] = {model_key("learner_update", "fused"): {"p90_over_median": 1.02, "light_neighbour": beside_one},
                          model_key("learner_update", "fused", threads=2): {"p90_over_median": 1.1,
                                                                            "light_neighbour": beside_two}}
    return cal


def test_a_threaded_cost_is_valued_beside_a_light_neighbour_unless_the_machine_is_dedicated(cpu):
    kernel = pearl.DQN("CartPole-v1").protocol().kernel("learner_update")
    shared = Estimator(spread_calibration(1.0, 2.0))
    # 2 threads: 15% faster alone, 2x slower beside the neighbour: (1 + 2) / 2 x 0.85 = 1.275x the one thread's cost
    assert shared.kernel_cost(kernel, cpu, "fused", threads=2).latency_s == pytest.approx(1.275 * 432e-6)
    assert shared.kernel_cost(kernel, cpu, "fused").latency_s == pytest.approx(432e-6)
    dedicated = Estimator(spread_calibration(1.0, 2.0), dedicated=True)
    assert dedicated.kernel_cost(kernel, cpu, "fused", threads=2).latency_s == pytest.approx(0.85 * 432e-6)
    assert Calibration.from_dict(spread_calibration(1.0, 2.0).to_dict()).spread("learner_update", "fused", 2) \
        .light_neighbour == 2.0
    unmeasured = Estimator(calibration(threaded=True))   # a calibration from before spreads: costed alone
    assert unmeasured.expected_factor(kernel, "fused", 2) == 1.0


@pytest.mark.skipif(Platform.local().device("cpu").parallel_units < 2, reason="thread counts need 2 cores")
def test_the_plan_takes_one_thread_when_two_are_fragile_and_says_why():
    from pearl_py.optimize.api import plan

    protocol = pearl.DQN("CartPole-v1", batch_size=64, net_arch=[256, 256]).protocol(serialized=True)
    local = Platform.local()
    pins = {"constraints": {"pin": {k.name: "cpu" for k in protocol.kernels()}}}
    chosen = plan(protocol, local, "throughput", pins["constraints"], estimator=Estimator(spread_calibration(1.0, 2.0)),
                  pareto_points=2)
    assert chosen.placements["learner_update"].replicas == 1
    [sentence] = [s for s in chosen.prediction.threads if "light neighbour" in s]
    assert "1 thread chosen, though 2 threads are 18% faster alone" in sentence
    assert "2 threads 551 us" in sentence       # 1.275 x 432 us, the value the optimizer weighed
    dedicated = plan(protocol, local, "throughput", pins["constraints"],
                     estimator=Estimator(spread_calibration(1.0, 2.0), dedicated=True), pareto_points=2)
    assert dedicated.placements["learner_update"].replicas == 2
    assert any("declared dedicated: valued alone, 2 threads chosen" in s for s in dedicated.prediction.threads)


def test_the_light_neighbour_is_timed_at_the_smallest_middle_and_largest_points_of_the_runs_grid():
    grid = profiler.calibration_grid("learner_update", True, "fused", family=OFF_POLICY, networks=("mlp",))
    assert len(grid) == 18 and not any(p.frames for p in grid)
    smallest, middle, largest = profiler.light_points(grid)
    assert (smallest.width, smallest.batch) == (32, 32) and (largest.width, largest.batch) == (400, 256)
    assert smallest.batch * smallest.width ** 2 < middle.batch * middle.width ** 2 < largest.batch * largest.width ** 2
    assert profiler.light_points(grid[:2]) == grid[:2]
    threaded_here = profiler.usable_cores() > 1
    assert profiler.light_windows("learner_update", "fused", "off_policy", grid) == (18 if threaded_here else 0)
    assert profiler.light_windows("inference", "fused", "off_policy", grid) == 0


def test_a_point_whose_passes_settle_its_median_is_not_timed_again(monkeypatch):
    """Five passes (a threaded phase's): the steady point stops after three, the one switching speeds runs all."""
    points = [BenchPoint("learner_update", width=16), BenchPoint("learner_update", width=32)]
    monkeypatch.setattr(profiler, "build", lambda kind, variant, point, family: (point, point))
    figures = {16: iter([1.0, 1.01, 0.99]), 32: iter([1.0, 1.3, 1.0, 1.3, 1.0])}
    timed = []
    monkeypatch.setattr(profiler, "_timed", lambda call, *rest: timed.append(call.width) or next(figures[call.width]))
    spread: list[tuple[float, float]] = []
    measured = profiler.measure("learner_update", "reference", points, passes=5, spread=spread,
                                family=OFF_POLICY)
    assert timed.count(16) == 3 and timed.count(32) == 5
    assert [seconds for _, seconds in measured] == [0.99, 1.0]   # one thread: each keeps its fastest pass
    assert profiler.settled([1.0, 1.04, 0.96]) and not profiler.settled([1.0, 1.06, 1.0])


@pytest.mark.parametrize("figures, kept, timings", [
    ([1.3], 1.3, 1),          # a slowdown: kept as timed
    ([0.97], 1.0, 1),         # noise about 1: kept as 1, not timed again
    ([0.65, 1.2], 1.2, 2),    # below 1: timed again, the second figure holds
    ([0.65, 0.18], 1.0, 2),   # below 1 twice: kept as 1 and said so
])
def test_a_slowdown_below_one_beside_the_light_neighbour_is_timed_again_then_kept_as_one(monkeypatch, figures, kept,
                                                                                           timings):
    monkeypatch.setattr(profiler, "usable_cores", lambda: 2)
    calls = iter(figures)
    timed = []
    monkeypatch.setattr(profiler, "light_neighbour_slowdown",
                        lambda *args, **kwargs: timed.append(1) or next(calls))
    lines: list[str] = []
    grid = profiler.calibration_grid("learner_update", True, "fused", family=OFF_POLICY, networks=("mlp",))
    entry = profiler.spread_entry("learner_update", "fused", 2, "off_policy", [(1.0, 1.1)], lines.append, grid)
    assert entry["light_neighbour"] == kept and len(timed) == timings
    warning = [line for line in lines if line.startswith("warning:")]
    assert warning == ([] if figures[-1] >= 1 or len(figures) == 1 else [
        "warning: learner_update/fused@2threads ran faster beside a light neighbour than alone, twice (0.65x, then "
        "0.18x): other processes' load changed between its windows; kept as 1.00x"])
