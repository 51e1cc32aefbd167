"""Calibration that stays true: the load rule, pearl profile's progress and warnings, the cache key, --check."""
from __future__ import annotations

import contextlib

import pytest

from pearl_py.cli import main
from pearl_py.profile import check as check_module
from pearl_py.profile import load as load_module
from pearl_py.profile import profiler
from pearl_py.estimate.calibration import (
    Calibration,
    default_path,
    install_key,
    model_key,
)
from pearl_py.estimate.fit import FittedModel
from pearl_py.profile.load import MAX_REPEATS, RULE, LoadProbe, LoadRecord, LoadSample
from pearl_py.profile.microbench import BenchPoint

POINTS = [BenchPoint("learner_update", algo="dqn", width=16, batch=8),
          BenchPoint("learner_update", algo="dqn", width=32, batch=16),
          BenchPoint("learner_update", algo="ddpg", width=16, batch=8),
          BenchPoint("learner_update", algo="ddpg", width=32, batch=16),
          BenchPoint("learner_update", algo="dqn", width=64, batch=32)]


class Machine(LoadProbe):
    """A probe that reports other processes' load from a script: ``busy(threads, attempt) -> cores``."""

    def __init__(self, busy, cores: int = 2) -> None:
        super().__init__(cores)
        self.busy, self.calls = busy, 0

    @contextlib.contextmanager
    def timing(self, threads: int = 1):
        self.calls += 1
        yield LoadSample(threads=threads, spare_cores=self.usable_cores - threads,
                         others_cores=self.busy(threads, self.calls))


def test_the_rule_allows_the_spare_cores_and_half_a_core_more():
    assert not LoadSample(threads=1, spare_cores=1, others_cores=1.5).distorted
    assert LoadSample(threads=1, spare_cores=1, others_cores=1.6).distorted
    assert LoadSample(threads=2, spare_cores=0, others_cores=0.6).distorted
    assert not LoadSample(threads=2, spare_cores=0, others_cores=None).distorted  # unknown: not judged


def test_the_probe_counts_other_processes_cpu_time(monkeypatch):
    busy = iter([100.0, 103.0])   # the machine: 3 CPU seconds busy meanwhile
    own = iter([10.0, 11.0])      # of which this process took 1
    clock = iter([0.0, 2.0])      # over 2 wall seconds: others kept 1 core busy
    monkeypatch.setattr(load_module, "machine_busy_seconds", lambda: next(busy))
    monkeypatch.setattr(load_module, "own_cpu_seconds", lambda: next(own))
    monkeypatch.setattr(load_module.time, "perf_counter", lambda: next(clock))
    with LoadProbe(2).timing(threads=1) as sample:
        pass
    assert sample.others_cores == pytest.approx(1.0) and not sample.distorted


def test_a_distorted_point_is_timed_again_and_recorded_when_it_stays_distorted(monkeypatch):
    monkeypatch.setattr(profiler, "time_call", lambda call, clock: 1.0)
    record = LoadRecord()
    calm_on_third = Machine(lambda threads, attempt: 3.0 if attempt < 3 else 0.0)
    assert profiler._timed(lambda: None, None, 1, calm_on_third, record) == 1.0
    assert (record.points, record.repeats, record.distorted) == (1, 2, 0)
    always = Machine(lambda threads, attempt: 3.0)
    profiler._timed(lambda: None, None, 1, always, record)
    assert (record.points, record.repeats, record.distorted, always.calls) == (2, 2 + MAX_REPEATS, 1, MAX_REPEATS + 1)
    assert record.to_dict()["max_others_cores"] == 3.0


@pytest.fixture
def tiny_profile(monkeypatch):
    monkeypatch.setattr(profiler, "calibration_grid",
                        lambda kind, quick=False, variant="reference", **grid: POINTS)
    monkeypatch.setattr(profiler, "variants", lambda kind, family="off_policy": ["reference"])
    monkeypatch.setattr(profiler, "families", lambda kind: ["off_policy"])
    monkeypatch.setattr(profiler, "usable_cores", lambda: 2)
    monkeypatch.setattr(profiler, "THREAD_PASSES", 1)
    monkeypatch.setattr(profiler, "load_average", lambda: 5.0)
    # the light neighbour's slowdown is really timed; on a loaded machine a figure below 1 would be timed again and
    # its windows counted into the progress totals these tests read (checked_slowdown's own doctest covers that)
    monkeypatch.setattr(profiler, "checked_slowdown", lambda timed, key, log, progress=None, *counts: max(timed(), 1.0))


def test_a_busy_machine_is_named_and_a_distorted_threaded_model_refused(tiny_profile):
    lines: list[str] = []
    busy_beside_two_threads = Machine(lambda threads, attempt: 1.2 if threads == 2 else 0.3)
    cal = profiler.profile(kinds=("learner_update",), log=lines.append, probe=busy_beside_two_threads)
    assert set(cal.models) == {"learner_update/reference"}  # the 2-thread model is refused
    load = cal.meta["load"]
    assert load["rule"] == RULE and load["load_average_start"] == 5.0 and load["usable_cores"] == 2
    assert load["refused"] == {"learner_update/reference@2threads": "point 1 of 5 stayed distorted (timing stopped "
                                                                    "there): other processes kept up to 1.2 cores busy"}
    assert load["models"]["learner_update/reference@2threads"]["points"] == 1   # refused at its first point
    assert load["models"]["learner_update/reference"]["distorted"] == 0
    assert lines[0].startswith("warning: the machine's load average is 5.0 on 2 usable cores")
    # 15 + 5 grid points and, per model, 3 light-neighbour points x 3 windows alone and 3 beside (18); at load 5 on
    # 2 cores the 2-thread phase is expected refused, so it is counted only once it starts
    assert "[1/2] learner_update/reference: 15 points (0/33 points done" in lines[1]
    assert any(line.startswith("[2/2] learner_update/reference@2threads: 5 points (33/56 points done")
               for line in lines)
    assert any(line.startswith("warning: learner_update/reference@2threads refused: point 1 of 5 stayed distorted")
               for line in lines)


