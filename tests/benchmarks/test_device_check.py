"""benchmarks/device_check.py --dry-run: every step of the GPU machine's check runs on this CPU and lands in one
JSON with its status, beside one log and one tarball (the lent machine's $OUT takes at most 8 files)."""
from __future__ import annotations

import importlib.util
import json
import tarfile
from pathlib import Path

import device_check
import pytest


@pytest.mark.slow   # about two minutes of subprocesses on 2 cores: CI's slow stage runs it
def test_the_dry_run_runs_every_step_and_writes_three_files(tmp_path):
    module = device_check
    assert module.main(["--dry-run", "--out", str(tmp_path), "--budget", "900"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["device_check.json", "device_check.log", "runs.tar.gz"]
    record = json.loads((tmp_path / "device_check.json").read_text())
    assert record["dry_run"] is True and list(record["steps"]) == list(module.STEPS) == list("bacdfge")
    sb3 = importlib.util.find_spec("stable_baselines3") is not None
    for name, step in record["steps"].items():
        expected = "skipped" if name == "e" and not sb3 else "ok"
        assert step["status"] == expected, (name, step.get("summary"))
        assert step["summary"] and step["seconds"] > 0
    if not sb3:
        assert "stable_baselines3 is not installed" in record["steps"]["e"]["summary"]
    assert {r["algorithm"] for r in record["steps"]["a"]["runs"]} == {"dqn", "ppo"}
    assert all(not r["problems"] for r in record["steps"]["a"]["runs"])
    assert set(record["steps"]["d"]["runs"]) == {"dqn_minatar", "sac_pendulum"}
    assert [(r["config"], r["actors"]) for r in record["steps"]["f"]["rows"]] == [
        ("ppo_cartpole", 1), ("ppo_cartpole", 2), ("dqn_cartpole", 1)]
    log = (tmp_path / "device_check.log").read_text()
    assert all(f"===== step {name}:" in log for name in module.STEPS)
    with tarfile.open(tmp_path / "runs.tar.gz") as tar:
        names = tar.getnames()
    assert "runs/d_sac_pendulum/result.json" in names and any(n.startswith("cache/calibration-") for n in names)


LENT = Path(__file__).parents[2] / "benchmarks" / "results" / "device_check_h200_2026-11-27"


def test_step_f_is_predicted_again_from_the_calibration_a_lent_machine_brought_back(capsys):
    """docs/gpu.md's actor-scaling table: the model's figures from the H200's calibration on its 16 cores."""
    assert device_check.main(["--predict-actors", str(LENT / "calibration.json"), "--cores", "16"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if "samples/s predicted" in line]
    predicted = {(r[0], int(r[1])): float(r[3]) for r in rows}
    assert list(predicted) == [(c, n) for c in ("ppo_cartpole", "dqn_cartpole") for n in (1, 2, 4, 8, 14)]
    assert predicted[("ppo_cartpole", 1)] == pytest.approx(21_966, rel=0.01)
    assert predicted[("dqn_cartpole", 14)] == pytest.approx(4_657, rel=0.01)


@pytest.mark.parametrize("argv", [["--predict-actors", "no/such/calibration.json"],
                                  ["--predict-actors", str(LENT / "calibration.json"), "--cores", "0"]])
def test_predict_actors_refuses_a_missing_calibration_or_no_cores(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        device_check.main(argv)
    assert exit_.value.code == 2
    assert "--predict-actors needs a calibration file" in capsys.readouterr().err
