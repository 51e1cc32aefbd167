"""``simulate_main`` (``pearl simulate``): prints simulated figures and adds them, with a timeline, to the report."""
from __future__ import annotations

from pathlib import Path

import pytest

from pearl_py.cli.simulate import simulate_main
from pearl_py.errors import UserError
from pearl_py.plan_file import load_plan

CONFIG = str(Path(__file__).resolve().parents[2] / "examples" / "configs" / "dqn_cartpole.yaml")


def test_simulate_writes_the_report_with_a_timeline(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert simulate_main(CONFIG, "pearl-cpu-gpu-fpga", None, str(tmp_path)) == 0
    printed = capsys.readouterr().out
    assert "simulated" in printed and "samples/s" in printed and "mJ/sample" in printed
    markdown = (tmp_path / "report.md").read_text()
    html = (tmp_path / "report.html").read_text()
    for page in (markdown, html):
        assert "Simulated (discrete-event simulation of this plan)" in page
        assert "<svg" in page.split("Simulated (discrete")[1]  # the Gantt chart follows the section title
        assert "learner_update" in page
    saved = load_plan(tmp_path / "plan.json").prediction.simulation
    assert saved.source == "simulated" and saved.samples_per_s > 0 and saved.timeline


def test_a_saved_plan_is_simulated_on_its_own_platform_only(tmp_path: Path) -> None:
    assert simulate_main(CONFIG, "pearl-cpu-gpu-fpga", None, str(tmp_path / "a")) == 0
    with pytest.raises(UserError, match="made for platform 'pearl-cpu-gpu-fpga', not 'dgx-a100-node'"):
        simulate_main(CONFIG, "dgx-a100-node", str(tmp_path / "a" / "plan.yaml"), str(tmp_path / "b"))
    assert simulate_main(CONFIG, "pearl-cpu-gpu-fpga", str(tmp_path / "a" / "plan.yaml"), str(tmp_path / "c")) == 0
