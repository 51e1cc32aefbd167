"""Solution: what a solver returns, behind one interface for every solver.

Example::

    >>> sol = solve(problem, "throughput", solver="milp")
    >>> sol.assignment["learn"].device, sol.optimal, sol.gap
    ('gpu', True, 0.0)
"""
from __future__ import annotations

from dataclasses import dataclass

from pearl_py.optimize.model import Assignment, Performance


@dataclass
class Solution:
    """An assignment with its predicted performance and how sure the solver is.

    ``bound`` is a proven lower bound on the minimised objective (seconds or joules
    per sample); ``gap = (value - bound) / value`` (0 when proven optimal).
    """

    assignment: Assignment
    performance: Performance
    objective: str
    solver: str
    optimal: bool
    bound: float
    seconds: float = 0.0

    @property
    def value(self) -> float:
        return self.performance.objective(self.objective)

    @property
    def gap(self) -> float:
        value = self.value
        return max(0.0, (value - self.bound) / value) if value > 0 else 0.0
