"""TD3 and SAC through the planning pipeline: protocol, cost models, the assignment, the simulator and the
reports, on a catalogue platform with an FPGA (its learner modelled by the HLS model from the recorded layers)."""
from __future__ import annotations

from pathlib import Path

import pytest

from pearl_py.cli.simulate import simulate_main
from pearl_py.plan_file import load_plan

CONFIGS = Path(__file__).resolve().parents[2] / "examples" / "configs"


@pytest.mark.parametrize("config", ["td3_pendulum.yaml", "sac_pendulum.yaml"])
def test_plan_simulate_and_report(config, tmp_path, capsys):
    assert simulate_main(str(CONFIGS / config), "pearl-cpu-gpu-fpga", None, str(tmp_path)) == 0
    assert "simulated" in capsys.readouterr().out
    plan = load_plan(tmp_path / "plan.json")
    assert set(plan.placements) == {"env_step", "inference", "replay_insert", "replay_sample", "learner_update",
                                    "param_sync"}
    costs = plan.prediction.costs["learner_update"]
    assert costs and all(c.latency_s > 0 for by_variant in costs.values() for c in by_variant.values())
    assert plan.prediction.simulation.samples_per_s > 0 and plan.prediction.samples_per_s > 0
    report = (tmp_path / "report.md").read_text()
    assert "learner_update" in report and "Simulated (discrete-event simulation of this plan)" in report
