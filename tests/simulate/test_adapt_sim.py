"""The simulator reproduces the run's correction (tests/runtime/test_monitor.py) on the same synthetic slowdown:
the learner at 2 threads made 3x slower after 100 updates, the same monitor on simulated time."""
from __future__ import annotations

import copy
import dataclasses

import pytest
from sim_problems import problem_for

from pearl_py.optimize.model import Choice
from pearl_py.protocol.kernel import LEARNER_UPDATE
from pearl_py.runtime.monitor import AdaptOptions
from pearl_py.simulate import SimSchedule, simulate
from pearl_py.simulate.adapt import Slowdown

TINY_DQN = dict(net_arch=(32,), batch_size=16, learning_starts=200, train_freq=50, gradient_steps=10,
                target_update_interval=100)
"""The executor test's config: rounds at vector steps 250, 300, ..., 2000 (round r at 200 + 50 r), 10 updates each."""
COST_S = {1: 12e-3, 2: 10e-3}
SLOWDOWN = Slowdown(LEARNER_UPDATE, threads=2, factor=3.0, after_calls=100)
ONE_CPU = {k: Choice("cpu0") for k in ("env_step", "inference", "replay_insert", "replay_sample", "param_sync")}


def setup(variant_s: float = 1.0):
    """DQN on one CPU of a catalogue node, the learner's options costed as the executor test's fake machine; its
    ``fused`` variant at ``variant_s`` a call (by default far from disputed: the thread counts are the options)."""
    algo, problem = problem_for("dgx-a100-node", kernels_only=True, **TINY_DQN)
    problem = copy.copy(problem)
    key = (LEARNER_UPDATE, "cpu0", "reference")
    fused = (LEARNER_UPDATE, "cpu0", "fused")
    problem.options = {**problem.options, key: dataclasses.replace(problem.options[key], latency_s=COST_S[1],
                                                                    threads=((COST_S[2], 0.0),), shares=()),
                       fused: dataclasses.replace(problem.options[fused], latency_s=variant_s, threads=(), shares=())}
    schedule = SimSchedule.from_config(algo.config, 2_000, max_policy_lag=0)
    return problem, {**ONE_CPU, LEARNER_UPDATE: Choice("cpu0", replicas=2)}, schedule


def test_the_simulated_run_switches_at_the_round_the_executor_does():
    problem, assignment, schedule = setup()
    result = simulate(problem, assignment, schedule, trace=False, adapt=AdaptOptions(patience_s=0.5),
                      slowdown=SLOWDOWN)
    [correction] = result.corrections
    # as the executor: off at rounds 11-13, re-timed over rounds 14-17, switched at round 17's end (170 updates)
    assert (correction.updates, correction.change) == (170, "learner threads 2 -> 1")
    assert correction.step == 1_050       # the serial order: no actor runs ahead (max_policy_lag 0)
    assert correction.retimed_s == pytest.approx({"2 threads": 3 * COST_S[2], "1 thread": COST_S[1]})
    assert result.updates == 360


def test_without_the_monitor_the_simulated_run_stays_slow():
    problem, assignment, schedule = setup()
    slow = simulate(problem, assignment, schedule, trace=False, slowdown=SLOWDOWN)
    fixed = simulate(problem, assignment, schedule, trace=False, adapt=AdaptOptions(patience_s=0.5),
                     slowdown=SLOWDOWN)
    quiet = simulate(problem, assignment, schedule, trace=False, adapt=AdaptOptions(patience_s=0.5))
    assert slow.corrections == [] and quiet.corrections == []
    assert fixed.elapsed_s < slow.elapsed_s


def test_the_simulated_run_switches_to_a_disputed_variant_at_the_round_the_executor_does():
    """tests/runtime/test_monitor.py's variant case: the planned reference update (1 thread, 10 ms) 3x slower after
    100 calls, the fused one predicted at 12 ms (within the rule's 1.5x)."""
    problem, assignment, schedule = setup(variant_s=12e-3)
    key = (LEARNER_UPDATE, "cpu0", "reference")
    problem.options = {**problem.options, key: dataclasses.replace(problem.options[key], latency_s=10e-3, threads=())}
    slowdown = Slowdown(LEARNER_UPDATE, threads=1, factor=3.0, after_calls=100, variant="reference")
    result = simulate(problem, {**assignment, LEARNER_UPDATE: Choice("cpu0")}, schedule, trace=False,
                      adapt=AdaptOptions(patience_s=0.5), slowdown=slowdown)
    [correction] = result.corrections
    assert (correction.step, correction.updates) == (1_050, 170)
    assert correction.change == "learner reference at 1 thread -> fused at 1 thread"
    assert correction.after == {"variant": "fused", "threads": 1}
    assert correction.retimed_s == pytest.approx({"reference at 1 thread": 30e-3, "fused at 1 thread": 12e-3})
    assert result.updates == 360


def test_the_simulated_run_goes_on_overlapped_at_the_round_the_executor_does():
    """tests/runtime/test_mode_switch.py's case: the env step at 2 ms a vector step, the learner's 2-thread update 3x
    slower after 100 calls, on 2 cores like that test's machine (so the plan's 2-thread learner leaves the overlapped
    mode no faster at the planned costs); the same two corrections at round 18's end, then the actors run ahead."""
    problem, assignment, schedule = setup()
    problem.devices = {**problem.devices, "cpu0": dataclasses.replace(problem.devices["cpu0"], units=2)}
    key = ("env_step", "cpu0", "reference")
    problem.options = {**problem.options, key: dataclasses.replace(problem.options[key], latency_s=2e-3, shares=())}
    problem.process_start_s = 0.5
    rule = AdaptOptions(patience_s=0.5)
    result = simulate(problem, assignment, schedule, trace=False, adapt=rule, slowdown=SLOWDOWN)
    threads, mode = result.corrections
    assert (threads.step, threads.updates, threads.change) == (1_100, 180, "learner threads 2 -> 1")
    assert (mode.step, mode.updates, mode.change) == (1_100, 180, "mode serialized -> overlapped (1 actor)")
    assert result.updates == 360
    kept = simulate(problem, assignment, schedule, trace=False, slowdown=SLOWDOWN,
                    adapt=dataclasses.replace(rule, mode_margin=1.0))      # no mode is 100% faster: threads only
    assert [c.change for c in kept.corrections] == ["learner threads 2 -> 1"]
    assert result.elapsed_s < kept.elapsed_s
