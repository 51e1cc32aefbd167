"""Exact assignment by mixed-integer linear programming (scipy.optimize.milp, HiGHS).

Variables (docs/optimizer.md has the full formulation):

* ``x[k,p,v,j]`` binary: kernel ``k`` on device or pool ``p`` as variant ``v`` with ``j``
  replicas per member, or ``j`` threads for a threaded option (``j = 1`` otherwise); ``sum = 1`` per kernel.
* ``T`` continuous: seconds per sample. Every device's busy time ``sum r*c/(m*j) * x <= T``
  (a threaded kernel: ``j`` threads, ``sum r*c(j) * x``); cores ``sum j * x <= units``; a threaded
  kernel's extra threads beside each replicated kernel's replicas ``j_k x + sum (j - 1) x <= units``;
  memory and FPGA resources (shared instances via ``w``).
* ``y[e,p,q] >= X[src,p] + X[dst,q] - 1`` for edges crossing devices; every link's busy time ``<= T``.
* Policy lag (``overlap < 1``), for every device ``d`` the training kernel may use and each
  collection stage (acting, intake): ``stage loads + (1 - overlap) * (other loads on d) - T
  <= M (1 - X[train, d])``.
* Power: ``u[d] >= x`` (device in use) and ``s[d] >= T - M(1 - u[d])`` linearise the idle
  energy ``T * idle(d) * u[d]``; energy per sample ``E = sum idle*s + sum r*e*x``;
  a power cap is ``E <= cap * T``. Objective ``min T`` (throughput) or ``min E`` (power).

Example::

    >>> sol = solve_milp(problem, "throughput")
    >>> sol.solver, sol.optimal
    ('milp', True)
"""
from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_array

from pearl_py.errors import PlanningError
from pearl_py.optimize.model import (
    COLLECTION,
    Choice,
    call_cost,
    contribution,
    edge_cost,
    evaluate,
    kernel_bound,
    time_limit,
)
from pearl_py.optimize.problem import AssignmentProblem
from pearl_py.optimize.solution import Solution


@dataclass
class _Builder:
    """Sparse rows ``lo <= a @ z <= hi`` and variable bounds, added one at a time."""

    lower: list[float] = field(default_factory=list)
    upper: list[float] = field(default_factory=list)
    integral: list[int] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)
    cols: list[int] = field(default_factory=list)
    vals: list[float] = field(default_factory=list)
    row_lo: list[float] = field(default_factory=list)
    row_hi: list[float] = field(default_factory=list)

    def var(self, lo: float = 0.0, hi: float = 1.0, integer: bool = False) -> int:
        self.lower.append(lo)
        self.upper.append(hi)
        self.integral.append(int(integer))
        return len(self.lower) - 1

    def row(self, terms: dict[int, float] | list[tuple[int, float]], lo: float, hi: float) -> None:
        r = len(self.row_lo)
        for c, v in (terms.items() if isinstance(terms, dict) else terms):
            if v != 0.0:
                self.rows.append(r)
                self.cols.append(c)
                self.vals.append(v)
        self.row_lo.append(lo)
        self.row_hi.append(hi)

    def constraint(self) -> LinearConstraint:
        a = coo_array((self.vals, (self.rows, self.cols)), shape=(len(self.row_lo), len(self.lower))).tocsr()
        return LinearConstraint(a, np.array(self.row_lo), np.array(self.row_hi))


def milp_size(problem: AssignmentProblem) -> int:
    """Binary placement variables plus crossing-edge pairs: a proxy for how hard the MILP is."""
    xs = sum(len(problem.replica_choices(t.name, d, v)) for t in problem.tasks for d, v in problem.candidates(t.name))
    places = {t.name: {d for d, _ in problem.candidates(t.name)} for t in problem.tasks}
    pairs = sum(len(places[e.src]) * len(places[e.dst]) for e in problem.edges)
    return xs + pairs


@dataclass
class _Formulation:
    builder: _Builder
    cost: np.ndarray
    xvars: dict[str, list[tuple[int, str, str, int]]]
    unit: float
    """Seconds (throughput) or joules (power) per sample of one objective unit."""


