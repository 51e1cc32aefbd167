"""``pearl.plan``: the best assignment of an algorithm's kernels to a platform's devices.

Example::

    >>> import pearl_py as pearl
    >>> plan = pearl.plan(pearl.DQN("CartPole-v1"), pearl.Platform.load("pearl-cpu-gpu-fpga"),
    ...                   objective="power", constraints={"power_cap_w": 400})
    >>> plan.placements["replay_sample"].device, round(plan.predicted["samples_per_j"])
    ('fpga', 806)
    >>> plan.export("out/plan")          # plan.yaml, plan.json, report.md, report.html
    >>> top = pearl.ranked_plans(pearl.DQN("CartPole-v1"), pearl.Platform.local(), k=3)  # best first
    >>> [(p.placements["inference"].variant, p.placements["learner_update"].variant) for p in top]
    [('fused', 'fused'), ('reference', 'fused'), ('fused', 'reference')]
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pearl_py.optimize.builder import Constraints, CostModel, build_problem
from pearl_py.optimize.explain import compare_sentence, limit_sentence, thread_sentences
from pearl_py.optimize.model import OBJECTIVES
from pearl_py.optimize.pareto import pareto_front
from pearl_py.optimize.plan import Placement, Plan
from pearl_py.optimize.problem import AssignmentProblem
from pearl_py.optimize.solution import Solution
from pearl_py.optimize.solve import solve, solve_ranked
from pearl_py.optimize.whole_run import whole_run
from pearl_py.protocol import KernelKind, ProtocolGraph


def plan(algo: Any, platform: Any, objective: str = "throughput",
         constraints: Constraints | Mapping[str, Any] | None = None, *, solver: str = "auto",
         estimator: CostModel | None = None, time_limit_s: float = 5.0, pareto_points: int = 7,
         horizon: float | None = None, refused_variants: Mapping[str, Mapping[str, str]] | None = None) -> Plan:
    """Solve the assignment of ``algo``'s protocol on ``platform`` (a Platform or a catalogue name/path).

    ``objective``: ``throughput`` (samples/s) or ``power`` (samples/J). ``constraints``:
    ``power_cap_w``, ``pin`` ({kernel: device}), ``exclude`` (devices). ``horizon``: env
    steps the run will take; a kernel variant with a one-off setup (the ``compiled``
    learner update's compile) is chosen only when it pays that back within them
    (``None``: unknown, so it is not; ``float("inf")``: steady state). ``refused_variants``:
    ``{kernel: {variant: reason}}`` the algorithm cannot use (the runtime works it out,
    :func:`pearl_py.runtime.planning.refused_variants`); they are not offered. The plan's
    ``predicted`` holds the model's figures, the cost table with sources, the Pareto
    front, the other objective's plan and the explanation sentences.
    """
    return ranked_plans(algo, platform, objective, constraints, k=1, solver=solver, estimator=estimator,
                        time_limit_s=time_limit_s, pareto_points=pareto_points, horizon=horizon,
                        refused_variants=refused_variants)[0]


def ranked_plans(algo: Any, platform: Any, objective: str = "throughput",
                 constraints: Constraints | Mapping[str, Any] | None = None, *, k: int = 3, solver: str = "auto",
                 estimator: CostModel | None = None, time_limit_s: float = 5.0, pareto_points: int = 7,
                 horizon: float | None = None,
                 refused_variants: Mapping[str, Mapping[str, str]] | None = None) -> list[Plan]:
    """The ``k`` best distinct plans by ``objective``, best first (fewer when fewer exist).

    Arguments as :func:`plan`, whose plan is the first. The others come from ranking every
    plan by the model (:func:`pearl_py.optimize.solve.solve_ranked`), so the order is exact.
    Every plan carries the full ``predicted`` (its own figures; the Pareto front and the
    other objective's plan are shared). ``pearl run --auto --tune`` measures them (docs/runtime.md).
    """
    from pearl_py.errors import PlanningError

    if objective not in OBJECTIVES:
        raise PlanningError(f"objective must be throughput or power, got {objective!r}")
    if isinstance(platform, str):
        from pearl_py.platform import Platform

        platform = Platform.load(platform)
    if estimator is None:
        from pearl_py.estimate import Estimator

        estimator = Estimator()
    protocol = algo if isinstance(algo, ProtocolGraph) else algo.protocol()
    problem = build_problem(protocol, platform, estimator, constraints, horizon=horizon,
                            refused_variants=refused_variants)
    ranked = solve_ranked(problem, objective, k, solver, time_limit_s)
    other_objective = "power" if objective == "throughput" else "throughput"
    other = solve(problem, other_objective, solver, time_limit_s)
    fastest, frugal = (ranked[0], other) if objective == "throughput" else (other, ranked[0])
    exact = ranked[0].optimal and other.optimal and solver != "heuristic"
    front = [p.to_dict() for p in pareto_front(problem, fastest, frugal, points=pareto_points, exact=exact,
                                               time_limit_s=time_limit_s)]
    plans = []
    for chosen in ranked:
        predicted = describe(problem, protocol, chosen)
        predicted["alternative"] = {"objective": other_objective, **_summary(problem, other)}
        predicted["comparison"] = compare_sentence(problem, (chosen.assignment, chosen.performance), objective,
                                                   (other.assignment, other.performance))
        predicted["pareto"] = front
        predicted["platform"] = platform.to_dict()
        predicted["horizon"] = horizon
        predicted["run"] = whole_run(problem, protocol, chosen.assignment, chosen.performance, horizon)
        plans.append(Plan(platform=platform.name, objective=objective, placements=_placements(chosen),
                          predicted=predicted, solver=chosen.solver))
    return plans


def _placements(sol: Solution) -> dict[str, Placement]:
    return {k: Placement(c.device, c.variant, c.replicas) for k, c in sol.assignment.items()}


def _summary(problem: AssignmentProblem, sol: Solution) -> dict[str, Any]:
    perf = sol.performance
    return {
        "samples_per_s": perf.samples_per_s, "samples_per_j": perf.samples_per_j, "power_w": perf.power_w,
        "time_per_sample_s": perf.time_per_sample, "energy_per_sample_j": perf.energy_per_sample_j,
        "bottleneck": perf.bottleneck,
        "placements": {k: {"device": c.device, "variant": c.variant, "replicas": c.replicas}
                       for k, c in sol.assignment.items()},
    }


def cpu_gpu_ratio(problem: AssignmentProblem, protocol: ProtocolGraph, sol: Solution) -> dict[str, Any]:
    """Actor cores (replicas of replicable kernels on CPUs) per GPU running the learner."""
    actor_cores = sum(c.replicas for k, c in sol.assignment.items()
                      if problem.task(k).replicable and problem.devices[c.device].kind == "cpu")
    learner_gpus = {m for k in protocol.by_kind(KernelKind.LEARNER_UPDATE)
                    for m in problem.devices[sol.assignment[k.name].device].physical
                    if problem.devices[m].kind == "gpu"}
    ratio = actor_cores / len(learner_gpus) if learner_gpus else None
    return {"actor_cores": actor_cores, "learner_gpus": len(learner_gpus), "ratio": ratio}


def describe(problem: AssignmentProblem, protocol: ProtocolGraph, sol: Solution) -> dict[str, Any]:
    """Everything a report shows about a solved plan, as plain data."""
    perf = sol.performance
    costs: dict[str, dict[str, dict[str, Any]]] = {}
    for (kernel, device, variant), option in problem.options.items():
        entry = costs.setdefault(kernel, {}).setdefault(device, {})[variant] = {
            "latency_s": option.latency_s, "energy_j": option.energy_j, "source": option.source,
            "resources": dict(option.resources), "setup_s": option.setup_s}
        if option.threads:
            entry["threads"] = [{"threads": n, "latency_s": lat, "energy_j": e}
                                for n, (lat, e) in enumerate(option.threads, start=2)]
    return {
        **_summary(problem, sol),
        "mode": "serialized" if problem.serialized else "overlapped",
        "throttled": perf.throttled,
        "busy_s": perf.busy, "link_busy_s": perf.link_busy, "utilization": perf.utilization,
        "solver": {"name": sol.solver, "optimal": sol.optimal, "bound": sol.bound, "gap": sol.gap,
                   "seconds": sol.seconds},
        "cpu_gpu_ratio": cpu_gpu_ratio(problem, protocol, sol),
        "rates": {t.name: t.rate for t in problem.tasks},
        "kinds": {k.name: k.kind.value for k in protocol.kernels()},
        "costs": costs,
        "infeasible": problem.infeasible,
        "variant_notes": problem.variant_notes,
        "devices": {d.name: {"kind": d.kind, "model": d.model, "idle_w": d.idle_w, "peak_w": d.peak_w,
                             "units": d.units, "members": len(d.physical)}
                    for d in problem.devices.values() if d.name in perf.busy or d.is_pool
                    or any(d.name == dev for (_, dev, _) in problem.options)},
        "power_cap_w": problem.power_cap_w,
        "limit": limit_sentence(problem, sol.assignment, perf),
        "threads": thread_sentences(problem, sol.assignment, perf, sol.objective),
    }
