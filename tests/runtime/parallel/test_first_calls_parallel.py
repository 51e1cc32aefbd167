"""Every process of a parallel run calls the kernels it owns once in its start-up (``runtime.first_calls.warm_up``),
so that its first timed ``replay_insert``, ``replay_sample`` and ``inference`` are not a numba compile or cache load:
the actors and the learner's replay, and the replay and inference servers when the run has them."""
from __future__ import annotations

from collections import defaultdict

import pytest
from parallel_helpers import FirstCallsDQN
from served_helpers import SMALL_DQN, plan_with

from pearl_py.runtime.parallel import ParallelExecutor


@pytest.mark.parametrize("services", [{}, {"replay": "server", "inference": "central"}])
def test_each_process_calls_its_kernels_before_its_first_timed_call(tmp_path, services):
    algo = FirstCallsDQN("CartPole-v1", **SMALL_DQN)
    algo.calls = str(tmp_path / "calls")
    ParallelExecutor(algo, plan_with(algo), seed=0, eval_episodes=1, progress=False, **services).run(300)
    events = defaultdict(list)
    for line in open(algo.calls):
        pid, event = line.rstrip("\n").split(" ", 1)
        events[pid].append(event)
    acts = [[e for e in calls if e.endswith("act")] for calls in events.values()]
    replay_calls = [[e for e in calls if not e.endswith("act")] for calls in events.values()]
    acting = [calls for calls in acts if "exploring act" in calls]            # the actor, or the inference server
    replaying = [calls for calls in replay_calls if {"add", "sample"} & set(calls)]  # the learner, or the server
    assert len(acting) == len(replaying) == 1
    assert acting[0][0] == "greedy act"
    assert replaying[0][:2] == ["throwaway add", "throwaway sample"]
