"""The learners' optimizers (``pearl_py.algorithms.optimizers``): torch's Adam and RMSprop step for step and state for
state, and runs that never import ``torch._dynamo``."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from pearl_py.algorithms.optimizers import Adam, RMSprop

PAIRS = [(Adam, torch.optim.Adam, dict(lr=1e-2, eps=1e-5)), (RMSprop, torch.optim.RMSprop, dict(lr=1e-2, eps=1e-5))]


def trained(cls: type[torch.optim.Optimizer], hyper: dict, steps: int, resume: tuple[dict, dict] | None = None):
    """A seeded ``Linear(3, 2)`` after ``steps`` steps of ``cls`` on a fixed batch (from ``resume``'s weights and
    optimizer state when given)."""
    torch.manual_seed(0)
    net = torch.nn.Linear(3, 2)
    opt = cls(net.parameters(), **hyper)
    if resume is not None:
        net.load_state_dict(resume[0])
        opt.load_state_dict(resume[1])
    x = torch.randn(5, 3)
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        net(x).square().sum().backward()
        opt.step()
    return net, opt


def flat(net: torch.nn.Module, opt: torch.optim.Optimizer) -> list[torch.Tensor]:
    """The weights and every optimizer state tensor, in order."""
    state = opt.state_dict()["state"]
    return [*net.state_dict().values(), *(t for i in sorted(state) for t in state[i].values())]


@pytest.mark.parametrize(("ours", "torchs", "hyper"), PAIRS, ids=["adam", "rmsprop"])
def test_steps_and_checkpoints_are_torchs(ours, torchs, hyper):
    """Five steps bit for bit as torch's; three steps of either class saved, loaded into the other and stepped twice
    more end at the same weights and state, and the saved groups are torch's (same keys and values)."""
    straight = flat(*trained(torchs, hyper, 5))
    assert all(torch.equal(a, b) for a, b in zip(flat(*trained(ours, hyper, 5)), straight, strict=True))
    for first, then in ((ours, torchs), (torchs, ours)):
        net, opt = trained(first, hyper, 3)
        saved = opt.state_dict()
        assert saved["param_groups"] == trained(then, hyper, 3)[1].state_dict()["param_groups"]
        resumed = flat(*trained(then, hyper, 2, resume=(net.state_dict(), saved)))
        assert all(torch.equal(a, b) for a, b in zip(resumed, straight, strict=True))


RUNS = """
import dataclasses, sys, warnings
import pearl_py as pearl
from pearl_py.kernels.registry import compile_available
from pearl_py.runtime.on_policy_serial import OnPolicySerialExecutor
from pearl_py.runtime.serial import SerialExecutor

compile_available()   # as every plan asks it
warnings.filterwarnings("error", message=".*variant instead")   # a fused variant that fell back fails the run
runs = [(SerialExecutor, pearl.DQN("CartPole-v1", net_arch=[32], batch_size=16, learning_starts=100, train_freq=4,
                                   buffer_size=1000), "fused"),
        (OnPolicySerialExecutor, pearl.PPO("CartPole-v1", net_arch=[32], n_envs=2, n_steps=32, batch_size=32,
                                           n_epochs=1), "fused"),
        (SerialExecutor, pearl.DQN("CartPole-v1", net_arch=[32], batch_size=16, learning_starts=100, train_freq=4,
                                   buffer_size=1000), "reference")]
for executor, algo, variant in runs:
    plan = pearl.Plan.single_device(algo.protocol(serialized=True))
    plan.placements["learner_update"] = dataclasses.replace(plan.placements["learner_update"], variant=variant)
    result = executor(algo, seed=0, eval_episodes=1, progress=False, plan=plan).run(256)
    print(type(algo).__name__, variant, result.gradient_steps, "torch._dynamo" in sys.modules)
"""


def test_fused_and_reference_runs_leave_dynamo_unimported():
    """A fresh process asks whether ``compiled`` could run, runs fused DQN, fused PPO and reference DQN (torch's Adam
    step, undecorated) and never imports ``torch._dynamo`` (about a second of CPU per process)."""
    pytest.importorskip("numba")
    root = str(Path(__file__).resolve().parents[2])   # this checkout's pearl_py, whatever the venv installed
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(RUNS)], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": root})
    assert out.stdout.split("\n")[:3] == ["DQN fused 39 False", "PPO fused 8 False", "DQN reference 39 False"]
