"""One entry point for every solver: ``solve(problem, objective, solver="auto")``.

``auto`` runs the greedy heuristic (it also scales the MILP and is its first incumbent), then
the MILP within a time limit when the model is small enough. A MILP stopped by the limit returns
its best plan as ``milp (time limit)``, or the heuristic's if that is better; one that would be too
large hands over to the heuristic. Either way the gap to the best proven bound is reported.

``solve_ranked`` returns the ``k`` best distinct plans, best first (the first is ``solve``'s).

Example::

    >>> sol = solve(problem, "power")
    >>> sol.solver, f"{sol.gap:.1%}"
    ('milp', '0.0%')
    >>> [round(s.performance.samples_per_s) for s in solve_ranked(problem, "throughput", k=3)]
    [3521, 3028, 2714]
"""
from __future__ import annotations

import time
from bisect import bisect_left

from pearl_py.errors import PlanningError
from pearl_py.optimize.exhaustive import (
    MAX_PLANS,
    count_plans,
    feasible_plans,
    solve_exhaustive,
)
from pearl_py.optimize.heuristic import solve_heuristic
from pearl_py.optimize.milp import milp_size, relaxation_bound, solve_milp
from pearl_py.optimize.model import (
    OBJECTIVES,
    Assignment,
    Choice,
    evaluate,
    kernel_bound,
)
from pearl_py.optimize.problem import AssignmentProblem
from pearl_py.optimize.solution import Solution

SOLVERS = ("auto", "exhaustive", "milp", "heuristic")
TIE = 1e-9
"""Relative difference below which two plans' objectives are equal."""
MILP_SIZE_LIMIT = 60_000
"""Above this many placement binaries plus crossing pairs the MILP is not tried."""


def solve(problem: AssignmentProblem, objective: str = "throughput", solver: str = "auto",
          time_limit_s: float = 5.0) -> Solution:
    """Best plan for ``objective`` (``throughput``: min seconds/sample; ``power``: min joules/sample)."""
    if objective not in OBJECTIVES:
        raise PlanningError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    if solver not in SOLVERS:
        raise PlanningError(f"solver must be one of {', '.join(SOLVERS)}, got {solver!r}")
    check_power_cap(problem)
    started = time.perf_counter()
    if solver == "exhaustive":
        return trim_replicas(problem, solve_exhaustive(problem, objective))
    greedy = solve_heuristic(problem, objective)
    scale = (greedy.performance.time_per_sample, greedy.performance.energy_per_sample_j)
    if solver == "heuristic":
        greedy.bound = min(_bound(problem, objective, scale, time_limit_s), greedy.value)
        return trim_replicas(problem, greedy)
    size = milp_size(problem)
    if solver == "milp" or size <= MILP_SIZE_LIMIT:
        best = solve_milp(problem, objective, time_limit_s=None if solver == "milp" else time_limit_s, scale=scale,
                          incumbent=greedy.assignment)
        # time limit hit before the incumbent beat the greedy plan (ties within float noise stay the MILP's:
        # on the one-CPU local problem both find the same plan, and it was reported as a time-out)
        if best.value > greedy.value * (1 + TIE):
            greedy.bound, best = min(best.bound, greedy.value), greedy
            best.solver = "heuristic (MILP time limit)"
        elif not best.optimal:
            best.solver = "milp (time limit)"
    else:
        greedy.bound = min(_bound(problem, objective, scale, time_limit_s), greedy.value)
        greedy.solver = f"heuristic (MILP too large: {size} variables)"
        best = greedy
    best.seconds = time.perf_counter() - started
    return trim_replicas(problem, best)


def solve_ranked(problem: AssignmentProblem, objective: str = "throughput", k: int = 3, solver: str = "auto",
                 time_limit_s: float = 5.0) -> list[Solution]:
    """The ``k`` best distinct plans by ``objective``, best first; fewer when fewer exist.

    The first is :func:`solve`'s plan. The others come from enumerating every plan (at most
    ``exhaustive.MAX_PLANS``), ranked by the objective, then the other objective, then
    enumeration order; replicas are trimmed first, so plans that differ only by idle
    replicas count once. Enumeration is exact: a MILP re-solved with no-good cuts was
    tried and HiGHS returned a worse plan as "optimal" on some random instances.
    """
    if k < 1:
        raise PlanningError(f"k must be >= 1, got {k}")
    first = solve(problem, objective, solver, time_limit_s)
    ranked, seen = [first], {_plan_key(first.assignment)}
    if k == 1:
        return ranked
    if count_plans(problem) > MAX_PLANS:
        raise PlanningError(f"ranking {k} plans enumerates them all, and {problem.name!r} has "
                            f"{count_plans(problem)} (limit {MAX_PLANS})")
    plans = sorted(feasible_plans(problem), key=lambda p: p[1].ranking(objective))
    for assignment, perf in plans:
        candidate = trim_replicas(problem, Solution(assignment, perf, objective, "exhaustive (ranked)",
                                                    optimal=False, bound=first.bound))
        key = _plan_key(candidate.assignment)
        if key not in seen:
            seen.add(key)
            ranked.append(candidate)
            if len(ranked) == k:
                break
    return ranked


def _plan_key(assignment: Assignment) -> frozenset:
    return frozenset(assignment.items())


def _bound(problem: AssignmentProblem, objective: str, scale: tuple[float, float], time_limit_s: float) -> float:
    """LP-relaxation bound when it solves in time, else the per-kernel bound."""
    if milp_size(problem) <= 4 * MILP_SIZE_LIMIT:
        try:
            return relaxation_bound(problem, objective, scale, time_limit_s=time_limit_s)
        except PlanningError:
            pass
    return kernel_bound(problem, objective)


def check_power_cap(problem: AssignmentProblem) -> None:
    """A cap below the idle power of every device able to host some kernel is reported up front."""
    cap = problem.power_cap_w
    if cap is None:
        return
    for task in problem.tasks:
        hosts = {d for d, _ in problem.candidates(task.name)}
        idle = {d: sum(problem.devices[m].idle_w for m in problem.devices[d].physical) for d in hosts}
        if idle and min(idle.values()) >= cap:
            cheapest = min(idle, key=idle.get)
            raise PlanningError(f"kernel {task.name!r}: power cap {cap:g} W is below the idle power of every "
                                f"device that can host it (least: {cheapest} idles at {idle[cheapest]:g} W)")


def trim_replicas(problem: AssignmentProblem, solution: Solution) -> Solution:
    """Fewest replicas per replicable kernel that keep the plan's time and energy per sample."""
    assignment = dict(solution.assignment)
    target = solution.performance
    for name, choice in assignment.items():
        members = len(problem.devices[choice.device].physical)

        def keeps(n: int) -> bool:  # called within this iteration only
            perf = evaluate(problem, {**assignment, name: Choice(choice.device, choice.variant, n * members)})
            return perf.feasible and perf.time_per_sample <= target.time_per_sample * (1 + 1e-12) \
                and perf.energy_per_sample_j <= target.energy_per_sample_j * (1 + 1e-12)

        fewest = 1 + bisect_left(range(1, choice.replicas // members), True, key=keeps)
        assignment[name] = Choice(choice.device, choice.variant, fewest * members)
    solution.assignment = assignment
    solution.performance = evaluate(problem, assignment)
    return solution
