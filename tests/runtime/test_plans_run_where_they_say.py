"""Plans run where they say: each part on its planned device, refused in one line (exit 2) where this machine
cannot run it as planned, and --tune trials only what can run; a simulated FPGA's kernels are marked modelled."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch

import pearl_py as pearl
from pearl_py.cli import main
from pearl_py.errors import PlanningError, UserError
from pearl_py.pipeline import planning
from pearl_py.pipeline.train import make_executor
from pearl_py.plan import Figures, KernelCost, Placement, Plan, Prediction, SolverInfo
from pearl_py.platform.runtimes import device_index
from pearl_py.replay import ReplayBuffer, TorchReplayBuffer
from pearl_py.runtime import acting, serial
from pearl_py.runtime.acting import ActingNetworks
from pearl_py.runtime.device_replay import replay_on
from pearl_py.runtime.kernel_devices import (
    check_runnable,
    kernel_devices,
    plan_problems,
    simulated_kernels,
    timing_devices,
)
from pearl_py.runtime.families import OFF_POLICY
from pearl_py.kernels.registry import build_learner_update
from pearl_py.runtime.serial import SerialExecutor

OFF = OFF_POLICY.name

TINY = {"net_arch": [16], "batch_size": 8, "learning_starts": 64, "train_freq": 16, "gradient_steps": 2,
        "buffer_size": 1_000}


def algo(**extra) -> pearl.DQN:
    return pearl.DQN("CartPole-v1", **{**TINY, **extra})


def placed(base: Plan, costs: dict | None = None, **where: Placement) -> Plan:
    """``base`` with some kernels moved (devices: cpu, gpu0/gpu1 GPUs, fpga0 a simulated FPGA)."""
    prediction = None
    if costs is not None:
        prediction = Prediction(Figures(1.0, 1.0, 1.0, 1.0, 1.0, "cpu"), SolverInfo("test", True, 1.0, 0.0, 0.0),
                                costs, rates={}, kinds={}, devices={})
    return dataclasses.replace(base, placements={**base.placements, **where},
                               devices={"cpu": "cpu", "gpu0": "gpu", "gpu1": "gpu", "fpga0": "fpga"},
                               prediction=prediction)


@pytest.fixture
def cuda_here(monkeypatch):
    """A machine whose torch sees one CUDA device (the registry's GPU variants are then available)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)


@pytest.fixture(scope="module")
def serial_plan() -> Plan:
    return Plan.single_device(algo(prioritized_replay=True).protocol(serialized=True))


def test_gpu_names_map_to_cuda_indices_and_the_learners_gpu_times_param_sync(serial_plan):
    assert (device_index("gpu0"), device_index("gpu3"), device_index("node1.gpu2"), device_index("gpu")) == (0, 3, 2, 0)
    plan = placed(serial_plan, learner_update=Placement("gpu1"), replay_sample=Placement("gpu1"),
                  replay_insert=Placement("gpu1"), priority_update=Placement("gpu1"))
    devices = kernel_devices(plan)
    assert devices["learner_update"] == torch.device("cuda", 1) and devices["env_step"] == torch.device("cpu")
    assert devices["param_sync"] == torch.device("cpu") and timing_devices(plan)["param_sync"] == torch.device("cuda", 1)


def test_a_gpu_plan_without_cuda_names_the_kernel_and_the_device(serial_plan):
    plan = placed(serial_plan, learner_update=Placement("gpu0"))
    assert plan_problems(plan, device_counts={"cuda": 0}, family=OFF) == [
        ("plan: learner_update is placed on gpu0 (a gpu device), but this machine has no CUDA device "
         "(torch.cuda.is_available() is False)")]
    one_gpu = {"cuda": 1}
    assert plan_problems(placed(serial_plan, learner_update=Placement("gpu1", "cuda_graph")), one_gpu, family=OFF)[:1] == [
        "plan: learner_update is placed on gpu1 (cuda:1), but this machine has 1 CUDA device (cuda:0 .. cuda:0)"]
    with pytest.raises(UserError, match=r"^plan: learner_update is placed on gpu0 .*no CUDA device"):
        SerialExecutor(algo(prioritized_replay=True), plan=plan)  # before anything runs


def test_variants_this_machine_cannot_build_are_refused(serial_plan, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    graph = placed(serial_plan, learner_update=Placement("gpu0", "cuda_graph"))
    assert plan_problems(graph, device_counts={"cuda": 1}, family=OFF) == [
        ("plan: learner_update variant 'cuda_graph' on gpu0 cannot run on this machine: CUDA is not available here "
         "(torch.cuda.is_available() is False)")]
    on_cpu = placed(serial_plan, learner_update=Placement("cpu", "cuda_graph"))
    assert plan_problems(on_cpu, device_counts={"cuda": 0}, family=OFF)[0].startswith(
        "plan: learner_update is placed on cpu as variant 'cuda_graph', which pearl_py has no cpu implementation of")
    odd = placed(serial_plan, replay_sample=Placement("cpu", "fast"))
    assert plan_problems(odd, device_counts={"cuda": 0}, family=OFF) == [
        ("plan: replay_sample is placed on cpu as variant 'fast', but pearl_py has one implementation of "
         "replay_sample ('reference')")]


def test_one_replay_lives_on_one_device_beside_a_gpu_learner(serial_plan, cuda_here):
    split = placed(serial_plan, replay_sample=Placement("gpu0"), learner_update=Placement("gpu0"))
    assert plan_problems(split, {"cuda": 1}, family=OFF)[0].startswith("plan: the replay's kernels are placed on 2 devices")
    apart = placed(serial_plan, replay_sample=Placement("gpu0"), replay_insert=Placement("gpu0"),
                   priority_update=Placement("gpu0"))
    assert "apart from the learner (cpu, cpu)" in plan_problems(apart, device_counts={"cuda": 1}, family=OFF)[0]
    together = placed(apart, learner_update=Placement("gpu0"))
    assert plan_problems(together, device_counts={"cuda": 1}, family=OFF) == []
    with pytest.raises(UserError, match=r"\(and 1 more problem\)$"):
        check_runnable(placed(split, inference=Placement("gpu1")), device_counts={"cuda": 1}, family=OFF)


def test_pearl_run_with_a_gpu_plan_here_exits_2_with_one_line(serial_plan, write_config, tmp_path, capsys):
    config = write_config("""
        algorithm: dqn
        env: CartPole-v1
        total_steps: 200
        hyperparameters: {net_arch: [16], batch_size: 8, learning_starts: 64, train_freq: 16, buffer_size: 1000}
        """)
    plan = placed(Plan.single_device(pearl.load_config(config).make_algorithm().protocol(serialized=True)),
                  learner_update=Placement("gpu0", "cuda_graph"))
    (tmp_path / "plan.yaml").write_text(json.dumps(plan.to_dict(prediction=False)))
    assert main(["run", str(config), "--plan", str(tmp_path / "plan.yaml"), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    # the plan file's check (pipeline/plan_check.py) refuses it first: this machine's platform has no gpu0
    assert len(err) == 1 and err[0].startswith(f"pearl: error: {tmp_path / 'plan.yaml'}:1: devices.gpu0: ")
    assert "has no device 'gpu0'" in err[0]
    assert not (tmp_path / "run" / "result.json").exists()
    with pytest.raises(UserError, match="learner_update is placed on gpu0"):
        make_executor(pearl.load_config(config).make_algorithm(), plan, seed=0)


def test_tune_trials_only_plans_this_machine_can_run(serial_plan, monkeypatch):
    fine = dataclasses.replace(serial_plan, prediction=placed(serial_plan, {}).prediction)
    gpu = dataclasses.replace(placed(serial_plan, {}, learner_update=Placement("gpu0")), mode="overlapped")
    monkeypatch.setattr(planning, "ensure_calibration", lambda log, algorithm=None, total_steps=None: None)
    monkeypatch.setattr(planning, "ranked_plans", lambda protocol, *a, **k: [gpu, fine] if protocol.serialized
                        else [gpu])
    lines: list[str] = []
    assert planning.candidate_plans(algo(), k=3, log=lines.append) == [fine]
    assert lines == [("tuning: skipping an overlapped candidate this machine cannot run as planned: plan: "
                      "learner_update is placed on gpu0 (a gpu device), but this machine has no CUDA device "
                      "(torch.cuda.is_available() is False)")] * 2
    monkeypatch.setattr(planning, "ranked_plans", lambda *a, **k: [gpu])
    with pytest.raises(PlanningError, match="no candidate plan can run on this machine as planned"):
        planning.candidate_plans(algo(), k=3, log=lines.append)


def test_inference_apart_from_the_learner_acts_on_a_copy_synced_per_round():
    learner = pearl.algorithms.off_policy.learner.Learner(algo(), torch.device("cpu"))
    assert not ActingNetworks(algo(), learner, torch.device("cpu")).copied
    learner.device = torch.device("cuda", 0)  # as if the learner were on a GPU (the copy itself stays on the CPU)
    copy = ActingNetworks(algo(), learner, torch.device("cpu"))
    online, mine = learner.nets.online["q"][0].weight, copy.nets.online["q"][0].weight
    assert copy.copied and mine.data_ptr() != online.data_ptr()
    with torch.no_grad():
        online.add_(1.0)
    assert not torch.equal(mine, online)
    copy.sync()
    assert torch.equal(mine, online)
    learner.device = torch.device("cpu")
    build_learner_update(learner, "fused")        # built mid-run (a variant switch): the parameters' storage moves
    with torch.no_grad():
        online.add_(1.0)
    copy.sync()
    assert torch.equal(mine, online)
    assert acting.ActingNetworks is ActingNetworks


def test_a_replay_on_a_gpu_is_a_torch_replay_and_the_serial_loop_trains_from_it(monkeypatch):
    assert isinstance(replay_on(algo(), 0, torch.device("cpu")), ReplayBuffer)
    closed: list[dict] = []

    def torch_replay(algorithm, seed, device):  # the GPU path, on the CPU torch device
        buf = TorchReplayBuffer(algorithm.config.buffer_size, (algorithm.spec.obs_dim,), prioritized=True, seed=seed,
                                device="cpu")
        close = buf.close
        buf.close = lambda: (closed.append(buf.state_dict()), close())  # what the run left in it
        return buf

    monkeypatch.setattr(serial, "replay_on", torch_replay)
    result = SerialExecutor(algo(prioritized_replay=True), seed=0, eval_episodes=1, progress=False).run(256)
    assert len(closed) == 1 and len(closed[0]["rewards"]) == 256
    assert result.gradient_steps == result.kernel_times["priority_update"]["calls"] == 2 * 12  # rounds at 80..256
    assert not np.allclose(closed[0]["priorities"], 1.0)  # the learner's |td| tensor reached the tree


def test_a_kernel_on_a_simulated_fpga_runs_on_the_cpu_and_is_marked_modelled(serial_plan):
    cost = {"replay_sample": {"fpga0": {"reference": KernelCost(3e-6, 0.0, "modelled")}}}
    plan = placed(serial_plan, cost, replay_sample=Placement("fpga0"))
    assert simulated_kernels(plan)["replay_sample"].label == "modelled (simulated FPGA)"
    result = SerialExecutor(algo(prioritized_replay=True), seed=0, eval_episodes=1, plan=plan,
                            progress=False).run(256)
    sample = result.kernel_times["replay_sample"]
    assert (sample["source"], sample["label"], sample["mean_s"]) == ("modelled", "modelled (simulated FPGA)", 3e-6)
    assert sample["total_s"] == pytest.approx(3e-6 * sample["calls"]) and sample["cpu_total_s"] > 0
    assert result.kernel_times["learner_update"]["label"] == "measured"
    assert result.executed_on == {k: "cpu" for k in plan.placements}  # the FPGA's kernel ran on the host
