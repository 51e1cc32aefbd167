"""The profile's time left: builds and timed points each at their own pace (no fixed timings: a fake clock)."""
from __future__ import annotations

import pytest

from pearl_py.profile import progress as progress_module
from pearl_py.profile.progress import ProfileProgress


def test_a_phases_building_is_not_read_as_its_first_points_time(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(progress_module.time, "perf_counter", lambda: now[0])
    lines: list[str] = []
    progress = ProfileProgress(total_points=60, phases=2, log=lines.append, every_s=1e9, total_builds=20)
    progress.phase("a", 30)
    for _ in range(10):             # building phase a's 10 kernels: 2 s each (a compile, envs)
        now[0] += 2.0
        progress.built()
    assert progress.left_s() is None                  # no point timed yet: no pace of timing
    now[0] += 0.1
    progress.point()
    # 59 points at 0.1 s and 10 builds of phase b at 2 s; one pace over both would say 59 x 20.1 s
    assert progress.left_s() == pytest.approx(59 * 0.1 + 10 * 2.0)
    for _ in range(29):
        now[0] += 0.1
        progress.point()
    assert progress.left_s() == pytest.approx(30 * 0.1 + 10 * 2.0)
    progress.phase("b", 30)
    assert lines[-1] == "[2/2] b: 30 points (30/60 points done, 0:23 elapsed, about 0:23 left)"


def test_the_breakdown_gives_each_parts_builds_and_points_their_count_and_share(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(progress_module.time, "perf_counter", lambda: now[0])
    progress = ProfileProgress(total_points=6, phases=1, log=lambda line: None, total_builds=2)
    progress.phase("a", 4)
    for seconds, step in ((2.0, progress.built), (1.0, progress.point), (1.0, progress.point)):
        now[0] += seconds
        step()
    progress.part = "light neighbour"
    for seconds, step in ((1.0, progress.built), (0.5, progress.point), (0.5, progress.point)):
        now[0] += seconds
        step()
    assert progress.breakdown(total_s=10.0) == ("grid: 1 builds 20%, 2 points 20%; light neighbour: 1 builds 10%, "
                                                "2 points 10%; the rest (fits, loops, ...) 40%")
    progress.dropped(points=2, builds=1)
    assert (progress.total, progress.total_builds) == (4, 1)


def test_a_compiling_phases_builds_set_the_compile_pace_not_every_builds(monkeypatch):
    """The first-run note's case: the fused update's 40 numba builds (6.8 s of compile and 0.2 s of building each)
    come first; the 246 later builds, 20 of them compiling, are charged 0.2 s each and 6.8 s more for the 20."""
    now = [0.0]
    monkeypatch.setattr(progress_module.time, "perf_counter", lambda: now[0])
    progress = ProfileProgress(total_points=100, phases=2, log=lambda line: None, every_s=1e9, total_builds=286,
                               total_compiled=60)
    progress.phase("learner_update/fused", 50, compiles=True)
    for _ in range(40):
        now[0] += 7.0
        progress.built(compile_s=6.8)
    now[0] += 0.5
    progress.point()
    assert progress.left_s() == pytest.approx(99 * 0.5 + 246 * 0.2 + 20 * 6.8)   # one build pace: 99 x 0.5 + 246 x 7
    progress.phase("env_step/reference", 50)
    now[0] += 0.4
    progress.built(compile_s=0.3)     # a phase that does not compile: its build's seconds are all building
    assert (progress.compiled, progress.left_s()) == (40, pytest.approx(99 * 0.5 + 245 * 8.4 / 41 + 20 * 6.8))
    progress.dropped(points=0, builds=20, compiled=20)
    assert progress.left_s() == pytest.approx(99 * 0.5 + 225 * 8.4 / 41)
