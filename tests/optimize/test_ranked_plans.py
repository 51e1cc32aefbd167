"""Top-k plans: distinct, best first, the first is solve()'s, and no plan left out beats the last one kept."""
from __future__ import annotations

import pytest
from random_instances import random_problem

import pearl_py as pearl
from pearl_py.errors import PlanningError
from pearl_py.optimize.exhaustive import feasible_plans
from pearl_py.optimize.solution import Solution
from pearl_py.optimize.solve import solve, solve_ranked, trim_replicas

K = 4


def _key(assignment):
    return frozenset(assignment.items())


@pytest.mark.parametrize("objective", ["throughput", "power"])
def test_ranked_plans_are_the_best_distinct_plans_in_order(objective):
    compared = 0
    for seed in range(150):
        problem = random_problem(seed, power_cap=seed % 3 == 0)
        try:
            best = solve(problem, objective)
        except PlanningError:  # no feasible plan, or solve()'s greedy start finds none under a tight cap
            continue
        ranked = solve_ranked(problem, objective, k=K)
        values = [s.value for s in ranked]
        assert ranked[0].assignment == best.assignment, seed
        assert values == sorted(values), f"seed {seed}: not best first: {values}"
        assert len({_key(s.assignment) for s in ranked}) == len(ranked), f"seed {seed}: a plan came back twice"
        # every plan (replicas trimmed) is either ranked or no better than the last ranked one
        distinct = set()
        for assignment, perf in feasible_plans(problem):
            trimmed = trim_replicas(problem, Solution(dict(assignment), perf, objective, "x", True, 0.0))
            distinct.add(_key(trimmed.assignment))
            if _key(trimmed.assignment) not in {_key(s.assignment) for s in ranked}:
                assert trimmed.value >= values[-1] * (1 - 1e-9), (seed, trimmed.value, values)
        assert len(ranked) == min(K, len(distinct)), seed
        compared += len(distinct) > K
    assert compared >= 40


def test_ranked_plans_of_an_algorithm_are_distinct_best_first_and_the_first_is_plan():
    algo = pearl.DQN("CartPole-v1", net_arch=[16], batch_size=16)
    platform = pearl.Platform.load("pearl-cpu-gpu-fpga")
    top = pearl.ranked_plans(algo, platform, k=3)
    assert len(top) == 3
    assert len({tuple(sorted(p.placements.items())) for p in top}) == 3
    rates = [p.prediction.samples_per_s for p in top]
    assert rates == sorted(rates, reverse=True)
    assert top[0].placements == pearl.plan(algo, platform).placements
    assert top[1].prediction.pareto == top[0].prediction.pareto


def test_k_below_one_is_refused():
    with pytest.raises(PlanningError, match="k must be >= 1, got 0"):
        solve_ranked(random_problem(1), "throughput", k=0)
