"""The throughput-power Pareto front by an epsilon-constraint sweep over time per sample.

Between the fastest plan (time ``T_fast``) and the most frugal one (``T_frugal``), each
point minimises energy per sample subject to ``T <= tau`` for ``tau`` on a geometric
grid (Haimes et al. 1971), then time per sample with that energy held (lexicographic, so no
point is weakly dominated); dominated and repeated plans are dropped. The end points are the
two single-objective optima, each lexicographic too (the fastest plan spending the least
energy, the most frugal one running fastest), so both lie on the front.

Example::

    >>> front = pareto_front(problem, points=6)
    >>> [(round(p.samples_per_s), round(p.samples_per_j, 1)) for p in front]
    [(8000, 21.3), (5200, 30.9)]
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pearl_py.errors import PlanningError
from pearl_py.optimize.milp import solve_milp
from pearl_py.optimize.model import Assignment
from pearl_py.optimize.problem import AssignmentProblem
from pearl_py.optimize.solution import Solution


@dataclass(frozen=True)
class ParetoPoint:
    """One non-dominated plan: its rates and its assignment."""

    samples_per_s: float
    samples_per_j: float
    power_w: float
    assignment: Assignment


def _point(sol: Solution) -> ParetoPoint:
    p = sol.performance
    return ParetoPoint(p.samples_per_s, p.samples_per_j, p.power_w, dict(sol.assignment))


def nondominated(points: list[ParetoPoint]) -> list[ParetoPoint]:
    """Points no other point beats on both rates, fastest first, near-duplicates merged."""
    keep: list[ParetoPoint] = []
    for p in sorted(points, key=lambda p: (-p.samples_per_s, -p.samples_per_j)):
        if keep and p.samples_per_j <= keep[-1].samples_per_j * (1 + 1e-9):
            continue
        keep.append(p)
    return keep


def pareto_front(problem: AssignmentProblem, fastest: Solution, frugal: Solution, points: int = 7,
                 exact: bool = True, time_limit_s: float | None = None) -> list[ParetoPoint]:
    """Front between the throughput optimum ``fastest`` and the power optimum ``frugal``.

    With ``exact=False`` (instances left to the heuristic) only the two end points are returned.
    Each interior point's solve is warm-started from ``fastest`` (a plan within every ``tau``) and
    given ``time_limit_s``; a point not proven optimal in it is left out (the front lists proven points).
    """
    found = [_point(fastest), _point(frugal)]
    t_fast = fastest.performance.time_per_sample
    t_frugal = frugal.performance.time_per_sample
    if exact and t_frugal > t_fast * (1 + 1e-9):
        scale = (t_fast, frugal.performance.energy_per_sample_j)
        for tau in np.geomspace(t_fast, t_frugal, points)[1:-1]:
            try:
                sol = solve_milp(problem, "power", time_limit_s=time_limit_s, scale=scale, max_time=float(tau),
                                 incumbent=fastest.assignment)
            except PlanningError:
                continue
            if sol.optimal:
                found.append(_point(sol))
    return nondominated(found)
