"""``pearl.plan``: the best assignment of an algorithm's kernels to a platform's devices.

Example::

    >>> import pearl_py as pearl
    >>> plan = pearl.plan(pearl.DQN("CartPole-v1"), pearl.Platform.load("pearl-cpu-gpu-fpga"),
    ...                   objective="power", constraints={"power_cap_w": 400})
    >>> plan.placements[REPLAY_SAMPLE].device, round(plan.prediction.samples_per_j)
    ('fpga', 806)
    >>> pearl.export_plan(plan, "out/plan")          # plan.yaml, prediction.json, plan.json, report.md, report.html
    >>> top = pearl.ranked_plans(pearl.DQN("CartPole-v1"), pearl.Platform.local(), k=3)  # best first
    >>> [(p.placements[INFERENCE].variant, p.placements[LEARNER_UPDATE].variant) for p in top]
    [('fused', 'fused'), ('reference', 'fused'), ('fused', 'reference')]
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from pearl_py.errors import PlanningError
from pearl_py.optimize.builder import Constraints, CostModel, build_problem
from pearl_py.optimize.explain import compare_sentence, limit_sentence, thread_sentences
from pearl_py.optimize.model import OBJECTIVES, Assignment, other_objective
from pearl_py.optimize.pareto import pareto_front
from pearl_py.optimize.problem import AssignmentProblem
from pearl_py.optimize.replay_memory import check_replay_memory
from pearl_py.optimize.robust import spread_sentences
from pearl_py.optimize.solution import Solution
from pearl_py.optimize.solve import solve, solve_ranked
from pearl_py.optimize.whole_run import whole_run
from pearl_py.plan import (
    MadeFor,
    Alternative,
    CpuGpuRatio,
    DeviceInfo,
    Figures,
    KernelCost,
    ParetoPoint,
    Placement,
    Plan,
    PlatformInfo,
    Prediction,
    SolverInfo,
    ThreadCost,
)
from pearl_py.protocol import ProtocolGraph


def plan(algo: Any, platform: Any, objective: str = "throughput",
         constraints: Constraints | Mapping[str, Any] | None = None, **options: Any) -> Plan:
    """The best plan: :func:`ranked_plans`'s first, with its keyword ``options`` but ``k``."""
    return ranked_plans(algo, platform, objective, constraints, k=1, **options)[0]


def ranked_plans(algo: Any, platform: Any, objective: str = "throughput",
                 constraints: Constraints | Mapping[str, Any] | None = None, *, k: int = 3, solver: str = "auto",
                 estimator: CostModel | None = None, time_limit_s: float = 5.0, pareto_points: int = 7,
                 horizon: float | None = None,
                 refused_variants: Mapping[str, Mapping[str, str]] | None = None) -> list[Plan]:
    """The ``k`` best distinct plans of ``algo``'s protocol on ``platform`` (a Platform or a catalogue
    name/path) by ``objective``, best first (fewer when fewer exist).

    ``objective``: ``throughput`` (samples/s) or ``power`` (samples/J). ``constraints``:
    ``power_cap_w``, ``pin`` ({kernel: device}), ``exclude`` (devices). ``horizon``: env
    steps the run will take; a kernel variant with a one-off setup (the ``compiled``
    learner update's compile) is chosen only when it pays that back within them
    (``None``: unknown, so it is not; ``float("inf")``: steady state). ``refused_variants``:
    ``{kernel: {variant: reason}}`` the caller keeps out (variants an algorithm cannot use are
    not offered anyway: each variant declares the forms it supports, ``Variant.supports``).
    Each plan's :class:`~pearl_py.plan.Prediction` holds the model's figures, the cost table
    with sources, the Pareto front, the other objective's plan and the explanation sentences (the
    front and the other objective's plan are shared). The first plan is the solver's; the others
    come from ranking every plan by the model (:func:`pearl_py.optimize.solve.solve_ranked`), so the
    order is exact. ``pearl run --auto --tune`` measures them (docs/runtime.md).
    """
    if objective not in OBJECTIVES:
        raise PlanningError(f"objective must be throughput or power, got {objective!r}")
    if isinstance(platform, str):
        from pearl_py.platform import Platform

        platform = Platform.load(platform)
    if estimator is None:
        from pearl_py.estimate import Estimator

        estimator = Estimator()
    protocol = algo if isinstance(algo, ProtocolGraph) else algo.protocol()
    check_replay_memory(protocol, platform)     # a replay no device can hold is refused with its size
    problem = build_problem(protocol, platform, estimator, constraints, horizon=horizon,
                            refused_variants=refused_variants)
    ranked = solve_ranked(problem, objective, k, solver, time_limit_s)
    other = solve(problem, other_objective(objective), solver, time_limit_s)
    fastest, frugal = (ranked[0], other) if objective == "throughput" else (other, ranked[0])
    exact = ranked[0].optimal and other.optimal and solver != "heuristic"
    front = tuple(ParetoPoint(p.samples_per_s, p.samples_per_j, p.power_w, placements_of(p.assignment))
                  for p in pareto_front(problem, fastest, frugal, points=pareto_points, exact=exact,
                                        time_limit_s=time_limit_s))
    alternative = Alternative(other_objective(objective), figures(other), placements_of(other.assignment))
    made_for = None if isinstance(algo, ProtocolGraph) else MadeFor(
        algo.name, algo.env_id, tuple(k.name for k in protocol.kernels()))
    plans = []
    for chosen in ranked:
        described = describe(problem, protocol, chosen)
        prediction = dataclasses.replace(
            described, alternative=alternative, pareto=front,
            comparison=compare_sentence(problem, (chosen.assignment, chosen.performance), objective,
                                        (other.assignment, other.performance)),
            threads=(*described.threads,
                     *spread_sentences(estimator, protocol, platform, chosen.assignment)),
            platform=platform_info(platform), horizon=horizon,
            run=whole_run(problem, protocol, chosen.assignment, chosen.performance, horizon))
        used = {c.device for c in chosen.assignment.values()}
        plans.append(Plan(platform=platform.reference or platform.name, objective=objective,
                          placements=placements_of(chosen.assignment), mode=problem.mode,
                          devices={d: problem.devices[d].kind for d in sorted(used)}, solver=chosen.solver,
                          prediction=prediction, made_for=made_for))
    return plans


