"""The idle-power levels the energy search splits between, and the search on a problem small enough to check by hand."""
from __future__ import annotations

import pytest
from random_instances import random_problem

from pearl_py.errors import PlanningError
from pearl_py.optimize import idle_levels as idle_module
from pearl_py.optimize.exhaustive import solve_exhaustive
from pearl_py.optimize.heuristic import solve_heuristic
from pearl_py.optimize.idle_levels import GRID_RATIO, idle_levels
from pearl_py.optimize.milp import solve_milp
from pearl_py.optimize.model import Choice, evaluate
from pearl_py.optimize.problem import AssignmentProblem, Device, Option, Task


def test_levels_are_the_subset_sums_from_the_least_idle_power():
    levels = idle_levels([55.0, 55.0, 65.0], least=60.0)
    assert levels.exact and levels.watts == [65.0, 110.0, 120.0, 175.0]
    assert levels.budget(0) == pytest.approx(87.5) and levels.budget(3) > 175.0
    assert (levels.at_least(110.0), levels.at_least(111.0), levels.at_most(119.0)) == (1, 2, 1)


def test_too_many_sums_become_a_geometric_grid():
    watts = [10.0 + 0.37 * i for i in range(20)]  # distinct, so 2**20 sums
    levels = idle_levels(watts, least=10.0, limit=1000)
    assert not levels.exact
    assert levels.watts[0] == 10.0 and levels.watts[-1] == pytest.approx(sum(watts))
    ratios = [b / a for a, b in zip(levels.watts, levels.watts[1:-1])]
    assert max(ratios) == pytest.approx(GRID_RATIO) and min(ratios) == pytest.approx(GRID_RATIO)
    # plans draw any idle power between grid levels: an interval's budget reaches the next level
    assert levels.budget(3) == levels.watts[4]


def test_power_optimum_weighs_a_second_device_idle_power_against_the_time_it_saves():
    """act (CPU only) then learn: on the CPU too the plan is slow; on the GPU it is fast but the GPU idles 30 W.
    E = idle * T + dynamic: CPU alone 20 W * 3 ms + 2 mJ = 62 mJ; CPU + GPU 50 W * 1 ms + 3 mJ = 53 mJ."""
    problem = AssignmentProblem(
        tasks=(Task("act", 1.0), Task("learn", 1.0)),
        devices={"cpu": Device("cpu", "cpu", 1, 20.0, 80.0), "gpu": Device("gpu", "gpu", 1, 30.0, 300.0)},
        options={("act", "cpu", "reference"): Option(1e-3, 1e-3), ("learn", "cpu", "reference"): Option(2e-3, 1e-3),
                 ("learn", "gpu", "reference"): Option(5e-4, 2e-3)})
    cpu_only = evaluate(problem, {"act": Choice("cpu"), "learn": Choice("cpu")})
    both = evaluate(problem, {"act": Choice("cpu"), "learn": Choice("gpu")})
    assert (cpu_only.energy_per_sample_j, both.energy_per_sample_j) == (pytest.approx(0.062), pytest.approx(0.053))
    sol = solve_milp(problem, "power")
    assert sol.assignment["learn"].device == "gpu" and sol.optimal
    assert sol.bound == pytest.approx(0.053)
    # a 45 W cap is below the two devices' idle power (50 W): the CPU alone (62 mJ / 3 ms = 20.7 W) is the plan
    problem.power_cap_w = 45.0
    assert solve_milp(problem, "power").assignment["learn"].device == "cpu"


def test_on_a_grid_the_search_proves_a_small_gap_and_a_valid_bound(monkeypatch):
    """Too many distinct idle sums (forced here) make the levels a grid: the bound stays valid, the plan within
    the grid's ratio of the optimum, and the plan is called optimal only when its gap is closed."""
    monkeypatch.setattr(idle_module, "MAX_LEVELS", 2)
    compared = 0
    for seed in range(40):
        problem = random_problem(seed, power_cap=seed % 3 == 0)
        try:
            exact = solve_exhaustive(problem, "power")
        except PlanningError:
            continue
        sol = solve_milp(problem, "power")
        assert sol.bound <= exact.value * (1 + 1e-9) <= sol.value * (1 + 1e-9) + 1e-12, seed
        assert sol.gap <= 2 * (GRID_RATIO - 1), (seed, sol.gap)
        assert sol.optimal == (sol.gap <= 1e-6), seed
        compared += 1
    assert compared >= 30


def test_a_search_out_of_time_returns_its_incumbent_with_a_valid_bound_or_says_it_found_nothing():
    problem = random_problem(5)
    exact = solve_exhaustive(problem, "power")
    greedy = solve_heuristic(problem, "power")
    sol = solve_milp(problem, "power", time_limit_s=1e-9, incumbent=greedy.assignment)
    assert sol.assignment == greedy.assignment and not sol.optimal
    assert 0 < sol.bound <= exact.value and 0 < sol.gap < 1
    with pytest.raises(PlanningError, match=r"^the MILP found no plan within "):
        solve_milp(problem, "power", time_limit_s=1e-9)