def _formulate(problem: AssignmentProblem, objective: str, scale: tuple[float, float] | None,
               max_time: float | None) -> _Formulation:
    # without a known plan, scale by the kernel bounds: HiGHS's tolerances are absolute
    t_scale, e_scale = scale or (kernel_bound(problem, "throughput") or 1.0, kernel_bound(problem, "power") or 1.0)
    t_big = time_limit(problem) / t_scale
    b = _Builder()
    t_var = b.var(0.0, t_big if max_time is None else min(t_big, max_time / t_scale))
    need_power = objective == "power" or problem.power_cap_w is not None

    xvars: dict[str, list[tuple[int, str, str, int]]] = {}
    busy: dict[str, dict[int, float]] = defaultdict(dict)
    cores: dict[str, dict[int, float]] = defaultdict(dict)
    actor_cores: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    extra_threads: dict[str, dict[int, float]] = defaultdict(dict)
    res_plain: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    res_inst: dict[tuple[str, str, str], dict[int, float]] = defaultdict(dict)
    serial: dict[int, float] = {}
    collecting: dict[str, dict[int, float]] = {s: {} for s in COLLECTION}
    learner_side: dict[str, dict[int, float]] = defaultdict(dict)
    trains: dict[str, list[int]] = defaultdict(list)
    energy: dict[int, float] = {}
    touching: dict[tuple[str, str], list[int]] = defaultdict(list)
    for task in problem.tasks:
        xvars[task.name] = []
        for device_name, variant in problem.candidates(task.name):
            device = problem.devices[device_name]
            option = problem.option(task.name, device_name, variant)
            m = len(device.physical)
            for j in problem.replica_choices(task.name, device_name, variant):
                x = b.var(integer=True)
                xvars[task.name].append((x, device_name, variant, j))
                choice = Choice(device_name, variant, j * m)
                load = contribution(problem, task.name, choice) / t_scale
                serial[x] = load
                if task.stage in COLLECTION:
                    collecting[task.stage][x] = load
                if task.stage == "train":
                    trains[device_name].append(x)
                energy[x] = task.rate * call_cost(problem, task.name, choice)[1] / e_scale
                for d in device.physical:
                    busy[d][x] = load
                    if task.stage not in COLLECTION:
                        learner_side[d][x] = (1.0 - problem.overlap) * load
                    touching[(task.name, d)].append(x)
                    if task.replicable:
                        cores[d][x] = j
                        actor_cores[(task.name, d)][x] = j
                    elif j > 1:
                        extra_threads[d][x] = j - 1
                    for r, amount in option.resources.items():
                        if option.instance:
                            res_inst[(d, option.instance, r)][x] = amount
                        else:
                            res_plain[(d, r)][x] = amount
        b.row({x: 1.0 for x, *_ in xvars[task.name]}, 1.0, 1.0)

    # a colocation: on each of its devices, every kernel of the group there iff the first is, and the first
    # only where with_kernel is (x summed over a kernel's variants and replicas on the device is 0 or 1)
    on = {k: defaultdict(dict) for k in xvars}
    for k, entries in xvars.items():
        for x, device_name, _, _ in entries:
            on[k][device_name][x] = 1.0
    for rule in problem.colocations:
        group = [k for k in rule.kernels if k in on]
        for d in rule.devices:
            if not group:
                break
            first = on[group[0]].get(d, {})
            for k in group[1:]:
                b.row({**first, **{x: -1.0 for x in on[k].get(d, {})}}, 0.0, 0.0)
            if rule.with_kernel in on:
                b.row({**first, **{x: -1.0 for x in on[rule.with_kernel].get(d, {})}}, -np.inf, 0.0)
    for d, terms in cores.items():
        units = problem.devices[d].units
        if sum(terms.values()) > units:
            b.row(terms, -np.inf, units)
    # a threaded kernel's threads beyond its first need cores no actor process holds: for every replicated
    # kernel k on d, its replicas plus the extra threads fit the units (so does the most replicated one's)
    for d, extra in extra_threads.items():
        units = problem.devices[d].units
        for terms in [terms for (_, dev), terms in actor_cores.items() if dev == d] or [{}]:
            b.row({**terms, **extra}, -np.inf, units)
    # a shared instance occupies the largest need of any of its kernels placed there: q >= need * x
    shared: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    for (d, _, r), needs in res_inst.items():
        q = b.var(0.0, max(needs.values()))
        for x, amount in needs.items():
            b.row({q: 1.0, x: -amount}, 0.0, np.inf)
        shared[(d, r)][q] = 1.0
    for (d, r) in set(res_plain) | set(shared):
        cap = problem.devices[d].capacity.get(r)
        if cap is None:
            continue
        terms = {**res_plain.get((d, r), {})}
        bound = sum(terms.values())
        for q in shared.get((d, r), {}):
            terms[q] = 1.0
            bound += b.upper[q]
        if bound > cap:
            b.row(terms, -np.inf, cap)

    link_terms: dict[str, dict[int, float]] = defaultdict(dict)
    comm: dict[int, float] = {}
    placed = {k: defaultdict(list) for k in xvars}
    for k, entries in xvars.items():
        for x, device_name, _, _ in entries:
            placed[k][device_name].append(x)
    for edge in problem.edges:
        for p, src_x in placed[edge.src].items():
            for q, dst_x in placed[edge.dst].items():
                loads, total = edge_cost(problem, edge, p, q)
                if total <= 0.0:
                    continue
                y = b.var()
                b.row({y: 1.0, **{x: -1.0 for x in src_x + dst_x}}, -1.0, np.inf)
                comm[y] = total / t_scale
                for link_name, t in loads.items():
                    link_terms[link_name][y] = t / t_scale

    if problem.serialized:
        b.row({**serial, **comm, t_var: -1.0}, -np.inf, 0.0)
    else:
        for terms in list(busy.values()) + list(link_terms.values()):
            b.row({**terms, t_var: -1.0}, -np.inf, 0.0)
        if problem.overlap < 1.0:
            for d, xs in trains.items():  # only binds where the training kernel is placed (big M = T's bound)
                for stage in COLLECTION:
                    terms = defaultdict(float, collecting[stage])
                    for x, load in learner_side[d].items():
                        terms[x] += load
                    for x in xs:
                        terms[x] += t_big
                    terms[t_var] = -1.0
                    b.row(dict(terms), -np.inf, t_big)

    e_terms = dict(energy)
    if need_power:
        t_floor = kernel_bound(problem, "throughput") / t_scale
        per_device: dict[str, list[list[int]]] = defaultdict(list)
        for (_, d), xs in touching.items():
            per_device[d].append(xs)
        for d, groups in per_device.items():
            u = b.var(integer=True)
            for xs in groups:
                b.row({u: 1.0, **{x: -1.0 for x in xs}}, 0.0, np.inf)
            s = b.var(0.0, t_big)
            b.row({s: 1.0, t_var: -1.0, u: -t_big}, -t_big, np.inf)
            # valid cuts (s = T*u): a device in use is busy at most T, and T is never below t_floor
            b.row({s: 1.0, **{x: -load for x, load in busy[d].items()}}, 0.0, np.inf)
            b.row({s: 1.0, u: -t_floor}, 0.0, np.inf)
            e_terms[s] = problem.devices[d].idle_w * t_scale / e_scale
        if problem.power_cap_w is not None:
            b.row({**e_terms, t_var: -problem.power_cap_w * t_scale / e_scale}, -np.inf, 0.0)

    n = len(b.lower)
    c = np.zeros(n)
    if objective == "throughput":
        c[t_var] = 1.0
    else:
        for i, v in e_terms.items():
            c[i] += v
    return _Formulation(b, c, xvars, t_scale if objective == "throughput" else e_scale)


