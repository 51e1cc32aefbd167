"""The Ray backend: resources from the plan, the install hint without ray, and a real local-cluster run."""
from __future__ import annotations

import dataclasses
import os
import sys

import pytest

import pearl_py as pearl
from pearl_py.errors import UserError
from pearl_py.plan import Placement, Plan
from pearl_py.runtime.ray_backend import RayExecutor
from pearl_py.runtime.ray_backend.resources import component_resources, needs


def _algo():
    return pearl.DQN("CartPole-v1", train_freq=256, gradient_steps=64, batch_size=64, learning_starts=500,
                     net_arch=[64, 64])


def _plan(replay: str, learner: str, actors: int = 1) -> Plan:
    plan = Plan.single_device(_algo().protocol())
    placements = {**plan.placements, "env_step": Placement("cpu", replicas=actors),
                  "inference": Placement("cpu", replicas=actors), "replay_insert": Placement(replay),
                  "replay_sample": Placement(replay), "learner_update": Placement(learner)}
    return dataclasses.replace(plan, placements=placements, mode="overlapped",
                               devices={"cpu": "cpu", "gpu": "gpu", "fpga": "fpga"})


def test_components_share_a_device_and_take_its_resource() -> None:
    res = component_resources(_plan("cpu", "cpu", actors=2))
    assert res == {"actor": {"num_cpus": 1.0}, "replay": {"num_cpus": 0.5}, "learner": {"num_cpus": 0.5}}
    assert needs(res, actors=2) == {"CPU": 3.0}
    res = component_resources(_plan("fpga", "gpu", actors=4))
    assert res["replay"] == {"num_cpus": 0.0, "resources": {"FPGA": 1.0}}
    assert res["learner"] == {"num_cpus": 0.0, "num_gpus": 1.0}
    assert needs(res, actors=4) == {"CPU": 4.0, "GPU": 1.0, "FPGA": 1.0}


def test_without_ray_the_backend_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(UserError, match=r'pip install -c constraints.txt "\.\[ray\]"'):
        RayExecutor(_algo(), _plan("cpu", "cpu"), seed=0).run(1000)


def test_dqn_cartpole_on_a_local_ray_cluster() -> None:
    ray = pytest.importorskip("ray", reason='ray is an optional extra: pip install -c constraints.txt ".[ray]"')
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        executor = RayExecutor(_algo(), _plan("cpu", "cpu"), seed=0, eval_episodes=2)
        result = executor.run(3000)
        assert ray.is_initialized()  # a session the caller started stays up
    finally:
        ray.shutdown()
    assert result.backend == "ray"
    assert result.env_steps == 3000
    assert result.gradient_steps == 64 * ((3000 - 512) // 256 + 1)  # rounds at steps 512, 768, ..., 2816
    assert result.kernel_times["env_step"]["calls"] == 3000
    assert result.kernel_times["replay_insert"]["calls"] == 3000
    parts = executor.components
    replay_pid, learner_pid = parts["replay"]["pid"], parts["learner"]["pid"]
    # the replay lived in a Ray actor of its own: not the driver, the learner or an actor worker
    assert len({replay_pid, learner_pid, os.getpid(), *(a["pid"] for a in parts["actors"])}) == 3 + len(parts["actors"])
    assert parts["replay"]["resources"] == {"num_cpus": 0.5}
    assert len(result.eval_returns) == 2
