"""A run's report lists its corrections and marks the switches on the learning curve."""
from __future__ import annotations

import dataclasses

import pearl_py as pearl
from pearl_py.estimate import Estimator
from pearl_py.optimize.api import plan
from pearl_py.report.html import render_html
from pearl_py.report.markdown import render_markdown
from pearl_py.runtime.monitor import Correction
from pearl_py.runtime.result import RunResult

SWITCH = Correction(step=7_168, updates=3_584, kernel="learner_update", change="learner threads 2 -> 1", switched=True,
                    before={"threads": 2}, after={"threads": 1}, predicted_s=356e-6, measured_s=738e-6,
                    retimed_s={"2 threads": 741e-6, "1 thread": 434e-6}, ratio=0.58, reason="samples/s 58% of ...")


def test_the_report_has_a_corrections_section_and_a_mark_on_the_curve():
    dqn = plan(pearl.DQN("CartPole-v1").protocol(), "pearl-cpu-gpu-fpga", estimator=Estimator(use_cache=False))
    result = RunResult(algorithm="dqn", env="CartPole-v1", seed=1, env_steps=50_000, gradient_steps=25_000,
                       wall_seconds=20.0, eval_returns=[500.0], plan=dqn.to_dict(), corrections=[SWITCH],
                       prediction_as_executed={"samples_per_s": 2_600.0, "extra_s": 3.0, "source": "modelled"})
    run = result.to_dict() | {"learning_curve": [(1_000, 10.0), (20_000, 150.0), (50_000, 500.0)]}
    markdown = render_markdown(dqn, run)
    assert "## Corrections during the run" in markdown
    assert "| 7,168 | 3,584 | learner threads 2 -> 1 | 356.0 us | 738.0 us | 2 threads 741.0 us; 1 thread 434.0 us | 58% |" \
        in markdown
    assert "2,600 samples/s of training" in markdown
    assert "learner threads 2 -&gt; 1</text>" in render_html(dqn, run)   # the mark on the learning curve


def test_a_run_without_corrections_has_no_such_section():
    dqn = plan(pearl.DQN("CartPole-v1").protocol(), "pearl-cpu-gpu-fpga", estimator=Estimator(use_cache=False))
    result = RunResult(algorithm="dqn", env="CartPole-v1", seed=1, env_steps=50_000, gradient_steps=25_000,
                       wall_seconds=20.0, eval_returns=[500.0], plan=dqn.to_dict())
    assert "Corrections" not in render_markdown(dqn, result.to_dict())


def test_a_mode_correction_reads_per_env_step():
    from pearl_py.report.corrections import MODE as REPORT_MODE, rows
    from pearl_py.runtime.monitor import MODE
    assert REPORT_MODE == MODE
    mode = Correction(step=1_100, updates=180, kernel=MODE, change="mode serialized -> overlapped (1 actor)",
                      switched=True, before={"mode": "serialized"}, after={"mode": "overlapped", "actors": 1},
                      predicted_s=2.4e-3, measured_s=4.4e-3, retimed_s={"overlapped (1 actor)": 2.4e-3}, ratio=0.55,
                      reason="...")
    row = rows({"corrections": [dataclasses.asdict(mode), dataclasses.asdict(SWITCH)]})
    assert row[0][3:6] == ["2.4 ms per env step", "4.4 ms per env step", "overlapped (1 actor) 2.4 ms per env step"]
    assert row[1][3] == "356.0 us"   # a kernel's correction stays per call
