"""The report of a CNN learner's plan shows its layers' modelled costs per device and the FPGA's resources."""
from __future__ import annotations

import pearl_py as pearl
from pearl_py.estimate import Estimator


def test_cnn_plan_report_lists_conv_layers_per_device_and_fpga_resources(tmp_path):
    algo = pearl.DQN("pearl/Frames-4x84x84-v0", net_arch=[], buffer_size=10_000)
    plan = pearl.plan(algo, "pearl-cpu-gpu-fpga", estimator=Estimator(use_cache=False), horizon=100_000)
    report = pearl.export_plan(plan, tmp_path)["markdown"].read_text()
    assert "## Layers of learner_update (modelled)" in report and "## Layers of inference (modelled)" in report
    section = report.split("## Layers of learner_update (modelled)")[1].split("\n## ")[0]
    assert "| layer | MFLOP per call | cpu | gpu | fpga |" in section
    assert "| conv2d 4->32 8x8/4 84x84->20x20 (x32) | 209.72 |" in section
    fpga = plan.prediction.cost("learner_update", "fpga")
    assert f"whole learner_update on fpga: dsp {fpga.resources['dsp']:,.0f}" in section
    assert all(layer.layer in section for layer in fpga.layers)
    html = (tmp_path / "report.html").read_text()
    assert "Layers of learner_update" in html


def test_mlp_plan_report_has_no_layer_section(tmp_path):
    plan = pearl.plan(pearl.DQN("CartPole-v1"), "pearl-cpu-gpu-fpga", estimator=Estimator(use_cache=False))
    assert "Layers of" not in pearl.export_plan(plan, tmp_path)["markdown"].read_text()