HIGHS_SOLVE_ERROR = 4
"""scipy's status for HiGHS's "Solve error" (numerical trouble)."""


def _run(form: _Formulation, relax: bool, time_limit_s: float | None):
    """HiGHS without presolve; with it only after a solve error.

    Presolve (scipy 1.17) returned a wrong "optimal" plan on a capped instance
    (tests/optimize: random_problem(221, power_cap=True)), so it is off; without it HiGHS
    stopped with a solve error on random_problem(148) (policy-lag rows), which presolve solves.
    """
    b = form.builder
    integrality = np.zeros(len(b.lower)) if relax else np.array(b.integral)
    options = {"mip_rel_gap": 1e-9, "presolve": False}
    if time_limit_s is not None:
        options["time_limit"] = float(time_limit_s)
    for presolve in (False, True):
        res = milp(form.cost, constraints=b.constraint(), integrality=integrality,
                   bounds=Bounds(b.lower, b.upper), options={**options, "presolve": presolve})
        if res.status != HIGHS_SOLVE_ERROR:
            break
    return res


def _infeasible(problem: AssignmentProblem, res, time_limit_s: float | None) -> PlanningError:
    if res.status == 2 or "infeasible" in str(res.message).lower():
        return PlanningError(f"no plan of {problem.name!r} satisfies every constraint together (cores, memory, "
                             "FPGA resources, power cap)")
    return PlanningError(f"the MILP found no plan within {time_limit_s} s: {res.message}")


def relaxation_bound(problem: AssignmentProblem, objective: str, scale: tuple[float, float] | None = None,
                     time_limit_s: float | None = None) -> float:
    """Lower bound on the minimised objective from the LP relaxation (integrality dropped)."""
    problem.check_hostable()
    form = _formulate(problem, objective, scale, None)
    res = _run(form, relax=True, time_limit_s=time_limit_s)
    if res.x is None:
        raise _infeasible(problem, res, time_limit_s)
    return float(res.fun) * form.unit


def solve_milp(problem: AssignmentProblem, objective: str, time_limit_s: float | None = None,
               scale: tuple[float, float] | None = None, max_time: float | None = None) -> Solution:
    """Solve exactly (or until ``time_limit_s``; then ``bound`` is HiGHS's dual bound).

    ``scale`` = (seconds, joules) per sample of a known plan (default: the kernel bounds);
    variables are expressed relative to it so HiGHS's absolute tolerances act as relative ones. ``max_time``
    adds ``T <= max_time`` (the Pareto sweep's epsilon constraint).
    """
    started = time.perf_counter()
    problem.check_hostable()
    form = _formulate(problem, objective, scale, max_time)
    res = _run(form, relax=False, time_limit_s=time_limit_s)
    if res.x is None:
        raise _infeasible(problem, res, time_limit_s)
    bound = getattr(res, "mip_dual_bound", None)
    bound = float(res.fun if bound is None or not np.isfinite(bound) else bound) * form.unit
    assignment = {}
    for k, entries in form.xvars.items():
        x, device_name, variant, j = max(entries, key=lambda e: res.x[e[0]])
        assignment[k] = Choice(device_name, variant, j * len(problem.devices[device_name].physical))
    perf = evaluate(problem, assignment)
    if not perf.feasible:
        raise RuntimeError(f"MILP plan breaks the model's constraints: {perf.violations}")
    return Solution(assignment, perf, objective, "milp", optimal=res.status == 0,
                    bound=min(bound, perf.objective(objective)), seconds=time.perf_counter() - started)