def test_a_neighbour_too_slow_to_start_refuses_the_threaded_model_and_the_profile_goes_on(tiny_profile, monkeypatch):
    from pearl_py.profile.neighbour import NeighbourNotStarted

    @contextlib.contextmanager
    def never_starts(kind="actor", ready_timeout_s=120.0):
        raise NeighbourNotStarted(f"the {kind} neighbour process did not start within 120 s: the machine is too busy")
        yield

    monkeypatch.setattr(profiler, "neighbour", never_starts)
    lines: list[str] = []
    cal = profiler.profile(kinds=("learner_update",), log=lines.append, probe=Machine(lambda threads, attempt: 0.0))
    assert set(cal.models) == {"learner_update/reference"}   # the one-thread model kept, without its light figure
    assert "light_neighbour" not in cal.meta["spread"]["learner_update/reference"]
    assert cal.meta["load"]["refused"] == {"learner_update/reference@2threads": "the actor neighbour process did not "
                                                                                "start within 120 s: the machine is too busy"}
    assert any(line.startswith("warning: learner_update/reference not timed beside a light neighbour") for line in lines)
    assert any(line.startswith("warning: learner_update/reference@2threads refused: the actor neighbour") for line in lines)


def test_single_thread_models_keep_distorted_points_flagged(tiny_profile):
    lines: list[str] = []
    cal = profiler.profile(kinds=("learner_update",), log=lines.append, probe=Machine(lambda threads, attempt: 2.5))
    assert "learner_update/reference" in cal.models
    assert cal.meta["load"]["models"]["learner_update/reference"]["distorted"] == 15
    assert any("15 of 15 points stayed distorted by other processes (up to 2.5 cores busy); kept" in line
               for line in lines)


def test_two_installs_or_versions_keep_their_own_calibration(monkeypatch, tmp_path):
    import pearl_py.version

    monkeypatch.setenv("PEARL_CACHE_DIR", str(tmp_path))
    first = default_path()
    assert first.name.endswith(f"-{install_key()}.json") and first.parent == tmp_path
    monkeypatch.setattr(pearl_py.version, "__version__", "99.0")
    assert default_path() != first
    Calibration("x").save(default_path())
    assert Calibration.load(default_path()).meta["pearl_py"]["version"] == "99.0"


def _calibration(scale: float) -> Calibration:
    """A calibration predicting ``scale`` times the seconds the faked re-timing gives (1 ms per call)."""
    model = FittedModel("linear", ("flops",), (scale * 1e-3, 0.0), "flops")
    return Calibration("x", {model_key("learner_update", "reference"): model})


@pytest.mark.parametrize("scale, code, verdict", [(1.1, 0, "the calibration holds"),
                                                  (2.0, 1, "the calibration does not hold")])
def test_profile_check_says_whether_the_cached_calibration_holds(monkeypatch, tmp_path, capsys, scale, code,
                                                                 verdict):
    monkeypatch.setattr(check_module, "measure",
                        lambda kind, variant, points, passes, probe, load, family: [(object(), 1e-3)])
    monkeypatch.setattr(check_module, "workload_features", lambda workload: {"flops": 0.0})
    monkeypatch.setattr(check_module, "usable_cores", lambda: 2)
    path = tmp_path / "cal.json"
    _calibration(scale).save(path)
    assert main(["profile", "--check", "--out", str(path)]) == code
    out = capsys.readouterr().out
    assert verdict in out and "inference/reference                not in the calibration: not checked" in out
    zoo_updates = sum(point.kind == "learner_update" for point in check_module.CHECK_POINTS)
    assert zoo_updates >= 2 and out.count("learner_update/reference ") == zoo_updates  # the zoo learner updates


def test_profile_check_without_a_calibration_exits_2(tmp_path, capsys):
    assert main(["profile", "--check", "--out", str(tmp_path / "none.json")]) == 2
    assert "no calibration to check: run `pearl profile` first" in capsys.readouterr().err


@pytest.mark.slow  # a process-level resume/restart run: CI's slow stage (keeps the default suite under 10 min)
def test_a_threaded_phase_is_in_the_first_eta_only_where_the_load_average_lets_it_run(tiny_profile, monkeypatch):
    monkeypatch.setattr(profiler, "load_average", lambda: 1.2)   # this process and a fifth of a core more
    lines: list[str] = []
    profiler.profile(kinds=("learner_update",), log=lines.append, probe=Machine(lambda threads, attempt: 0.0))
    assert "[1/2] learner_update/reference: 15 points (0/56 points done" in lines[0]
    assert profiler.refusal_expected(2, 2, 5.0) and not profiler.refusal_expected(1, 2, 5.0)
    assert not profiler.refusal_expected(2, 2, None) and not profiler.refusal_expected(2, 4, 2.5)
