"""`pearl run --auto --tune`: real trials of a parallel and a serial plan, then the run; the report shows them.

The directory's conftest asserts that no child process or shared-memory segment outlives the test.
"""
from __future__ import annotations

import json
from html import escape

from pearl_py.cli import main
from pearl_py.estimate.calibration import Calibration, machine_fingerprint
from pearl_py.platform import Platform
from pearl_py.report import tuning

TINY = """
algorithm: dqn
env: CartPole-v1
total_steps: 400
seed: 0
eval_episodes: 1
hyperparameters:
  learning_starts: 100
  train_freq: 50
  gradient_steps: 5
  batch_size: 16
  buffer_size: 2000
  net_arch: [16]
"""


def test_tune_trials_the_top_plans_and_reports_them(write_config, tmp_path, monkeypatch, capsys):
    # a calibration with no fitted model: every cost is modelled, nothing is profiled, the plans are known
    monkeypatch.setenv("PEARL_CACHE_DIR", str(tmp_path / "cache"))
    Calibration(machine_fingerprint()).save()
    out = tmp_path / "out"
    code = main(["run", str(write_config(TINY)), "--auto", "--tune", "--tune-top-k", "2", "--tune-seconds", "0.5",
                 "--out", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "tuning: trying 2 candidate plans for about 0.5 s each" in printed and "tuning: kept plan" in printed

    result = json.loads((out / "result.json").read_text())
    record = result["plan"]["prediction"]["tuning"]
    trials = record["trials"]
    # with two cores or more the overlapped plan runs the actor beside the learner (the model takes the longer of
    # the two processes), so it is predicted faster and tried first; on one core every kernel adds up either way and
    # the serialized protocol, which skips param_sync, comes first
    first = ("parallel", "overlapped") if Platform.local().by_kind("cpu")[0].parallel_units >= 2 else \
        ("serial", "serialized")
    assert [t["rank"] for t in trials] == [1, 2] and (trials[0]["executor"], trials[0]["mode"]) == first
    assert all(t["executor"] == {"overlapped": "parallel", "serialized": "serial"}[t["mode"]] for t in trials)
    assert trials[0]["predicted_samples_per_s"] >= trials[1]["predicted_samples_per_s"] > 0
    assert all(t["predicted_source"] == "modelled" and t["source"] == "measured" for t in trials)
    assert all(t["error"] is None and t["measured_samples_per_s"] > 0 for t in trials)
    assert all(t["window_env_steps"] >= 100 and t["trial_env_steps"] <= 400 for t in trials)
    assert [t["kept"] for t in trials].count(True) == 1
    kept = trials[record["kept"] - 1]
    assert kept["measured_samples_per_s"] == max(t["measured_samples_per_s"] for t in trials)
    assert result["backend"] == {"parallel": "local-parallel", "serial": "serial"}[kept["executor"]]
    assert result["plan"]["placements"] == kept["placements"] and result["env_steps"] == 400
    assert record["top_k"] == 2 and record["seconds"] == 0.5 and record["tuning_s"] > 0

    assert json.loads((out / "prediction.json").read_text())["tuning"]["kept"] == record["kept"]
    report = (out / "report.md").read_text()
    assert f"## {tuning.TITLE}" in report and f"Kept plan {record['kept']} of 2: {record['reason']}" in report
    assert "| 2 | parallel (overlapped) |" in report
    html = (out / "report.html").read_text()
    assert escape(tuning.TITLE) in html and "<tr class='moved'><td>" + str(record["kept"]) in html
