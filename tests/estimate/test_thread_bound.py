"""A threaded model is calibrated only where its lower bound (one thread's time over the threads) can beat the
fastest one-thread variant on the run's own learner workloads; a later run it could win tops the cache up."""
from __future__ import annotations

import contextlib
import math

import pearl_py as pearl
from pearl_py.estimate.calibration import Calibration, model_key
from pearl_py.estimate.fit import FittedModel
from pearl_py.estimate.thread_bound import threads_can_win
from pearl_py.pipeline.planning import CalibrationNeeds
from pearl_py.profile import profiler
from pearl_py.profile.load import LoadProbe, LoadSample
from pearl_py.profile.microbench import BenchPoint

NET = ("flops", "bytes", "ops")
REFERENCE_2 = "learner_update/reference@2threads"


def learner(width: int, batch: int):
    return pearl.DQN("CartPole-v1", net_arch=[width, width], batch_size=batch).protocol().kernel("learner_update").workload


SMALL, BIG = learner(64, 64), learner(1024, 256)


def crossing_calibration() -> Calibration:
    """Reference and fused at one thread with the same seconds per FLOP; fused's lead is its fixed cost (0.2 ms
    against 1 ms), so reference at 2 threads (at best half its time) wins only where the FLOPs dominate: the
    crossing lies between the small and the big learner."""
    per_flop = 0.6e-3 / math.sqrt(SMALL.flops * BIG.flops)
    return Calibration("test", {model_key("learner_update", "reference"): FittedModel("linear", NET, (1e-3, per_flop, 0, 0), "flops"),
                                model_key("learner_update", "fused"): FittedModel("linear", NET, (2e-4, per_flop, 0, 0), "flops")})


def test_the_bound_rules_a_threaded_variant_out_only_where_a_one_thread_variant_beats_its_perfect_scaling():
    cal = crossing_calibration()
    assert not threads_can_win(cal, "learner_update", "reference", 2, [SMALL], "off_policy")
    assert threads_can_win(cal, "learner_update", "reference", 2, [SMALL, BIG], "off_policy")
    assert threads_can_win(cal, "learner_update", "fused", 2, [SMALL], "off_policy")   # beats its own one thread
    assert threads_can_win(cal, "learner_update", "reference", 2, [], "off_policy")     # nothing to bound
    assert threads_can_win(Calibration("test"), "learner_update", "reference", 2, [SMALL], "off_policy")


class Call:
    """A fake kernel call: ``seconds`` per call, named by its variant."""

    def __init__(self, variant: str, seconds: float) -> None:
        self.variant, self.seconds, self.setup_s = variant, seconds, 0.0


def test_the_first_calibration_times_a_threaded_phase_only_if_it_can_win_and_defers_the_rest(monkeypatch):
    """Reference costs 1 s per GFLOP at one thread, fused 0.3 s: reference at 2 threads is at best 0.5 s, so it is not
    timed; fused at 2 threads (at best 0.15 s) is."""
    points = [BenchPoint("learner_update", algo="dqn", width=w, batch=b) for w, b in ((16, 8), (32, 16), (64, 32))]
    rate = {"reference": 1e-9, "fused": 0.3e-9}
    monkeypatch.setattr(profiler, "calibration_grid", lambda kind, quick=False, variant="reference", **rest: points)
    monkeypatch.setattr(profiler, "variants", lambda kind, family="off_policy": ["reference", "fused"])
    monkeypatch.setattr(profiler, "families", lambda kind: ["off_policy"])
    monkeypatch.setattr(profiler, "usable_cores", lambda: 2)
    monkeypatch.setattr(profiler, "load_average", lambda: 1.0)
    monkeypatch.setattr(profiler, "neighbour", lambda kind: contextlib.nullcontext())
    monkeypatch.setattr(profiler, "light_neighbour_slowdown", lambda *args, **kwargs: 1.2)

    def build(kind, variant, point, family):
        workload = learner(point.width, point.batch)
        return workload, Call(variant, rate[variant] * workload.flops + 1e-5)

    timed: list[tuple[str, int]] = []
    monkeypatch.setattr(profiler, "build", build)
    monkeypatch.setattr(profiler, "_timed", lambda call, clock, n, *rest: timed.append((call.variant, n)) or call.seconds)

    class Idle(LoadProbe):
        @contextlib.contextmanager
        def timing(self, threads: int = 1):
            yield LoadSample(threads=threads, spare_cores=self.usable_cores - threads, others_cores=0.0)

    lines: list[str] = []
    cal = profiler.profile(kinds=("learner_update",), log=lines.append, probe=Idle(2), gpus=False,
                           workloads={"learner_update": [learner(64, 64)]})
    assert set(cal.models) == {"learner_update/reference", "learner_update/fused", "learner_update/fused@2threads"}
    assert timed.count(("reference", 2)) == 0 and timed.count(("fused", 2)) > 0
    assert list(cal.meta["deferred"]) == [REFERENCE_2]
    assert cal.meta["deferred"][REFERENCE_2].startswith("at 2 threads it cannot beat the fastest one-thread variant")
    # one-thread phases first (their models bound the threaded ones); the deferred phase leaves the count then
    assert [line.split(":")[0] for line in lines if line.startswith("[")] == [
        "[1/4] learner_update/reference", "[2/4] learner_update/fused", "[3/3] learner_update/fused@2threads"]
    # `pearl profile` (no run's workloads) times every threaded phase
    timed.clear()
    everything = profiler.profile(kinds=("learner_update",), log=lambda line: None, probe=Idle(2), gpus=False)
    assert REFERENCE_2 in everything.models and timed.count(("reference", 2)) > 0


def test_a_later_run_the_deferred_threaded_model_could_win_tops_the_cache_up_with_it_alone():
    cache = crossing_calibration()
    cache.meta["deferred"] = {REFERENCE_2: "at 2 threads it cannot beat ..."}
    small_run = CalibrationNeeds(("learner_update",), "off_policy", (), ("mlp",), workloads=(("learner_update", SMALL),))
    assert small_run.missing(cache) is None                    # the same bound: nothing to add
    big_run = CalibrationNeeds(("learner_update",), "off_policy", (), ("mlp",), workloads=(("learner_update", BIG),))
    wanted = big_run.missing(cache)
    assert wanted is not None and wanted.only == (REFERENCE_2,)
    phases = profiler.profile_phases(("learner_update",), True, lambda line: None, ("off_policy",), (), ("mlp",),
                                     only=wanted.only)
    if profiler.usable_cores() > 1:
        assert [(variant, n) for _, variant, n, *_ in phases] == [("reference", 2)]   # not its one-thread model
    assert wanted.profile_options()["workloads"] == {"learner_update": [BIG]}
