"""A replay on a GPU is one TorchReplayBuffer in the learner's process: the optimizer places its kernels on a GPU
together and with the learner, every solver alike; the planned GPU replay is costed as that buffer's calls."""
from __future__ import annotations

import dataclasses

import pytest
from random_instances import random_problem

import pearl_py as pearl
from pearl_py.errors import PlanningError
from pearl_py.estimate import Estimator
from pearl_py.optimize.api import plan
from pearl_py.optimize.builder import build_problem
from pearl_py.optimize.exhaustive import solve_exhaustive
from pearl_py.optimize.milp import solve_milp
from pearl_py.optimize.model import Choice, evaluate
from pearl_py.optimize.problem import Colocation
from pearl_py.platform import Platform

REPLAY = ("replay_insert", "replay_sample", "priority_update")


@pytest.fixture(scope="module")
def problem():
    algo = pearl.DQN("CartPole-v1", net_arch=[256, 256], batch_size=256, prioritized_replay=True)
    return build_problem(algo.protocol(), Platform.load("pearl-cpu-gpu-fpga"), Estimator(use_cache=False))


def test_the_builder_ties_the_replay_to_the_learner_on_every_gpu(problem):
    (rule,) = problem.colocations
    assert rule.kernels == REPLAY and rule.devices == ("gpu",) and rule.with_kernel == "learner_update"


def test_the_model_refuses_a_split_replay_or_a_gpu_replay_apart_from_the_learner(problem):
    base = {t.name: Choice("cpu", replicas=1) for t in problem.tasks}
    assert evaluate(problem, base).feasible
    split = evaluate(problem, {**base, "replay_sample": Choice("gpu"), "learner_update": Choice("gpu")})
    assert split.violations == [("replay_sample on 'gpu' but replay_insert, priority_update elsewhere (a replay on "
                                 "a GPU is one TorchReplayBuffer in the learner's process)")]
    apart = evaluate(problem, {**base, **{k: Choice("gpu") for k in REPLAY}})
    assert apart.violations == [("replay_insert, replay_sample, priority_update on 'gpu' without learner_update "
                                 "(a replay on a GPU is one TorchReplayBuffer in the learner's process)")]
    assert evaluate(problem, {**base, **{k: Choice("gpu") for k in (*REPLAY, "learner_update")}}).feasible


@pytest.mark.parametrize("objective", ["throughput", "power"])
def test_milp_and_exhaustive_agree_under_colocations(objective):
    compared = 0
    for seed in range(120):
        problem = random_problem(seed)
        names = [t.name for t in problem.tasks]
        if len(names) < 3 or "gpu" not in problem.devices:
            continue
        problem = dataclasses.replace(problem, colocations=(Colocation(tuple(names[:2]), ("gpu",), names[-1], "t"),))
        try:
            exact = solve_exhaustive(problem, objective)
        except PlanningError:
            with pytest.raises(PlanningError):
                solve_milp(problem, objective)
            continue
        milp = solve_milp(problem, objective)
        assert abs(milp.value - exact.value) <= 1e-6 * exact.value, (seed, exact.assignment, milp.assignment)
        assert evaluate(problem, milp.assignment).feasible
        compared += 1
    assert compared >= 40


def test_plans_put_a_gpu_replay_only_beside_a_gpu_learner():
    platform = Platform.load("dgx-a100-node")
    for algo in (pearl.DQN("CartPole-v1", prioritized_replay=True, net_arch=[256, 256], batch_size=256),
                 pearl.DDPG("Pendulum-v1", prioritized_replay=True)):
        for objective in ("throughput", "power"):
            chosen = plan(algo, platform, objective=objective, estimator=Estimator(use_cache=False))
            where = {k: chosen.placements[k].device for k in (*REPLAY, "learner_update")}
            if any(chosen.devices[where[k]] == "gpu" for k in REPLAY):
                assert len(set(where.values())) == 1, where
