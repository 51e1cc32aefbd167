"""Property: on random small instances the MILP's optimum equals the exhaustive optimum (both objectives)."""
from __future__ import annotations

import pytest
from random_instances import random_problem

from pearl_py.errors import PlanningError
from pearl_py.optimize.exhaustive import solve_exhaustive
from pearl_py.optimize.milp import solve_milp

SEEDS = range(300)


def _best(solver, problem, objective, **kwargs):
    try:
        return solver(problem, objective, **kwargs)
    except PlanningError:
        return None


@pytest.mark.parametrize("objective", ["throughput", "power"])
@pytest.mark.parametrize("threaded", [False, True])
def test_milp_matches_exhaustive(objective, threaded):
    compared = multi_threaded = 0
    for seed in SEEDS:
        problem = random_problem(seed, power_cap=seed % 3 == 0, threaded=threaded)
        exact = _best(solve_exhaustive, problem, objective)
        milp = _best(solve_milp, problem, objective)
        assert (exact is None) == (milp is None), f"seed {seed}: feasibility differs"
        if exact is None:
            continue
        compared += 1
        assert abs(milp.value - exact.value) <= 1e-6 * exact.value, (seed, exact.assignment, milp.assignment)
        assert milp.optimal and milp.gap <= 1e-6
        multi_threaded += any(c.replicas > 1 and not problem.task(k).replicable for k, c in exact.assignment.items())
    assert compared >= 280
    # the threaded instances exercise the thread choices (and the thread-versus-actor cores rows)
    assert (multi_threaded >= 30) if threaded else multi_threaded == 0


@pytest.mark.parametrize("objective", ["throughput", "power"])
def test_milp_matches_exhaustive_on_synchronous_protocols(objective):
    """Synchronous (on-policy) instances: collection and learning phases, split replicas, shared actors."""
    compared = split = 0
    for seed in SEEDS:
        problem = random_problem(seed, power_cap=seed % 3 == 0, synchronous=True)
        exact = _best(solve_exhaustive, problem, objective)
        milp = _best(solve_milp, problem, objective)
        assert (exact is None) == (milp is None), f"seed {seed}: feasibility differs"
        if exact is None:
            continue
        compared += 1
        assert abs(milp.value - exact.value) <= 1e-6 * exact.value, (seed, exact.assignment, milp.assignment)
        assert milp.optimal and milp.gap <= 1e-6
        assert exact.performance.collect_s + exact.performance.learn_s == pytest.approx(
            exact.performance.time_per_sample) or exact.performance.throttled
        split += any(c.replicas > 1 and problem.task(k).replicable for k, c in exact.assignment.items())
    assert compared >= 280
    assert split >= 30          # the instances exercise split actors
