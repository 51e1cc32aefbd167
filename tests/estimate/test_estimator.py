"""Estimator dispatch: calibrated local CPU, modelled catalogue devices, FPGA designs, infeasible kinds, power."""
from __future__ import annotations

import pytest

import pearl_py as pearl
from pearl_py.estimate import (
    Calibration,
    Estimator,
    Infeasible,
    device_power_w,
    dynamic_energy_j,
)
from pearl_py.estimate.calibration import model_key
from pearl_py.estimate.fit import FittedModel
from pearl_py.platform import Platform
from pearl_py.protocol import Kernel, KernelKind, SyncWorkload


@pytest.fixture(scope="module")
def graph():
    return pearl.DQN("CartPole-v1", prioritized_replay=True, batch_size=64).protocol()


@pytest.fixture(scope="module")
def estimator():
    models = {model_key("learner_update", "reference"): FittedModel("linear", ("flops", "bytes", "ops"),
                                                                   (5e-4, 1e-11, 0.0, 0.0), "flops"),
              model_key("env_step", "reference", "CartPole-v1"): FittedModel("linear", ("n_envs",),
                                                                          (1e-5, 2e-5), "n_envs")}
    return Estimator(Calibration("test", models))


def test_local_cpu_uses_the_calibration(graph, estimator):
    cpu = Platform.local().device("cpu")
    cost = estimator.kernel_cost(graph.kernel("learner_update"), cpu)   # the update alone: no loop work
    assert cost.source == "calibrated"
    assert cost.latency_s == pytest.approx(5e-4 + 1e-11 * graph.kernel("learner_update").workload.flops)
    assert cost.energy_j == pytest.approx(dynamic_energy_j(cpu.spec, cost.latency_s, 1 / cpu.spec.cores))
    assert estimator.kernel_cost(graph.kernel("env_step"), cpu).latency_s == pytest.approx(3e-5)


def test_uncalibrated_kinds_and_catalogue_cpus_are_modelled(graph, estimator):
    cpu = Platform.local().device("cpu")
    assert estimator.cost(graph.kernel("replay_sample"), cpu).source == "modelled"
    xeon = Platform.load("pearl-cpu-gpu-fpga").device("cpu")
    for kernel in graph.kernels():
        cost = estimator.cost(kernel, xeon)
        assert cost.source == "modelled" and cost.latency_s > 0 and cost.energy_j > 0


def test_gpu_roofline_and_env_infeasible(graph, estimator):
    gpu = Platform.load("dgx-a100-node").device("gpu0")
    cost = estimator.cost(graph.kernel("learner_update"), gpu)
    assert cost.detail["dispatch"] > 0 and cost.latency_s >= cost.detail["dispatch"]
    with pytest.raises(Infeasible, match="gymnasium environments run on CPUs"):
        estimator.cost(graph.kernel("env_step"), gpu)


def test_unknown_variant_is_an_error_for_modelled_devices(graph, estimator):
    gpu = Platform.load("dgx-a100-node").device("gpu0")
    with pytest.raises(KeyError, match="unknown kernel variant 'bogus'"):
        estimator.cost(graph.kernel("inference"), gpu, variant="bogus")


def test_fpga_costs_carry_resources_and_share_the_sum_tree(graph, estimator):
    fpga = Platform.load("pearl-cpu-gpu-fpga").device("fpga")
    sample = estimator.cost(graph.kernel("replay_sample"), fpga)
    update = estimator.cost(graph.kernel("priority_update"), fpga)
    assert sample.instance == update.instance == "sum_tree" and sample.resources == update.resources
    learner = estimator.cost(graph.kernel("learner_update"), fpga)
    assert learner.resources["dsp"] <= fpga.spec.dsp and learner.source == "modelled"
    sync = estimator.cost(Kernel("sync", KernelKind.PARAM_SYNC, SyncWorkload(1 << 20), 0.1), fpga)
    assert sync.latency_s > (1 << 20) / (fpga.spec.offchip_bandwidth_gbs * 1e9)


def test_transfer_uses_the_platform_links(estimator):
    p = Platform.load("pearl-cpu-gpu-fpga")
    assert estimator.transfer(p, "gpu", "fpga", 25e6).latency_s == pytest.approx(2 * (10e-6 + 1e-3))


def test_power_model():
    gpu = Platform.load("dgx-a100-node").device("gpu0").spec
    assert device_power_w(gpu, 0.0) == gpu.idle_w and device_power_w(gpu, 1.0) == gpu.peak_w
    assert device_power_w(gpu, 0.5) == pytest.approx(55 + 345 * 0.5)
    assert dynamic_energy_j(gpu, 1e-3, 1.0) == pytest.approx(0.345)