def platform_info(platform: Any) -> PlatformInfo:
    data = platform.to_dict()
    return PlatformInfo(data["name"], data["description"], tuple(data["devices"]), tuple(data["links"]),
                        dict(data["counters"]))


def placements_of(assignment: Assignment) -> dict[str, Placement]:
    return {k: Placement(c.device, c.variant, c.replicas) for k, c in assignment.items()}


def figures(sol: Solution) -> Figures:
    perf = sol.performance
    return Figures(samples_per_s=perf.samples_per_s, samples_per_j=perf.samples_per_j, power_w=perf.power_w,
                   time_per_sample_s=perf.time_per_sample, energy_per_sample_j=perf.energy_per_sample_j,
                   bottleneck=perf.bottleneck)


def cpu_gpu_ratio(problem: AssignmentProblem, sol: Solution) -> CpuGpuRatio:
    """Actor cores (replicas of replicable kernels on CPU-pool devices; a synchronous protocol's actors run all of
    them in the same processes: the most replicas per device) per GPU running a train-stage kernel."""
    replicas = [(c.device, c.replicas) for k, c in sol.assignment.items()
                if problem.task(k).replicable and problem.devices[c.device].kind == "cpu"]
    if problem.synchronous:
        actor_cores = sum(max(n for d, n in replicas if d == device) for device in {d for d, _ in replicas})
    else:
        actor_cores = sum(n for _, n in replicas)
    learner_gpus = {m for k, c in sol.assignment.items() if problem.task(k).stage == "train"
                    for m in problem.devices[c.device].physical if problem.devices[m].kind == "gpu"}
    ratio = actor_cores / len(learner_gpus) if learner_gpus else None
    return CpuGpuRatio(actor_cores, len(learner_gpus), ratio)


def describe(problem: AssignmentProblem, protocol: ProtocolGraph, sol: Solution) -> Prediction:
    """Everything a report shows about a solved plan but the shared parts (front, alternative, platform)."""
    perf = sol.performance
    costs: dict[str, dict[str, dict[str, KernelCost]]] = {}
    for (kernel, device, variant), option in problem.options.items():
        costs.setdefault(kernel, {}).setdefault(device, {})[variant] = KernelCost(
            option.latency_s, option.energy_j, option.source, dict(option.resources), option.setup_s,
            tuple(ThreadCost(n, lat, e) for n, (lat, e) in enumerate(option.threads or option.shares, start=2)),
            option.energy_source, option.setup_source, option.layers, option.loop_s, option.loop_source,
            option.normalize_s)
    devices = {d.name: DeviceInfo(d.kind, d.model, d.idle_w, d.peak_w, d.units, len(d.physical))
               for d in problem.devices.values() if d.name in perf.busy or d.is_pool
               or any(d.name == dev for (_, dev, _) in problem.options)}
    return Prediction(
        figures=figures(sol),
        solver=SolverInfo(sol.solver, sol.optimal, sol.bound, sol.gap, sol.seconds),
        costs=costs, rates={t.name: t.rate for t in problem.tasks},
        kinds={k.name: str(k.kind) for k in protocol.kernels()}, devices=devices, throttled=perf.throttled,
        busy_s=dict(perf.busy), link_busy_s=dict(perf.link_busy), utilization=perf.utilization,
        cpu_gpu_ratio=cpu_gpu_ratio(problem, sol),
        infeasible={k: tuple(v) for k, v in problem.infeasible.items()},
        variant_notes={k: tuple(v) for k, v in problem.variant_notes.items()},
        power_cap_w=problem.power_cap_w, limit=limit_sentence(problem, sol.assignment, perf),
        threads=tuple(thread_sentences(problem, sol.assignment, perf, sol.objective)))
