"""Property: the Pareto front and the single-objective plans agree, on random instances with and without a power cap.

Every single-objective optimum (``solve``'s throughput and power plans) is a point of the front and no front
point dominates it; the front is sorted fastest first and non-dominated; and every front point is
Pareto-optimal among all feasible plans (checked by enumeration).
"""
from __future__ import annotations

import itertools

import pytest
from random_instances import random_problem

from pearl_py.errors import PlanningError
from pearl_py.optimize.exhaustive import feasible_plans
from pearl_py.optimize.pareto import pareto_front
from pearl_py.optimize.solve import solve

SEEDS = range(100)
TOL = 1e-6
"""Relative tolerance on samples/s and samples/J (the MILP's held objective may move by 1e-9)."""


def _dominates(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """``a`` is at least as fast and as frugal as ``b`` and better in one, beyond ``TOL``."""
    return (a[0] >= b[0] * (1 - TOL) and a[1] >= b[1] * (1 - TOL)
            and (a[0] > b[0] * (1 + TOL) or a[1] > b[1] * (1 + TOL)))


def _same(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return abs(a[0] - b[0]) <= TOL * b[0] and abs(a[1] - b[1]) <= TOL * b[1]


@pytest.mark.parametrize("capped", [False, True], ids=["uncapped", "power cap"])
def test_single_objective_optima_lie_on_a_pareto_optimal_front(capped):
    compared = longer = 0
    for seed in SEEDS:
        problem = random_problem(seed, power_cap=capped)
        try:
            fastest, frugal = solve(problem, "throughput"), solve(problem, "power")
        except PlanningError:  # no feasible plan (a tight cap)
            continue
        assert fastest.optimal and frugal.optimal, seed
        front = [(p.samples_per_s, p.samples_per_j) for p in pareto_front(problem, fastest, frugal, points=5)]
        assert all(a[0] > b[0] and a[1] < b[1] for a, b in itertools.pairwise(front)), (seed, front)
        for sol in (fastest, frugal):
            point = (sol.performance.samples_per_s, sol.performance.samples_per_j)
            assert any(_same(point, p) for p in front), (seed, sol.objective, point, front)
            assert not any(_dominates(p, point) for p in front), (seed, sol.objective, point, front)
        plans = [(perf.samples_per_s, perf.samples_per_j) for _, perf in feasible_plans(problem)]
        for p in front:
            assert not any(_dominates(q, p) for q in plans), (seed, p)
        compared += 1
        longer += len(front) > 2
    assert compared >= 80
    assert longer >= 10  # some fronts have interior points, not just the two optima
