"""A plan not proven optimal says so where it is summarised: the report's opening, its Solver row, and
``pearl plan``'s output, each with the gap and the bound in the objective's rate."""
from __future__ import annotations

import re

import pytest

import pearl_py as pearl
from pearl_py.cli.plan import plan_main
from pearl_py.estimate import Estimator
from pearl_py.optimize import api
from pearl_py.optimize.api import plan
from pearl_py.report import content
from pearl_py.report.html import render_html
from pearl_py.report.markdown import render_markdown

DQN = {"net_arch": [16], "batch_size": 16}


@pytest.fixture(scope="module")
def greedy_plan():
    """The heuristic alone proves no optimum: its bound is the LP relaxation's."""
    return plan(pearl.DQN("CartPole-v1", **DQN), "pearl-cpu-gpu-fpga", objective="power", solver="heuristic",
                estimator=Estimator(use_cache=False), pareto_points=2)


def _ceiling(bound: float) -> str:
    return f"{1 / bound:,.0f}" if 1 / bound >= 100 else f"{1 / bound:,.2f}"


def test_a_plan_with_a_gap_states_it_and_the_bound_before_any_figure(greedy_plan):
    solver = greedy_plan.prediction.solver
    assert not solver.optimal and solver.gap > 0
    sentence = content.optimality_sentence(greedy_plan)
    reached = f"{greedy_plan.prediction.figures.samples_per_j:,.0f}"
    assert sentence == (f"Not proven optimal: heuristic stopped {100 * solver.gap:.2f}% above the best bound found "
                        f"(at most {_ceiling(solver.bound)} samples/J); this plan reaches {reached} samples/J.")
    markdown = render_markdown(greedy_plan)
    assert sentence in markdown and markdown.index(sentence) < markdown.index("Samples per joule")
    assert sentence in render_html(greedy_plan)
    solver_row = dict(content.summary_rows(greedy_plan))["Solver"]
    assert f"{100 * solver.gap:.2f}% above the best bound found (at most {_ceiling(solver.bound)} samples/J)" \
        in solver_row


def test_a_proven_plan_says_nothing_more():
    proven = plan(pearl.DQN("CartPole-v1", **DQN), "pearl-cpu-gpu-fpga", estimator=Estimator(use_cache=False),
                  pareto_points=2)
    assert proven.prediction.solver.optimal
    assert content.optimality_sentence(proven) == ""
    assert "Not proven optimal" not in render_markdown(proven)


def test_pearl_plan_prints_the_gap_and_the_bound(write_config, tmp_path, capsys, monkeypatch):
    config = write_config("algorithm: dqn\nenv: CartPole-v1\nhyperparameters:\n  batch_size: 16\n  net_arch: [16]\n")
    original = api.plan
    monkeypatch.setattr(api, "plan", lambda *args, **kwargs: original(*args, **kwargs, solver="heuristic"))
    assert plan_main(str(config), "pearl-cpu-gpu-fpga", "power", str(tmp_path / "out")) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].endswith("(heuristic)")
    assert re.match(r"Not proven optimal: heuristic stopped [\d.]+% above the best bound found \(at most [\d,.]+ "
                    r"samples/J\); this plan reaches [\d,.]+ samples/J\.$", lines[-1])
