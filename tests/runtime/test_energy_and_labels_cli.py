"""End to end: pearl devices says per device what is measured (fake counters) or modelled (this machine) and why;
a run records joules per device with their source; a kernel planned on a simulated FPGA is marked modelled in
result.json and the report, never measured."""
from __future__ import annotations

import json
import sys

from fake_counters import (  # tests/fake_counters.py (tests/ is on the path: its conftest)
    FakeNvml,
    rapl_zone,
)

import pearl_py as pearl
from pearl_py.cli import main

PLATFORM = """
cpus:
  this-vm:
    vendor: amd
    model_name: this machine's CPU, 2 cores
    cores: 2
    base_ghz: 2.4
    flops_per_cycle: 32
    mem_bandwidth_gbs: 20.0
    memory_gb: 16
    dram_latency_ns: 110
    idle_w: 2.0
    peak_w: 7.5
    dispatch_overhead_us: 6.0
platforms:
  this-cpu-plus-u250:
    description: this machine's CPU and an Alveo U250 over PCIe
    devices:
      cpu: {type: this-vm}
      fpga: {type: alveo-u250}
    links:
      - {between: [cpu, fpga], type: pcie-gen3-x16}
"""
CONFIG = """
algorithm: dqn
env: CartPole-v1
total_steps: 1200
seed: 0
eval_episodes: 2
hyperparameters: {batch_size: 32, buffer_size: 10000, learning_starts: 400, train_freq: 200, gradient_steps: 16,
                  net_arch: [32, 32], prioritized_replay: true}
"""


def test_pearl_devices_says_per_device_energy_is_modelled_here_and_why(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("PEARL_POWERCAP_ROOT", str(tmp_path / "no-powercap"))
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    assert "  energy, per device:\n    cpu                  modelled (no RAPL zone under " in out


def test_pearl_devices_says_measured_with_fake_counters(capsys, monkeypatch, tmp_path):
    rapl_zone(tmp_path, "intel-rapl:0", 0, "package-0")
    rapl_zone(tmp_path, "intel-rapl:0:0", 0, "dram")
    monkeypatch.setenv("PEARL_POWERCAP_ROOT", str(tmp_path))
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml([]))
    assert main(["devices"]) == 0
    assert "    cpu                  measured (RAPL package-0 (intel-rapl:0) + dram (intel-rapl:0:0))" in \
        capsys.readouterr().out


def test_a_run_records_joules_per_device_measured_where_a_counter_reads(monkeypatch, tmp_path):
    rapl_zone(tmp_path / "sys", "intel-rapl:0", 0, "package-0")
    monkeypatch.setenv("PEARL_POWERCAP_ROOT", str(tmp_path / "sys"))
    algo = pearl.DQN("CartPole-v1", net_arch=[16], batch_size=8, learning_starts=64, train_freq=16, buffer_size=500)
    result = pearl.train(algo, total_steps=128, seed=0, eval_episodes=1, plan="local", out=tmp_path / "run",
                         progress=False, log=lambda line: None)
    saved = json.loads((tmp_path / "run" / "result.json").read_text())["energy"]
    assert saved == result.energy and saved["window_s"] >= result.wall_seconds
    assert saved["devices"]["cpu"] == {"joules": 0.0, "source": "measured", "counter": "RAPL package-0 (intel-rapl:0)",
                                       "window_s": saved["window_s"]}  # the fake counter never moved
    assert "## Energy of the run, per device" in (tmp_path / "run" / "report.md").read_text()
    monkeypatch.setenv("PEARL_POWERCAP_ROOT", str(tmp_path / "none"))
    modelled = pearl.train(algo, total_steps=128, seed=0, eval_episodes=1, progress=False).energy["devices"]["cpu"]
    assert modelled["source"] == "modelled" and "no RAPL zone" in modelled["reason"] and modelled["joules"] > 0


def test_a_kernel_planned_on_a_simulated_fpga_is_marked_modelled_end_to_end(tmp_path, capsys):
    (tmp_path / "platform.yaml").write_text(PLATFORM)
    (tmp_path / "dqn.yaml").write_text(CONFIG)
    assert main(["plan", str(tmp_path / "dqn.yaml"), "--platform", str(tmp_path / "platform.yaml"),
                 "--out", str(tmp_path / "plan")]) == 0
    plan = pearl.load_plan(tmp_path / "plan" / "plan.yaml")
    on_fpga = sorted(k for k, p in plan.placements.items() if plan.devices[p.device] == "fpga")
    assert on_fpga, "the model puts kernels on the FPGA here (its replay and learner are far faster)"
    assert main(["run", str(tmp_path / "dqn.yaml"), "--plan", str(tmp_path / "plan" / "plan.yaml"),
                 "--out", str(tmp_path / "run")]) == 0
    saved = json.loads((tmp_path / "run" / "result.json").read_text())
    times = saved["kernel_times"]
    stand_ins = f"measured, {', '.join(sorted(on_fpga))} emulated on the CPU for a simulated device"
    assert f"samples/s, {stand_ins})" in capsys.readouterr().out and saved["samples_per_second_label"] == stand_ins
    assert saved["source"] == "mixed" and {f"kernel_times.{k}: modelled (simulated FPGA)" for k in on_fpga} <= set(
        saved["modelled"])
    for kernel in on_fpga:
        assert (times[kernel]["source"], times[kernel]["label"]) == ("modelled", "modelled (simulated FPGA)")
    assert times["env_step"]["label"] == "measured"
    report = (tmp_path / "run" / "report.md").read_text()
    row = next(line for line in report.splitlines() if line.startswith(f"| {on_fpga[0]} | fpga"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[3] == cells[6] == "not measured: modelled (simulated FPGA)"  # the two measured columns
    assert f"samples/s {stand_ins}" in report   # the rate is the emulation's, and says so
    html = (tmp_path / "run" / "report.html").read_text()
    assert f"{on_fpga[0]}: modelled (simulated FPGA), not measured" in html
