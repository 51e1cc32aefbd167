"""No orphan in any phase: a parallel run's process sent SIGINT, SIGTERM or SIGKILL, or one of its actors SIGKILL,
at start-up, mid-run and during a checkpoint leaves no process, no /dev/shm segment, and a complete checkpoint or
none (benchmarks/kill_matrix.py drives each case and prints the table: ``python benchmarks/kill_matrix.py``).

The cases a kill without clean-up code would break run in the fast suite (each is a real run: ~10 s); the
whole matrix is ``slow``.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "kill_matrix.py"
if not _PATH.exists():
    pytest.skip("benchmarks/ is not shipped with an installed package", allow_module_level=True)
_spec = importlib.util.spec_from_file_location("kill_matrix", _PATH)
kill_matrix = importlib.util.module_from_spec(_spec)
sys.modules["kill_matrix"] = kill_matrix  # its dataclasses resolve their module by name
_spec.loader.exec_module(kill_matrix)

EXPECTED = {
    # (phase, signal): (exit code of the run, checkpoint state)
    ("start-up", "SIGINT"): (130, "complete"),
    ("start-up", "SIGTERM"): (130, "complete"),
    ("start-up", "SIGKILL"): (-9, "none"),
    ("start-up", "SIGKILL actor"): (0, "none"),  # restarted; the run finishes
    ("mid-run", "SIGINT"): (130, "complete"),
    ("mid-run", "SIGTERM"): (130, "complete"),
    ("mid-run", "SIGKILL"): (-9, "none"),
    ("mid-run", "SIGKILL actor"): (0, "none"),
    ("checkpoint", "SIGINT"): (130, "none"),  # the second Ctrl-C abandons the checkpoint being written
    ("checkpoint", "SIGTERM"): (130, "none"),
    ("checkpoint", "SIGKILL"): (-9, "none"),  # killed before the commit: the checkpoint file never appears
    ("checkpoint", "SIGKILL actor"): (130, "complete"),
}
FAST = {("start-up", "SIGKILL"), ("checkpoint", "SIGKILL")}
"""Killed while its actor still imports (orphans before the guard), and in the middle of a checkpoint's commit."""


def _case(phase: str, name: str):
    marks = [] if (phase, name) in FAST else [pytest.mark.slow]
    return pytest.param(phase, name, marks=marks, id=f"{phase}-{name.replace(' ', '-')}")


@pytest.mark.parametrize("phase, name", [_case(p, s) for p in kill_matrix.PHASES for s in kill_matrix.SIGNALS])
def test_a_killed_run_leaves_nothing_behind(tmp_path, phase, name):
    outcome = kill_matrix.run_case(phase, name, tmp_path / "run")
    exit_code, checkpoint = EXPECTED[(phase, name)]
    assert outcome.hit, f"the signal missed the {phase} phase"
    assert (outcome.processes_left, outcome.segments_left) == (0, 0)
    assert outcome.exit_code == exit_code
    assert outcome.checkpoint.split(" ")[0] == checkpoint, outcome.checkpoint


def test_the_guard_kills_the_children_of_a_killed_process(tmp_path):
    """The guard alone, without a run: its process SIGKILLed, it kills the watched child and unlinks the segments."""
    script = tmp_path / "parent.py"
    script.write_text(
        "import subprocess, sys, time\n"
        "from pearl_py.runtime.parallel.process import ProcessGuard\n"
        "guard = ProcessGuard.start(sys.argv[1])\n"
        "child = subprocess.Popen(['sleep', '600'])\n"
        "guard.watch(child.pid)\n"
        "open('/dev/shm/' + sys.argv[1] + '-ring0', 'wb').close()\n"
        "print(child.pid, guard.pid, flush=True)\n"
        "time.sleep(600)\n")
    prefix = f"pearl-{os.getpid()}-guardtest"
    parent = subprocess.Popen([sys.executable, str(script), prefix], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(_PATH.parents[1])})
    child, guard = map(int, parent.stdout.readline().split())
    started = time.monotonic() + 10
    while _state(child) == "R" and time.monotonic() < started:   # just forked: running until `sleep` sleeps
        time.sleep(0.01)
    assert Path(f"/dev/shm/{prefix}-ring0").exists() and _state(child) == "S"
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 30
    while (_state(guard) != "gone" or Path(f"/dev/shm/{prefix}-ring0").exists()) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not Path(f"/dev/shm/{prefix}-ring0").exists()
    assert _state(child) == "gone"


def _state(pid: int) -> str:
    """A process's state letter; "gone" once it exited (a zombie counts as gone: it only waits to be reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"
    return "gone" if state in ("Z", "X") else state


def test_the_guard_does_nothing_after_a_clean_end(tmp_path):
    from pearl_py.runtime.parallel.process import ProcessGuard

    prefix = f"pearl-{os.getpid()}-cleanend"
    guard = ProcessGuard.start(prefix)
    child = subprocess.Popen(["sleep", "600"])
    guard.watch(child.pid)
    segment = Path(f"/dev/shm/{prefix}-ring0")
    segment.touch()
    try:
        guard.close()
        assert child.poll() is None and segment.exists()  # "done": the run cleans up after itself
    finally:
        child.kill()
        child.wait()
        segment.unlink()


def test_a_run_sweeps_the_segments_of_killed_runs(caplog):
    """Segments of a run whose process is gone (its guard killed too) are removed by the next run's start."""
    from pearl_py.runtime.parallel.process import sweep_stale_segments

    dead = next(pid for pid in range(4_000_000, 3_000_000, -1) if not Path(f"/proc/{pid}").exists())
    stale, mine = Path(f"/dev/shm/pearl-{dead}-0badc0de-ctl"), Path(f"/dev/shm/pearl-{os.getpid()}-0badc0de-ctl")
    stale.touch()
    mine.touch()
    try:
        with caplog.at_level("WARNING", logger="pearl_py.runtime.parallel"):
            assert stale.name in sweep_stale_segments("pearl")
        assert not stale.exists() and mine.exists()  # a live run's segments stay
        assert "shared-memory segments of runs that were killed" in caplog.text
    finally:
        stale.unlink(missing_ok=True)
        mine.unlink(missing_ok=True)
