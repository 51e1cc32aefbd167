"""The executors run the learner update with the plan's thread count (``learner_update``'s replicas),
pinned to that many cores where the machine allows it, and the actors with one thread."""
from __future__ import annotations

import dataclasses
import os

import pytest
import torch
from parallel_helpers import TINY_DQN

import pearl_py as pearl
from pearl_py.kernels import REGISTRY, KernelKind
from pearl_py.kernels.affinity import can_pin, usable_cpus
from pearl_py.plan import Placement, Plan
from pearl_py.runtime.parallel import ParallelExecutor
from pearl_py.runtime.serial import SerialExecutor

PROBE = (KernelKind.LEARNER_UPDATE, "cpu", "probe")
AFFINITY: list[frozenset[int]] = []
"""The cores the learner's thread may use at every probe call."""
PINNABLE = can_pin() and len(usable_cpus()) >= 2


@pytest.fixture
def seen(monkeypatch) -> list[int]:
    """Register a ``probe`` learner update that records ``torch.get_num_threads()`` at every call
    (the learner runs in this process); restores this process's thread count afterwards."""
    calls: list[int] = []

    def build(learner):
        def update(batch):
            calls.append(torch.get_num_threads())
            AFFINITY.append(frozenset(os.sched_getaffinity(0)))
            return learner.update(batch)
        return update

    reference = REGISTRY.get("learner_update", "reference", "cpu")
    monkeypatch.setitem(REGISTRY._variants, PROBE, dataclasses.replace(reference, name="probe", builder=build))
    before = torch.get_num_threads()
    AFFINITY.clear()
    yield calls
    torch.set_num_threads(before)


def threaded_plan(algo: pearl.Algorithm, threads: int, serialized: bool = False) -> Plan:
    plan = Plan.single_device(algo.protocol(serialized=serialized))
    plan.placements["learner_update"] = Placement("cpu", "probe", threads)
    return plan


@pytest.mark.parametrize("threads", [1, 2])
def test_parallel_learner_runs_the_planned_threads(seen, threads):
    algo = pearl.DQN("CartPole-v1", **TINY_DQN)
    result = ParallelExecutor(algo, threaded_plan(algo, threads), seed=0, eval_episodes=1).run(600)
    assert result.gradient_steps == len(seen) > 0
    assert set(seen) == {threads}
    assert result.layout["learner_threads"] == threads


def test_serial_executor_runs_the_planned_threads(seen):
    algo = pearl.DQN("CartPole-v1", **TINY_DQN)
    SerialExecutor(algo, seed=0, eval_episodes=1, plan=threaded_plan(algo, 2, serialized=True)).run(600)
    assert seen and set(seen) == {2}
    SerialExecutor(algo, seed=0, eval_episodes=1, plan=threaded_plan(algo, 2, serialized=True), threads=1).run(600)
    assert seen[-1] == 1


@pytest.mark.skipif(not PINNABLE, reason="needs sched_setaffinity and 2 usable cores")
@pytest.mark.parametrize("serialized", [False, True])
def test_a_threaded_learner_is_pinned_during_the_run_and_released_after(seen, serialized):
    algo = pearl.DQN("CartPole-v1", **TINY_DQN)
    before = os.sched_getaffinity(0)
    plan = threaded_plan(algo, 2, serialized=serialized)
    executor = (SerialExecutor(algo, seed=0, eval_episodes=1, plan=plan) if serialized
                else ParallelExecutor(algo, plan, seed=0, eval_episodes=1))
    executor.run(600)
    assert seen and set(AFFINITY) == {frozenset({usable_cpus()[0]})}
    assert os.sched_getaffinity(0) == before and "PEARL_CPUS" not in os.environ


def test_a_one_thread_learner_is_not_pinned(seen):
    algo = pearl.DQN("CartPole-v1", **TINY_DQN)
    before = frozenset(os.sched_getaffinity(0))
    ParallelExecutor(algo, threaded_plan(algo, 1), seed=0, eval_episodes=1).run(600)
    assert seen and set(AFFINITY) == {before}
