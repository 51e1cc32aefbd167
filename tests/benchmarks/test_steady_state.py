"""benchmarks/steady_state.py reads a run's folder: the lent H200's MinAtar run, committed with its train.csv."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]
SCRIPT = ROOT / "benchmarks" / "steady_state.py"
MINATAR = ROOT / "benchmarks" / "results" / "device_check_h200_2026-11-27" / "d_dqn_minatar"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT)


def test_the_steady_state_leaves_the_first_window_out_and_sits_beside_the_plans_prediction():
    out = run(str(MINATAR))
    assert out.returncode == 0, out.stderr
    rows = {line.split()[0]: line.split() for line in out.stdout.splitlines()[2:]}
    assert set(rows) == {"env_step", "inference", "replay_insert", "replay_sample", "learner_update", "param_sync"}
    # the first window's 770 ms replay_sample (numba's compile) and 428 ms update (CUDA's start) are left out
    assert rows["replay_sample"][4:] == ["49.6", "8.6", "(c)", "5.74x"]
    assert rows["learner_update"][4:] == ["2350.2", "2098.9", "(c)", "1.12x"]
    assert rows["inference"][1:4] == ["cpu", "/", "reference"]


def test_a_folder_without_a_run_is_refused_by_name(tmp_path):
    out = run(str(tmp_path))
    assert out.returncode == 2
    assert f"{tmp_path}: no result.json or train.csv" in out.stderr
