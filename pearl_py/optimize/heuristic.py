"""Greedy list scheduling plus local search, for instances too large for the MILP's time limit.

Kernels are placed one at a time in decreasing order of their cheapest work per sample
(HEFT's rank, Topcuoglu et al. 2002), each where the partial plan's objective is best;
then single-kernel moves (device, variant, replicas or threads) are applied while one improves it.

Example::

    >>> sol = solve_heuristic(problem, "throughput")
    >>> sol.solver
    'heuristic'
"""
from __future__ import annotations

import time

from pearl_py.errors import PlanningError
from pearl_py.optimize.model import Assignment, Choice, Performance, evaluate
from pearl_py.optimize.problem import AssignmentProblem
from pearl_py.optimize.solution import Solution


def _free_units(problem: AssignmentProblem, assignment: Assignment, kernel: str, device: str) -> int:
    """Replica slots per member left on ``device`` by the other replicable kernels."""
    used = 0
    members = set(problem.devices[device].physical)
    for other, choice in assignment.items():
        if other == kernel or not problem.task(other).replicable:
            continue
        placed = problem.devices[choice.device].physical
        if members & set(placed):
            used = max(used, choice.replicas // len(placed))
    return problem.devices[device].units - used


def moves(problem: AssignmentProblem, assignment: Assignment, kernel: str) -> list[Choice]:
    """Choices tried for ``kernel``: every device and variant; replicas all free units, half, one (a split
    kernel of a synchronous protocol: every count up to its envs); every thread count of a threaded option."""
    out = []
    replicable = problem.task(kernel).replicable
    for device, variant in problem.candidates(kernel):
        m = len(problem.devices[device].physical)        # 1 for a kernel that is not replicable (never on a pool)
        if not replicable or problem.split(kernel):      # a split kernel's every count (at most the envs) is cheap
            out += [Choice(device, variant, n * m) for n in problem.replica_choices(kernel, device, variant)]
            continue
        free = _free_units(problem, assignment, kernel, device)
        for per_member in sorted({free, max(1, free // 2), 1}):
            if per_member >= 1:
                out.append(Choice(device, variant, per_member * m))
    return out


def _key(perf: Performance, objective: str) -> tuple[float, float, float]:
    return (len(perf.violations), *perf.ranking(objective))


def solve_heuristic(problem: AssignmentProblem, objective: str, max_rounds: int = 25,
                    bound: float = 0.0) -> Solution:
    """A good feasible plan; ``bound`` (from a relaxation) sets the reported gap."""
    started = time.perf_counter()
    problem.check_hostable()
    order = sorted(problem.tasks, key=lambda t: -min(
        t.rate * problem.option(t.name, d, v).latency_s for d, v in problem.candidates(t.name)))
    assignment: dict[str, Choice] = {}
    for task in order:
        best = min(moves(problem, assignment, task.name),
                   key=lambda c: _key(evaluate(problem, {**assignment, task.name: c}), objective))
        assignment[task.name] = best
    current = _key(evaluate(problem, assignment), objective)
    for _ in range(max_rounds):
        improved = False
        for task in order:
            for choice in moves(problem, assignment, task.name):
                trial = {**assignment, task.name: choice}
                key = _key(evaluate(problem, trial), objective)
                if key < current and (key[0] < current[0] or key[1] < current[1] * (1 - 1e-12)
                                      or key[2] < current[2] * (1 - 1e-12)):
                    assignment, current, improved = trial, key, True
        if not improved:
            break
    perf = evaluate(problem, assignment)
    if not perf.feasible:
        raise PlanningError(f"no plan of {problem.name!r} satisfies every constraint: "
                            f"{'; '.join(perf.violations)}")
    return Solution(assignment, perf, objective, "heuristic", optimal=False,
                    bound=min(bound, perf.objective(objective)), seconds=time.perf_counter() - started)
