"""A plan not proven optimal says so where it is summarised: the report's opening lines, its Solver row, and
``pearl plan``'s output, each with the gap and the proven bound in the objective's rate."""
from __future__ import annotations

import re

import pytest

import pearl_py as pearl
from pearl_py.estimate import Estimator
from pearl_py.optimize import api
from pearl_py.optimize.api import plan
from pearl_py.optimize.commands import plan_main
from pearl_py.report import content
from pearl_py.report.html import render_html
from pearl_py.report.markdown import render_markdown


@pytest.fixture(scope="module")
def greedy_plan():
    """The heuristic alone proves no optimum: its bound is the LP relaxation's."""
    return plan(pearl.DQN("CartPole-v1", net_arch=[16], batch_size=16), "pearl-cpu-gpu-fpga", objective="power",
                solver="heuristic", estimator=Estimator(use_cache=False), pareto_points=2)


def test_a_plan_with_a_gap_states_it_and_the_bound(greedy_plan):
    solver = greedy_plan.predicted["solver"]
    assert not solver["optimal"] and solver["gap"] > 0
    sentence = content.optimality_sentence(greedy_plan)
    ceiling = f"{1 / solver['bound']:,.0f}" if 1 / solver["bound"] >= 100 else f"{1 / solver['bound']:,.2f}"
    assert sentence.startswith(f"Not proven optimal: heuristic stopped {100 * solver['gap']:.2f}% from the bound; ")
    assert f"no plan exceeds {ceiling} samples/J (proven bound)" in sentence
    assert sentence in render_markdown(greedy_plan) and sentence in render_html(greedy_plan)
    rows = dict(content.summary_rows(greedy_plan))
    assert re.match(rf"heuristic, gap to bound {100 * solver['gap']:.2f}%: no plan exceeds {re.escape(ceiling)} "
                    r"samples/J \(proven bound\), [\d.]+ s$", rows["Solver"])


def test_a_proven_plan_says_nothing_more():
    proven = plan(pearl.DQN("CartPole-v1", net_arch=[16], batch_size=16), "pearl-cpu-gpu-fpga",
                  estimator=Estimator(use_cache=False), pareto_points=2)
    assert proven.predicted["solver"]["optimal"]
    assert content.optimality_sentence(proven) == ""
    assert "Not proven optimal" not in render_markdown(proven)
    assert dict(content.summary_rows(proven))["Solver"].startswith("milp, proven optimal, ")


def test_pearl_plan_prints_the_gap(write_config, tmp_path, capsys, monkeypatch):
    config = write_config("algorithm: dqn\nenv: CartPole-v1\nhyperparameters:\n  batch_size: 16\n  net_arch: [16]\n")
    original = api.plan
    monkeypatch.setattr(api, "plan", lambda *args, **kwargs: original(*args, **kwargs, solver="heuristic"))
    assert plan_main(str(config), "pearl-cpu-gpu-fpga", "power", str(tmp_path / "out")) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].endswith("(heuristic)")
    assert re.match(r"Not proven optimal: heuristic stopped [\d.]+% from the bound; no plan exceeds [\d,.]+ "
                    r"samples/J \(proven bound\), this one reaches [\d,.]+\.$", lines[-1])
