"""The report of a run answers "did it learn, and with what": the evaluation curve beside the training curve, the
losses and exploration, the hyperparameters, version, date and command; one predicted per-call figure per kernel;
sections that say nothing folded away."""
from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path

import pytest

import pearl_py as pearl

TINY = {"learning_starts": 100, "train_freq": 50, "gradient_steps": 5, "batch_size": 16, "net_arch": [16]}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    argv, sys.argv = sys.argv, ["/somewhere/bin/pearl", "run", "my config.yaml", "--auto"]
    try:
        result = pearl.train(pearl.DQN("CartPole-v1", **TINY), total_steps=1_000, seed=0, out=out, plan="local",
                             eval_episodes=2, eval_freq=250, progress=False, log=lambda line: None)
    finally:
        sys.argv = argv
    return out, result, (out / "report.md").read_text(), (out / "report.html").read_text()


def _section(markdown: str, title: str) -> str:
    """The text of a ``## title`` section of report.md, up to the next one."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", markdown, re.S | re.M)
    assert match, f"no section {title!r}"
    return match.group(1)


def _table(text: str, first_header: str) -> list[list[str]]:
    """The rows of the Markdown table whose header starts with ``first_header``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {first_header} |"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return rows


def test_the_evaluation_curve_is_beside_the_training_curve_with_every_point(run):
    out, result, markdown, html = run
    section = _section(markdown, "Learning curve")
    assert [tuple(r) for r in _table(section, "env steps")] == [
        (f"{p['step']:,}", f"{p['return_mean']:.1f}", f"{p['return_std']:.1f}") for p in result.eval_history]
    assert [p["step"] for p in result.eval_history] == [250, 500, 750, 1000]
    best = max(result.eval_history, key=lambda p: p["return_mean"])
    assert (f"best {best['return_mean']:.1f} at step {best['step']:,}, its networks saved as best_policy.pt "
            "(`pearl eval RUN_DIR --best`") in section
    chart = html[html.index("aria-label='Learning curve (measured)'"):]
    chart = chart[:chart.index("</svg>")]
    assert chart.count("<polyline") == 2 and "periodic evaluation (greedy, mean)" in chart
    assert chart.count("<circle") == len(result.eval_history)       # the evaluations' points; the training curve's
    # 100-point window over more than 40 episodes is a line only


def test_the_losses_and_exploration_come_from_train_csv(run):
    out, _, markdown, html = run
    with (out / "train.csv").open() as f:
        rows = list(csv.DictReader(f))
    section = _section(markdown, "Losses and exploration")
    first, last = rows[0], rows[-1]
    assert (f"- loss_q (measured): {float(first['loss_q']):.4g} at step {int(first['step']):,}, "
            f"{float(last['loss_q']):.4g} at step {int(last['step']):,}") in section
    assert f"- exploration_rate (measured): {float(first['exploration_rate']):.4g} at step" in section
    assert "aria-label='loss_q (measured)'" in html and "aria-label='exploration_rate (measured)'" in html


def test_the_run_configuration_holds_every_hyperparameter_version_and_command(run):
    out, _, markdown, _ = run
    section = _section(markdown, "Run configuration")
    facts = dict(map(tuple, _table(section, "run")))
    assert facts["pearl_py"] == pearl.__version__ and facts["command"] == "pearl run 'my config.yaml' --auto"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", facts["report written"])
    assert (facts["algorithm"], facts["env"], facts["seed"], facts["env steps"]) == ("dqn", "CartPole-v1", "0", "1,000")
    hyper = dict(map(tuple, _table(section, "hyperparameter")))
    saved = json.loads((out / "policy.json").read_text())["config"]
    assert set(hyper) == set(saved)
    assert (hyper["learning_starts"], hyper["train_freq"], hyper["net_arch"], hyper["exploration_final_eps"]) == \
        ("100", "50", "[16]", str(saved["exploration_final_eps"]))


def test_each_kernel_has_one_predicted_per_call_figure_across_the_report(run):
    _, _, markdown, _ = run
    measured = {r[0]: r[2].split(" (")[0] for r in _table(_section(markdown, "Predicted and measured"), "kernel")
                if not r[0].startswith("loop")}
    assigned = {r[0]: r[5] for r in _table(_section(markdown, "Assignment"), "kernel")}
    costed = {r[0]: r[1].split(" ")[0] + " " + r[1].split(" ")[1]
              for r in _table(_section(markdown, "Cost of each kernel on each device"), "kernel")}
    assert measured == assigned == costed and "env_step" in measured


def test_sections_that_say_nothing_are_folded_away(run):
    _, _, markdown, html = run
    # a one-device serialized plan: a single-point front, the power objective's same plan, no energy counter here
    for title in ("Throughput-power Pareto front", "This plan beside the power objective's"):
        assert f"## {title}" not in markdown
        assert f"<details><summary>{title.replace(chr(39), '&#x27;')}</summary>" in html
    assert "CPU/GPU ratio" not in markdown          # one process: no actor cores beside a learner
    assert "## Assignment" in markdown and "<h2>Assignment</h2>" in html


@pytest.mark.slow
def test_the_readme_jobs_report_holds_its_evaluation_curve_hyperparameters_and_best_policy(tmp_path):
    import yaml

    from pearl_py.cli import main

    config = Path(__file__).resolve().parents[2] / "examples" / "configs" / "dqn_cartpole.yaml"
    assert main(["run", str(config), "--out", str(tmp_path / "run")]) == 0
    run = tmp_path / "run"
    markdown = (run / "report.md").read_text()
    evaluations = _table(_section(markdown, "Learning curve"), "env steps")
    assert [r[0] for r in evaluations] == [f"{s:,}" for s in range(5_000, 50_001, 5_000)]
    hyper = dict(map(tuple, _table(_section(markdown, "Run configuration"), "hyperparameter")))
    for key, value in yaml.safe_load(config.read_text())["hyperparameters"].items():
        expected = "[" + ", ".join(map(str, value)) + "]" if isinstance(value, list) else str(value)
        assert hyper[key] == expected, key
    best = json.loads((run / "best_policy.json").read_text())["best_evaluation"]
    assert f"{best['return_mean']:.1f}" == max(evaluations, key=lambda r: float(r[1]))[1]
    policy = pearl.load(run, best=True)
    assert sum(policy.evaluate(10, seed=10_000)) / 10 == pytest.approx(best["return_mean"])
