"""What a plan means to the parallel runtime: actors, learner device, FPGA kernels charged as modelled."""
from __future__ import annotations

import pytest
import torch

import pearl_py as pearl
from pearl_py.plan import Figures, KernelCost, Placement, Plan, Prediction, SolverInfo
from pearl_py.runtime.kernel_devices import SimulatedKernel
from pearl_py.runtime.parallel.control import ControlBlock
from pearl_py.runtime.parallel.placement import RuntimeLayout
from pearl_py.runtime.timing import KernelTimer, merge_kernel_times


def fpga_plan(costs: dict | None = None) -> Plan:
    base = Plan.single_device(pearl.DQN("CartPole-v1").protocol())
    placements = {**base.placements, "replay_sample": Placement("fpga0", "pipelined"),
                  "env_step": Placement("cpu0", replicas=3)}
    costs = {"replay_sample": {"fpga0": {"pipelined": KernelCost(2e-6, 0.0, "modelled")}}} if costs is None else costs
    prediction = Prediction(Figures(1.0, 1.0, 1.0, 1.0, 1.0, "cpu"), SolverInfo("milp", True, 1.0, 0.0, 0.0), costs,
                            rates={}, kinds={}, devices={})
    return Plan("local", "throughput", placements, mode="overlapped",
                devices={"fpga0": "fpga", "cpu0": "cpu", "cpu": "cpu"}, prediction=prediction)


def test_layout_reads_actors_device_and_modelled_kernels():
    layout = RuntimeLayout.from_plan(fpga_plan())
    assert layout.actors == 3 and layout.learner_device == torch.device("cpu")
    assert layout.simulated == {"replay_sample": SimulatedKernel(2e-6, "modelled (simulated FPGA)")}


def test_fpga_kernel_without_a_modelled_cost_is_a_user_error():
    plan = fpga_plan(costs={})
    with pytest.raises(pearl.UserError, match="no modelled latency"):
        RuntimeLayout.from_plan(plan)


def test_kernel_times_sum_processes_and_sessions_and_charge_fpga_kernels():
    timer = KernelTimer()
    timer.add("replay_sample", 0.5, calls=1000)
    timer.add("learner_update", 2.0, calls=1000)
    control = ControlBlock.create(actors=2, name="pearl-test-ctl")
    try:
        control.add_time(0, "env_step", 0.25)
        control.add_time(1, "env_step", 0.75)
        before = {"env_step": {"calls": 10, "total_s": 1.0, "mean_s": 0.1}}
        times = merge_kernel_times([before, timer.summary(), control.kernel_times()],
                                   {"replay_sample": SimulatedKernel(2e-6, "modelled (simulated FPGA)")})
    finally:
        control.close()
    assert times["env_step"] == {"calls": 12, "total_s": 2.0, "mean_s": 2.0 / 12, "source": "measured",
                                 "label": "measured"}
    assert times["replay_sample"] == {"calls": 1000, "total_s": pytest.approx(2e-3), "mean_s": 2e-6,
                                      "source": "modelled", "label": "modelled (simulated FPGA)", "cpu_total_s": 0.5}
    assert times["learner_update"]["total_s"] == 2.0
