"""The engine's resources queue work; the simulator sees contention the model cannot."""
from __future__ import annotations

import dataclasses

import pytest
from sim_problems import problem_for

from pearl_py.optimize.model import Choice, evaluate
from pearl_py.simulate import SimSchedule, simulate
from pearl_py.simulate.engine import Engine, Resource


def test_units_serve_in_parallel_and_the_rest_queue() -> None:
    engine = Engine()
    cpu = Resource(engine, "cpu", units=2)
    ends = []

    def job(seconds: float):
        yield cpu.use(seconds, "work")
        ends.append(engine.now)

    for seconds in (1.0, 1.0, 1.0):
        engine.process(job(seconds))
    engine.run()
    assert ends == [1.0, 1.0, 2.0]
    assert cpu.busy_s == 3.0 and cpu.peak == 2


def test_a_replay_sharing_the_learners_fpga_is_slower_than_the_model_says() -> None:
    """Inserts wait behind learner updates on the one FPGA: the replay server falls behind (contention)."""
    algo, problem = problem_for("pearl-cpu-gpu-fpga", kernels_only=True, train_freq=256, gradient_steps=128,
                                batch_size=64, net_arch=(256, 256))
    problem = dataclasses.replace(problem, overlap=1.0)  # no policy-lag bound: contention alone
    # the replay lives on one device (insert and sample on the FPGA), beside the learner's updates
    assignment = {"env_step": Choice("cpu", replicas=2), "inference": Choice("cpu", replicas=3),
                  "replay_insert": Choice("fpga"), "replay_sample": Choice("fpga"),
                  "learner_update": Choice("fpga"), "param_sync": Choice("gpu")}
    model = evaluate(problem, assignment)
    assert model.feasible
    sim = simulate(problem, assignment, SimSchedule.from_config(algo.config, 40 * 256, learning_starts=0,
                                                                max_policy_lag=None))
    assert sim.samples_per_s < 0.95 * model.samples_per_s
    assert model.bottleneck == "fpga" and sim.utilization["fpga"] < 0.95  # the FPGA now idles at times


def test_energy_is_idle_power_over_the_run_plus_every_calls_dynamic_energy() -> None:
    algo, problem = problem_for("dgx-a100-node", train_freq=256, gradient_steps=128, batch_size=64,
                                net_arch=(256, 256))
    assignment = {"env_step": Choice("cpu1"), "inference": Choice("cpu1"), "replay_insert": Choice("cpu0"),
                  "replay_sample": Choice("cpu0"), "learner_update": Choice("gpu0"), "param_sync": Choice("gpu0")}
    schedule = SimSchedule.from_config(algo.config, 20 * 256, learning_starts=0)
    sim = simulate(problem, assignment, schedule)
    idle = sum(problem.devices[d].idle_w for d in ("cpu0", "cpu1", "gpu0"))
    dynamic = sum(problem.option(k, c.device, c.variant).energy_j * calls for k, c, calls in (
        ("env_step", assignment["env_step"], schedule.vector_steps),
        ("inference", assignment["inference"], schedule.vector_steps),
        ("replay_insert", assignment["replay_insert"], schedule.vector_steps),
        ("replay_sample", assignment["replay_sample"], schedule.total_updates),
        ("learner_update", assignment["learner_update"], schedule.total_updates),
        ("param_sync", assignment["param_sync"], schedule.total_updates // schedule.sync_every)))
    assert sim.idle_w == pytest.approx(idle)
    assert sim.energy_j == pytest.approx(idle * sim.elapsed_s + dynamic)
