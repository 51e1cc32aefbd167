"""pearl plan, pearl simulate and pearl run (serial, --auto, a synchronous plan) for PPO and A2C on CartPole-v1.

A calibration with no fitted model is cached first: every cost is modelled, nothing is profiled.
"""
from __future__ import annotations

import json

import pytest
import yaml

from pearl_py.cli import main
from pearl_py.estimate.calibration import Calibration, machine_fingerprint

CONFIGS = {
    "ppo": """
        algorithm: ppo
        env: CartPole-v1
        total_steps: 512
        seed: 2
        hyperparameters:
          n_envs: 4
          n_steps: 32
          batch_size: 64
          n_epochs: 2
          net_arch: [16]
        """,
    "a2c": """
        algorithm: a2c
        env: CartPole-v1
        total_steps: 300
        seed: 2
        hyperparameters:
          n_envs: 4
          net_arch: [16]
        """,
}
SYNCHRONOUS_KERNELS = {"env_step", "inference", "rollout_insert", "advantage", "learner_update", "param_sync"}


@pytest.fixture
def modelled(tmp_path, monkeypatch):
    monkeypatch.setenv("PEARL_CACHE_DIR", str(tmp_path / "cache"))
    Calibration(machine_fingerprint()).save()


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_plan_simulate_and_run_the_plan(name, write_config, tmp_path, capsys, modelled):
    config = write_config(CONFIGS[name])
    assert main(["plan", str(config), "--out", str(tmp_path / "plan")]) == 0
    printed = capsys.readouterr().out
    assert "Collection and learning alternate (synchronous protocol)" in printed
    plan = yaml.safe_load((tmp_path / "plan" / "plan.yaml").read_text())
    assert plan["mode"] == "synchronous" and set(plan["placements"]) == SYNCHRONOUS_KERNELS
    actors = plan["placements"]["env_step"]["replicas"]
    assert actors >= 1 and plan["placements"]["inference"]["replicas"] == actors
    predicted = json.loads((tmp_path / "plan" / "prediction.json").read_text())["figures"]["samples_per_s"]
    assert f"| env_step | cpu | reference | {actors} actor" in (tmp_path / "plan" / "report.md").read_text()

    assert main(["simulate", str(config), "--plan", str(tmp_path / "plan" / "plan.yaml"),
                 "--out", str(tmp_path / "sim")]) == 0
    printed = capsys.readouterr().out
    assert f"(model {predicted:,.0f}, -0.0%)" in printed or f"(model {predicted:,.0f}, +0.0%)" in printed

    assert main(["run", str(config), "--plan", str(tmp_path / "plan" / "plan.yaml"), "--out",
                 str(tmp_path / "run")]) == 0
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["backend"] == "local-parallel" and result["layout"]["actors"] == actors
    assert result["plan"]["mode"] == "synchronous" and result["env_steps"] >= 300
    assert (tmp_path / "run" / "report.html").exists()


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_serial_auto_and_parallel_runs_learn_the_same_networks(name, write_config, tmp_path, capsys, modelled):
    """The serial run (reference kernels), the auto plan's run and the synchronous plan's parallel run (fused
    kernels) of one seed make the same updates on the same rollouts; their evaluations agree. A run this short
    does not repay its actors' start (2.5 s, modelled): --auto runs it serialized, in one process."""
    config = write_config(CONFIGS[name])
    assert main(["run", str(config), "--out", str(tmp_path / "serial")]) == 0
    assert main(["run", str(config), "--auto", "--out", str(tmp_path / "auto")]) == 0
    assert main(["plan", str(config), "--out", str(tmp_path / "plan")]) == 0
    assert main(["run", str(config), "--plan", str(tmp_path / "plan" / "plan.yaml"), "--out",
                 str(tmp_path / "parallel")]) == 0
    serial, auto, parallel = (json.loads((tmp_path / d / "result.json").read_text())
                              for d in ("serial", "auto", "parallel"))
    assert (serial["backend"], auto["backend"], parallel["backend"]) == ("serial", "serial", "local-parallel")
    assert auto["plan"]["mode"] == "serialized" and auto["plan"]["prediction"]["run"]["startup_s"] == 0.0
    assert auto["plan"]["prediction"]["run"]["samples_per_s"] > 0
    for run in (auto, parallel):
        for key in ("env_steps", "gradient_steps", "episodes"):
            assert serial[key] == run[key], key
        assert serial["eval_returns"] == pytest.approx(run["eval_returns"])
