"""A plan as the simulator's input: the assignment problem of its platform, with the plan's own costs.

The problem (devices, links, routes, protocol edges) is rebuilt from the algorithm and the
platform; every cost the plan recorded (``plan.prediction.costs``, with its source, and a synchronous
plan's split costs of its actor kernels) replaces the estimator's, so the simulation plays exactly the
figures the plan was made with.

Example::

    >>> problem, assignment = plan_inputs(plan, algo, Platform.load("cluster-64x8gpu"))
    >>> result = simulate_plan(plan, algo, Platform.load("cluster-64x8gpu"))
    >>> with_simulation(plan, result).prediction.simulation.source
    'simulated'
"""
from __future__ import annotations

import dataclasses
from typing import Any

from pearl_py.errors import PlanningError
from pearl_py.optimize.builder import CostModel, build_problem
from pearl_py.optimize.model import Choice
from pearl_py.optimize.problem import AssignmentProblem
from pearl_py.plan import Plan
from pearl_py.protocol.kernel import ENV_STEP
from pearl_py.runtime.families import family_of
from pearl_py.simulate.result import SimResult
from pearl_py.simulate.simulator import simulate

ROUNDS = 40
"""Training rounds a plan's default simulation covers (the first third is warm-up)."""


def plan_inputs(plan: Plan, algorithm: Any, platform: Any, estimator: CostModel | None = None
                ) -> tuple[AssignmentProblem, dict[str, Choice]]:
    """``(problem, assignment)`` for ``plan`` on ``platform``, costs from the plan where it has them."""
    if estimator is None:
        from pearl_py.estimate import Estimator

        estimator = Estimator()
    # the plan's horizon: variants with a one-off setup (a compile) are offered as the plan weighed them
    horizon = plan.prediction.horizon if plan.prediction is not None else None
    problem = build_problem(algorithm.protocol(), platform, estimator, horizon=horizon)
    assignment = {}
    for kernel, place in plan.placements.items():
        if place.device not in problem.devices:
            raise PlanningError(f"simulate: the plan places {kernel} on {place.device!r}, which platform "
                                f"{platform.name!r} does not have")
        key = (kernel, place.device, place.variant)
        recorded = plan.prediction.cost(kernel, place.device, place.variant) if plan.prediction else None
        base = problem.options.get(key)
        if recorded is not None and base is not None:
            shares = tuple((t.latency_s, t.energy_j) for t in recorded.threads) if base.shares else ()
            problem.options[key] = dataclasses.replace(base, latency_s=recorded.latency_s, energy_j=recorded.energy_j,
                                                       source=recorded.source, shares=shares)
        if key not in problem.options:
            raise PlanningError(f"simulate: no cost for {kernel} on {place.device!r} as {place.variant!r}")
        assignment[kernel] = Choice(place.device, place.variant, place.replicas)
    return problem, assignment


def simulate_plan(plan: Plan, algorithm: Any, platform: Any, *, total_steps: int | None = None,
                  estimator: CostModel | None = None) -> SimResult:
    """Simulate ``plan`` (:func:`with_simulation` adds the result to its prediction, for its report) for
    ``total_steps`` env steps, or None: ``ROUNDS`` training rounds (the family's schedule)."""
    problem, assignment = plan_inputs(plan, algorithm, platform, estimator)
    schedule = family_of(algorithm).simulated_schedule(algorithm.config, total_steps,
                                                       assignment[ENV_STEP].replicas, ROUNDS)
    return simulate(problem, assignment, schedule)


def with_simulation(plan: Plan, result: SimResult) -> Plan:
    """``plan`` whose prediction also holds what the simulation measured (a new plan; ``plan`` is unchanged)."""
    if plan.prediction is None:
        raise PlanningError("simulate: the plan has no prediction to add the simulation to (make it with pearl plan)")
    return plan.with_prediction(dataclasses.replace(plan.prediction, simulation=result.summary()))
