"""pearl.export_plan: four files, written atomically, self-contained HTML with the required sections."""
from __future__ import annotations

import dataclasses
import json
import re

import pytest
import yaml

import pearl_py as pearl
from pearl_py.errors import ConfigError
from pearl_py.estimate import Estimator
from pearl_py.optimize.api import plan
from pearl_py.plan import Plan
from pearl_py.report import export as export_module


@pytest.fixture(scope="module")
def ddpg_plan():
    return plan(pearl.DDPG("Pendulum-v1").protocol(), "pearl-cpu-gpu-fpga", objective="power",
                estimator=Estimator(use_cache=False))


def test_export_writes_the_plan_and_its_prediction_beside_it_and_both_round_trip(ddpg_plan, tmp_path):
    paths = pearl.export_plan(ddpg_plan, tmp_path / "out")
    assert sorted(p.name for p in paths.values()) == ["plan.json", "plan.yaml", "prediction.json", "report.html",
                                                      "report.md"]
    assert Plan.from_dict(json.loads(paths["json"].read_text())) == ddpg_plan
    what_runs = yaml.safe_load(paths["yaml"].read_text())
    assert set(what_runs) == {"format", "platform", "objective", "solver", "mode", "devices", "placements"}
    assert what_runs["devices"] == {"cpu": "cpu", "gpu": "gpu", "fpga": "fpga"} or set(what_runs["devices"]) <= {
        "cpu", "gpu", "fpga"}
    assert Plan.from_dict(what_runs) == dataclasses.replace(ddpg_plan, prediction=None)
    assert pearl.load_plan(paths["yaml"]) == ddpg_plan  # prediction.json is read from beside it
    (tmp_path / "out" / "prediction.json").unlink()
    assert pearl.load_plan(paths["yaml"]).prediction is None


def test_a_plan_file_of_the_first_format_is_refused_by_name(ddpg_plan, tmp_path):
    old = {"platform": ddpg_plan.platform, "objective": ddpg_plan.objective,
           "placements": {k: dataclasses.asdict(p) for k, p in ddpg_plan.placements.items()},
           "predicted": {"samples_per_s": 1.0}}
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(old))
    with pytest.raises(ConfigError, match=r"plan.yaml:\d+: predicted: a plan of the first format, which this "
                                          r"pearl_py no longer reads; make the plan again with `pearl plan`"):
        pearl.load_plan(tmp_path / "plan.yaml")


def test_html_is_self_contained_and_has_every_section(ddpg_plan, tmp_path):
    page = pearl.export_plan(ddpg_plan, tmp_path)["html"].read_text()
    assert not re.search(r"(src|href)=['\"]?(https?:|//|[\w./-]+\.(js|css|png))", page)
    assert "<script" not in page
    for heading in ("Assignment", "Utilization", "Throughput-power Pareto front", "Cost of each kernel on each device"):
        assert f"<h2>{heading}</h2>" in page
    assert page.count("<svg") == 2
    assert ddpg_plan.prediction.limit in page.replace("&#x27;", "'")
    assert "modelled" in page


def test_markdown_states_limit_sources_and_comparison(ddpg_plan, tmp_path):
    text = pearl.export_plan(ddpg_plan, tmp_path)["markdown"].read_text()
    assert text.startswith("# Plan for pearl-cpu-gpu-fpga: power objective")
    assert ddpg_plan.prediction.limit in text and ddpg_plan.prediction.comparison in text
    assert re.search(r"\| learner_update \| [\d.,]+ \w+ modelled( \(\w+\))? \|", text)


def test_failed_render_leaves_no_partial_report(ddpg_plan, tmp_path, monkeypatch):
    def broken(_plan, _run=None):
        raise RuntimeError("render failed")

    monkeypatch.setattr(export_module, "render_html", broken)
    with pytest.raises(RuntimeError):
        pearl.export_plan(ddpg_plan, tmp_path / "out")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_a_plan_reports_cards_hold_figures_not_sentences(tmp_path):
    whole = plan(pearl.DDPG("Pendulum-v1", learning_starts=1_000), "pearl-cpu-gpu-fpga",
                 estimator=Estimator(use_cache=False), horizon=20_000, pareto_points=2)
    page = pearl.export_plan(whole, tmp_path)["html"].read_text()
    cards = re.findall(r"<div class='card'><span>([^<]*)</span><b>([^<]*)</b></div>", page)
    assert [label for label, _ in cards] == ["Samples per second", "Samples per second, whole run of 20,000 steps",
                                             "Samples per joule", "Average power"]
    assert all(re.fullmatch(r"[\d,.]+( W)?", value) for _, value in cards), cards
