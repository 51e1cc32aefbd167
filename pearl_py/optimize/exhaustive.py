"""Exhaustive enumeration: every device, variant and replica (or thread) count for every kernel (exact, small).

Example::

    >>> sol = solve_exhaustive(problem, "power")
    >>> sol.optimal
    True
"""
from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterator

from pearl_py.errors import PlanningError
from pearl_py.optimize.model import Assignment, Performance, evaluate, placements
from pearl_py.optimize.problem import AssignmentProblem
from pearl_py.optimize.solution import Solution

MAX_PLANS = 200_000
"""Refuse instances with more plans than this; use the MILP."""


def count_plans(problem: AssignmentProblem) -> int:
    return math.prod(len(placements(problem, t.name)) for t in problem.tasks)


def feasible_plans(problem: AssignmentProblem) -> Iterator[tuple[Assignment, Performance]]:
    """Every feasible plan with its predicted performance, in enumeration order."""
    problem.check_hostable()
    if count_plans(problem) > MAX_PLANS:
        raise ValueError(f"{count_plans(problem)} plans are too many to enumerate (limit {MAX_PLANS})")
    names = [t.name for t in problem.tasks]
    for combo in itertools.product(*(placements(problem, k) for k in names)):
        assignment = dict(zip(names, combo))
        perf = evaluate(problem, assignment)
        if perf.feasible:
            yield assignment, perf


def solve_exhaustive(problem: AssignmentProblem, objective: str) -> Solution:
    """The best feasible plan by ``objective``; ties go to the other objective, then to enumeration order."""
    started = time.perf_counter()
    best = best_key = None
    for assignment, perf in feasible_plans(problem):
        key = perf.ranking(objective)
        if best_key is None or key[0] < best_key[0] * (1 - 1e-12) or (
                key[0] <= best_key[0] * (1 + 1e-12) and key[1] < best_key[1]):
            best, best_key = (assignment, perf), key
    if best is None:
        raise PlanningError(f"no plan of {problem.name!r} satisfies every constraint (cores, memory, "
                            "FPGA resources, power cap)")
    return Solution(best[0], best[1], objective, "exhaustive", optimal=True, bound=best_key[0],
                    seconds=time.perf_counter() - started)
