"""benchmarks/gpu_smoke.py: on a CUDA machine (pytest -m gpu) it plans onto the GPU, runs and checks every kernel ran
where planned; without CUDA it says so and passes; its check names a kernel that ran elsewhere."""
from __future__ import annotations

import dataclasses

import gpu_smoke
import pytest
import torch

import pearl_py as pearl
from pearl_py.plan import Placement, Plan
from pearl_py.runtime.result import RunResult


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (torch.cuda.is_available() is False)")
def test_on_a_gpu_every_kernel_runs_where_its_plan_puts_it(tmp_path):
    assert gpu_smoke.main(["--steps", "1500", "--out", str(tmp_path)]) == 0


def test_without_cuda_the_smoke_test_says_so_and_passes(capsys, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert gpu_smoke.main([]) == 0
    assert capsys.readouterr().out.startswith("gpu_smoke: no CUDA device here")


def test_the_check_names_a_kernel_that_ran_elsewhere_than_planned():
    algo = pearl.DQN("CartPole-v1")
    base = Plan.single_device(algo.protocol(serialized=True))
    plan = dataclasses.replace(base, devices={"cpu": "cpu", "gpu0": "gpu"},
                               placements={**base.placements, "learner_update": Placement("gpu0")})
    ran = RunResult("dqn", "CartPole-v1", 0, 1, 0, 1.0, [], plan.to_dict(),
                    executed_on={k: "cpu" for k in plan.placements})
    assert gpu_smoke.check(plan, ran) == ["learner_update: planned on gpu0 (cuda:0), executed on cpu"]
    assert gpu_smoke.check(plan, dataclasses.replace(ran, executed_on={**ran.executed_on,
                                                                     "learner_update": "cuda:0"})) == []


@pytest.mark.parametrize("serialized", [True, False])
def test_the_smoke_plans_put_learner_inference_and_replay_on_the_gpu_and_this_code_would_run_them(serialized,
                                                                                                  monkeypatch):
    from pearl_py.platform import Catalogue, Platform
    from pearl_py.platform.platform import Device
    from pearl_py.runtime.kernel_devices import plan_problems

    local = Platform.local()
    l4 = dataclasses.replace(Catalogue.load().devices["l4"], model_name="NVIDIA L4 (as l4)")
    machine = Platform("local", {"cpu": local.devices["cpu"], "gpu0": Device("gpu0", l4, local=True)},
                       [("cpu", "gpu0", Catalogue.load().link_spec("pcie-gen4-x16"))])
    module = gpu_smoke
    monkeypatch.setattr(module.Platform, "local", staticmethod(lambda: machine))
    for algorithm in module.algorithms().values():
        plan = module.gpu_plan(algorithm, serialized, steps=3_000)
        on_policy = algorithm.family == "on_policy"
        assert plan.mode == ("serialized" if serialized else "synchronous" if on_policy else "overlapped")
        pinned = module.ON_GPU_ON_POLICY if on_policy else module.ON_GPU
        assert {k for k, p in plan.placements.items() if p.device == "gpu0"} >= set(pinned) & set(plan.placements)
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # as on the GPU machine
        assert plan_problems(plan, device_counts={"cuda": 1}, family=algorithm.family) == []
        monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
