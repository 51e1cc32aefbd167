"""The on-policy serial executor runs inference on the plan's device, times the learner on the learner's device
and records where each kernel executed (read from the networks it built)."""
from __future__ import annotations

import torch

import pearl_py as pearl
from pearl_py.protocol.kernel import LEARNER_UPDATE, PARAM_SYNC
from pearl_py.runtime import on_policy_serial
from pearl_py.runtime.acting import ActingNetworks
from pearl_py.runtime.kernel_devices import learner_timing_devices
from pearl_py.runtime.on_policy_serial import OnPolicySerialExecutor, serial_plan

TINY_PPO = dict(n_envs=2, n_steps=16, batch_size=16, n_epochs=1, net_arch=[8])
CPU, CUDA0 = torch.device("cpu"), torch.device("cuda:0")


def test_the_learner_and_its_weights_copy_are_timed_on_the_learners_device():
    assert learner_timing_devices(CUDA0) == {LEARNER_UPDATE: CUDA0, PARAM_SYNC: CUDA0}


def test_a_run_records_where_every_kernel_executed_and_times_the_learner_on_its_device(monkeypatch):
    timers = []

    class Recording(on_policy_serial.KernelTimer):
        def __init__(self, devices=None, **kw):
            timers.append(dict(devices or {}))
            super().__init__(devices, **kw)

    monkeypatch.setattr(on_policy_serial, "KernelTimer", Recording)
    result = OnPolicySerialExecutor(pearl.PPO("CartPole-v1", **TINY_PPO), seed=0, eval_episodes=1,
                                    progress=False).run(64)
    assert timers == [{LEARNER_UPDATE: CPU, PARAM_SYNC: CPU}]
    assert result.executed_on == {k: "cpu" for k in serial_plan().placements}


def test_inference_is_built_on_the_plans_device(monkeypatch):
    """The acting networks are asked for on the plan's inference device (the learner's own networks only where
    that is the learner's device: a GPU learner with inference planned on the CPU gets a copy there)."""
    asked = []

    def acting_on(algorithm, learner, device):
        asked.append((torch.device(device), learner.device))
        return ActingNetworks(algorithm, learner, device)

    monkeypatch.setattr(on_policy_serial, "ActingNetworks", acting_on)
    result = OnPolicySerialExecutor(pearl.PPO("CartPole-v1", **TINY_PPO), seed=0, eval_episodes=1,
                                    progress=False).run(64)
    assert asked == [(CPU, CPU)]
    assert PARAM_SYNC not in result.kernel_times   # the learner's own networks: nothing to copy

