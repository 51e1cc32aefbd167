"""The on-policy kernels as derived from PPO and A2C: rates per collected transition, bytes on every edge, and
the cost models of the kinds the family adds (the advantage scan on an FPGA and a GPU)."""
from __future__ import annotations

import math

import pytest

import pearl_py as pearl
from pearl_py.estimate import roofline
from pearl_py.estimate.features import workload_features
from pearl_py.estimate.fpga_on_policy import advantage_design
from pearl_py.platform import Platform
from pearl_py.protocol.workload import AdvantageWorkload


def acting_params(obs_dim: int, width: int, n_actions: int) -> int:
    """The policy MLP's and the value MLP's parameters ([width, width] each)."""
    hidden = obs_dim * width + width + width * width + width
    return (hidden + width * n_actions + n_actions) + (hidden + width + 1)


def test_ppo_cartpole_rates_and_bytes():
    algo = pearl.PPO("CartPole-v1", n_envs=8, n_steps=32, batch_size=64, n_epochs=4)
    graph = algo.protocol()
    assert graph.mode == "synchronous" and graph.rollout_size == 256
    rates = {k.name: k.rate for k in graph.kernels()}
    assert rates == {"env_step": 1 / 8, "inference": 33 / 256, "rollout_insert": 1 / 8, "advantage": 1 / 256,
                     "learner_update": 4 * 4 / 256, "param_sync": 1 / 256}
    assert {k.name for k in graph.kernels() if k.replicable} == {"env_step", "inference", "rollout_insert"}
    learner = graph.kernel("learner_update").workload
    params = acting_params(4, 64, 2)
    assert learner.batch == 64 and learner.trained_params == params and learner.family == "on_policy"
    assert graph.kernel("inference").workload.batch == 8
    edges = {(src, dst): nbytes for src, dst, nbytes, _ in graph.edges()}
    assert edges[("env_step", "inference")] == 8 * 4 * 4                   # float32 observations
    assert edges[("inference", "env_step")] == 8 * 8                       # int64 actions
    assert edges[("param_sync", "inference")] == 4 * params                 # both MLPs act (V for the bootstrap)
    assert edges[("advantage", "learner_update")] == 256 * 8                # advantage and return per transition
    assert edges[("learner_update", "param_sync")] == math.ceil(4 * params / 16)   # a publication over 16 updates


def test_a2c_and_the_serialized_protocol():
    algo = pearl.A2C("Pendulum-v1", n_envs=4)                 # n_steps 5: one update per rollout of 20
    graph = algo.protocol()
    assert {k.name: k.rate for k in graph.kernels()}["learner_update"] == 1 / 20
    assert graph.kernel("learner_update").workload.batch == 20
    # the serial executor's protocol: one process stores the rollout, so it does not replicate
    serial = algo.protocol(serialized=True)
    assert serial.mode == "serialized"
    assert {k.name for k in serial.kernels() if k.replicable} == {"env_step", "inference"}


@pytest.mark.parametrize("n_envs", [1, 8, 64])
def test_fpga_advantage_scan_is_a_pipelined_loop_over_its_lanes(n_envs):
    board = Platform.load("pearl-cpu-gpu-fpga").device("fpga").spec
    design = advantage_design(AdvantageWorkload(n_steps=32, n_envs=n_envs), board)
    lanes, ii = design.phases["lanes"], design.phases["ii"]
    distance = math.ceil(n_envs / lanes)            # iterations between two of one env's steps in a lane
    assert ii == max(1, math.ceil((board.fmul_latency + board.fadd_latency) / distance))
    depth = design.cycles - ii * (32 * distance - 1)
    assert 0 < depth < 100                          # the element's latency: a few adds and multiplies
    assert design.seconds == pytest.approx(design.cycles / board.clock_hz)
    # no lane count that fits does better (the design-space search)
    for other in range(1, lanes):
        d = math.ceil(n_envs / other)
        other_ii = max(1, math.ceil((board.fmul_latency + board.fadd_latency) / d))
        assert depth + other_ii * (32 * d - 1) >= design.cycles


def test_gpu_advantage_scan_is_a_chain_over_the_steps():
    platform = Platform.load("dgx-a100-node")
    gpu = platform.device("gpu0").spec
    params = roofline.RooflineParams.load()
    features = workload_features(AdvantageWorkload(n_steps=2048, n_envs=8))
    seconds, parts = roofline.scan_latency(features, gpu, params, machine="gpu")
    assert parts["chain"] == pytest.approx(2048 * params.gpu["scan_step_ns"] * 1e-9)
    assert seconds == pytest.approx(parts["dispatch"] + max(parts["chain"], parts["memory"]))
