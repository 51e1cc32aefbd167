"""Exact assignment by mixed-integer linear programming (scipy.optimize.milp, HiGHS).

docs/optimizer.md ("Exact formulation") has the variables, the rows and their sources: placement binaries
``x[k,p,v,j]`` (and their sums ``X[k,p]``), the time per sample ``T`` bounding every device's and link's busy
time, crossing variables ``y`` for edges between devices, the policy-lag and synchronous (``C + L <= T``) rows,
and the energy ``E = I * T + D`` priced per idle-power interval (``idle_levels.py``). ``solve_milp`` minimises
the objective, then the other one with the first held (lexicographic).

Example::

    >>> sol = solve_milp(problem, "throughput")
    >>> sol.solver, sol.optimal
    ('milp', True)
"""
from __future__ import annotations

import math
import time
import warnings
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from pearl_py.errors import PlanningError
from pearl_py.optimize.idle_levels import (
    NodeResult,
    SearchResult,
    branch_on_idle,
    idle_levels,
)
from pearl_py.optimize.model import (
    COLLECTION,
    Assignment,
    Choice,
    Performance,
    collection_edge,
    contribution,
    dynamic_energy,
    edge_cost,
    evaluate,
    kernel_bound,
    placed_edge_cost,
    other_objective,
    placements,
    time_limit,
)
from pearl_py.optimize.problem import AssignmentProblem
from pearl_py.optimize.solution import Solution

if TYPE_CHECKING:   # scipy.optimize is imported by the first solve: a run whose plan is reused loads none of it
    from scipy.optimize import LinearConstraint


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
    last_kept: int = -1
    """Position in ``vals`` of the last entry a row was asked to keep (see :meth:`row`)."""

    def var(self, lo: float = 0.0, hi: float = 1.0, integer: bool = False) -> int:
        self.lower.append(lo)
        self.upper.append(hi)
        self.integral.append(int(integer))
        return len(self.lower) - 1

    def row(self, terms: dict[int, float] | list[tuple[int, float]], lo: float, hi: float,
            keep: int | None = None) -> int:
        """Add a row; returns its index. ``keep``: a column whose entry is stored even when zero, so a
        later solve can change it (:attr:`_Formulation.priced`); its position is ``self.last_kept``."""
        r = len(self.row_lo)
        for c, v in (terms.items() if isinstance(terms, dict) else terms):
            if v != 0.0 or c == keep:
                if c == keep:
                    self.last_kept = len(self.vals)
                self.rows.append(r)
                self.cols.append(c)
                self.vals.append(v)
        self.row_lo.append(lo)
        self.row_hi.append(hi)
        return r


def milp_size(problem: AssignmentProblem) -> int:
    """Binary placement variables plus crossing-edge pairs: a proxy for how hard the MILP is."""
    xs = sum(len(problem.replica_choices(t.name, d, v)) for t in problem.tasks for d, v in problem.candidates(t.name))
    places = {t.name: {d for d, _ in problem.candidates(t.name)} for t in problem.tasks}
    pairs = sum(len(places[e.src]) * len(places[e.dst]) for e in problem.edges)
    return xs + pairs


def dynamic_floor_j(problem: AssignmentProblem) -> float:
    """Dynamic joules per sample every plan spends at least: each kernel's most frugal placement."""
    return sum(min((dynamic_energy(problem, t.name, c) for c in placements(problem, t.name)), default=0.0)
               for t in problem.tasks)


def least_idle_w(problem: AssignmentProblem) -> float:
    """Watts every plan idles at least: each kernel's host is on, so the largest of the kernels' least idle hosts."""
    return max((min(sum(problem.devices[m].idle_w for m in problem.devices[p].physical)
                    for p, _ in problem.candidates(t.name)) for t in problem.tasks if problem.candidates(t.name)),
               default=0.0)


def uses_energy(problem: AssignmentProblem, objective: str, max_energy: float | None = None) -> bool:
    """Whether the idle power enters the solve (the power objective, a power cap, an energy limit)."""
    return objective == "power" or problem.power_cap_w is not None or max_energy is not None


@dataclass
class _Formulation:
    """The model's rows, built once per solve; each idle-power interval changes only a few numbers."""

    builder: _Builder
    xvars: dict[str, list[tuple[int, str, str, int]]]
    t_var: int
    dynamic: dict[int, float]
    """Dynamic energy per sample of each placement binary, in units of ``e_scale``."""
    t_scale: float
    e_scale: float
    usage_row: int | None = None
    """``sum idle * u <= budget`` (in units of ``usage_scale`` watts), present when energy is modelled."""
    usage_devices: list[str] = field(default_factory=list)
    """Physical devices with a use variable (for the idle-power levels)."""
    host_idle: np.ndarray | None = None
    """Idle watts of each placement binary's target (0 for other columns): one above the budget is fixed at 0."""
    usage_scale: float = 1.0
    """Watts of one unit in the usage row (its largest coefficient's), so HiGHS's absolute tolerance is relative."""
    priced: list[tuple[int, float]] = field(default_factory=list)
    """``(position in vals, offset)`` of ``T``'s coefficient ``(price - offset) * t_scale / e_scale`` in the
    rows holding the energy ``price * T + D``: the power cap (offset = cap) and ``max_energy`` (0)."""
    switched: list[int] = field(default_factory=list)
    """Positions of ``-T_max`` (scaled) in the rows ``busy_d <= T_max * u``."""

    def objective_unit(self, objective: str) -> float:
        """Seconds (throughput) or joules (power) per sample of one objective unit."""
        return self.t_scale if objective == "throughput" else self.e_scale

    def cost(self, objective: str, price_w: float) -> np.ndarray:
        c = np.zeros(len(self.builder.lower))
        if objective == "throughput":
            c[self.t_var] = 1.0
        else:
            for i, v in self.dynamic.items():
                c[i] = v
            c[self.t_var] = price_w * self.t_scale / self.e_scale
        return c

    def constraint(self, price_w: float, budget_w: float | None, t_max: float) -> LinearConstraint:
        """The rows for an idle-power interval priced at ``price_w`` with ``budget_w``, ``T <= t_max`` (scaled)."""
        from scipy.optimize import LinearConstraint
        from scipy.sparse import coo_array

        b = self.builder
        vals = np.array(b.vals)
        for position, offset in self.priced:
            vals[position] = (price_w - offset) * self.t_scale / self.e_scale
        vals[self.switched] = -t_max
        hi = np.array(b.row_hi)
        if self.usage_row is not None and budget_w is not None:
            hi[self.usage_row] = budget_w / self.usage_scale
        a = coo_array((vals, (b.rows, b.cols)), shape=(len(b.row_lo), len(b.lower))).tocsr()
        return LinearConstraint(a, np.array(b.row_lo), hi)


def _formulate(problem: AssignmentProblem, scale: tuple[float, float] | None, energy: bool,
               max_time: float | None = None, max_energy: float | None = None) -> _Formulation:
    """The model's constraints; ``energy`` adds the devices in use, their idle-power budget, the power cap
    and ``max_energy`` (their ``T`` coefficients set per idle-power interval by :meth:`_Formulation.constraint`)."""
    # without a known plan, scale by the kernel bounds: HiGHS's tolerances are absolute
    t_scale, e_scale = scale or (kernel_bound(problem, "throughput") or 1.0, kernel_bound(problem, "power") or 1.0)
    t_hi = time_limit(problem) if max_time is None else min(time_limit(problem), max_time)
    t_hi /= t_scale
    t_lo = min(kernel_bound(problem, "throughput") / t_scale, t_hi)  # no plan beats the interaction-free bound
    b = _Builder()
    t_var = b.var(t_lo, t_hi)

    xvars: dict[str, list[tuple[int, str, str, int]]] = {}
    load: dict[int, float] = {}
    busy: dict[str, dict[int, float]] = defaultdict(dict)
    actor_work: dict[str, dict[int, float]] = defaultdict(dict)
    other_work: dict[str, dict[int, float]] = defaultdict(dict)
    core_work: dict[str, dict[int, float]] = defaultdict(dict)
    threads: dict[str, dict[int, int]] = defaultdict(dict)
    cores: dict[str, dict[int, float]] = defaultdict(dict)
    actor_cores: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    extra_threads: dict[str, dict[int, float]] = defaultdict(dict)
    res_plain: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    res_inst: dict[tuple[str, str, str], dict[int, float]] = defaultdict(dict)
    dynamic: dict[int, float] = {}
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
                load[x] = contribution(problem, task.name, choice) / t_scale
                dynamic[x] = dynamic_energy(problem, task.name, choice) / e_scale
                held = problem.cores(task.name, device_name, variant, j)
                for d in device.physical:
                    busy[d][x] = load[x]
                    (actor_work if task.replicable else other_work)[d][x] = load[x]
                    core_work[d][x] = load[x] * held / problem.devices[d].units
                    if task.replicable:
                        cores[d][x] = held
                        actor_cores[(task.name, d)][x] = held
                    elif held > 1:
                        threads[d][x] = held
                        extra_threads[d][x] = held - 1
                    for r, amount in option.resources.items():
                        if option.instance:
                            res_inst[(d, option.instance, r)][x] = amount
                        else:
                            res_plain[(d, r)][x] = amount
        b.row({x: 1.0 for x, *_ in xvars[task.name]}, 1.0, 1.0)
    placed = _placement_sums(b, xvars)

    _colocation_rows(b, problem, placed)
    if problem.synchronous:
        # the actors run every collection kernel in the same processes (one count per target; each j <= units)
        # and the learner runs while they wait: no core rows beyond the counts' own bounds
        _same_actor_rows(b, problem, xvars)
        _resource_rows(b, problem, {}, actor_cores, {}, res_plain, res_inst)
    else:
        _resource_rows(b, problem, cores, actor_cores, extra_threads, res_plain, res_inst)
    if problem.synchronous:
        _synchronous_rows(b, problem, xvars, load, _synchronous_edge_vars(b, problem, xvars, placed, t_scale),
                          t_var, t_hi)
        for task in problem.tasks:  # valid cut: a kernel's own load is at most T
            b.row({**{x: load[x] for x, *_ in xvars[task.name]}, t_var: -1.0}, -np.inf, 0.0)
    elif problem.serialized:
        comm, _ = _edge_rows(b, problem, placed, t_scale, t_lo)
        b.row({**load, **comm, t_var: -1.0}, -np.inf, 0.0)
    else:
        comm, link_terms = _edge_rows(b, problem, placed, t_scale, t_lo)
        for terms in link_terms.values():
            b.row({**terms, t_var: -1.0}, -np.inf, 0.0)
        _device_work_rows(b, problem, busy, actor_work, other_work, core_work, threads, actor_cores, t_var)
        for task in problem.tasks:  # valid cut: a kernel's own load is at most its device's busy time
            b.row({**{x: load[x] for x, *_ in xvars[task.name]}, t_var: -1.0}, -np.inf, 0.0)
        if problem.overlap < 1.0:
            _policy_lag_rows(b, problem, xvars, placed, load, t_var, t_hi)

    form = _Formulation(b, xvars, t_var, dynamic, t_scale, e_scale)
    if energy:  # each device's work bounded by T: an overlapped plan's cores share it, the other modes run it in turn
        overlapped = not (problem.serialized or problem.synchronous)
        _energy_rows(form, problem, placed, core_work if overlapped else busy, max_energy)
    return form


def _device_work_rows(b: _Builder, problem: AssignmentProblem, busy, actor_work, other_work, core_work, threads,
                      actor_cores, t_var: int) -> None:
    """Overlapped protocols: every device's work is at most ``T`` (:class:`~pearl_py.protocol.device_work.DeviceWork`).

    One unit: ``sum of its loads <= T``. Several: the actors' work, the other process's and the core-seconds
    over the units each ``<= T``; where a multi-threaded kernel may share cores with the actors, a binary ``z``
    marks it (``actors + threads - units <= M z``, one row per replicable kernel: the most replicated one
    counts) and ``sum of its loads - T <= M (1 - z)``.
    """
    for d, terms in busy.items():
        units = problem.devices[d].units
        if units == 1:
            b.row({**terms, t_var: -1.0}, -np.inf, 0.0)
            continue
        for part in (actor_work[d], other_work[d], core_work[d]):
            if part:
                b.row({**part, t_var: -1.0}, -np.inf, 0.0)
        if not threads[d]:
            continue
        shared = b.var(integer=True)
        excess = units + sum(threads[d].values())  # the most actors + threads - units can be
        for terms_k in [terms_k for (_, dev), terms_k in actor_cores.items() if dev == d] or [{}]:
            b.row({**terms_k, **threads[d], shared: -float(excess)}, -np.inf, float(units))
        big_m = sum(terms.values())
        b.row({**terms, t_var: -1.0, shared: big_m}, -np.inf, big_m)


def _placement_sums(b: _Builder, xvars: dict[str, list[tuple[int, str, str, int]]]) -> dict[str, dict[str, int]]:
    """``X[k][p]``: a variable equal to the sum of kernel ``k``'s placement binaries on target ``p``."""
    placed: dict[str, dict[str, int]] = {}
    for k, entries in xvars.items():
        by_target: dict[str, list[int]] = defaultdict(list)
        for x, device_name, _, _ in entries:
            by_target[device_name].append(x)
        placed[k] = {}
        for p, xs in by_target.items():
            if len(xs) == 1:
                placed[k][p] = xs[0]
            else:
                placed[k][p] = b.var()
                b.row({placed[k][p]: 1.0, **{x: -1.0 for x in xs}}, 0.0, 0.0)
    return placed


def _colocation_rows(b: _Builder, problem: AssignmentProblem, placed: dict[str, dict[str, int]]) -> None:
    """A colocation: on each of its devices, every kernel of the group there iff the first is, and the first
    only where ``with_kernel`` is (``X`` is 0 or 1)."""
    for rule in problem.colocations:
        group = [k for k in rule.kernels if k in placed]
        for d in rule.devices if group else ():
            first = {placed[group[0]][d]: 1.0} if d in placed[group[0]] else {}
            for k in group[1:]:
                b.row({**first, **({placed[k][d]: -1.0} if d in placed[k] else {})}, 0.0, 0.0)
            if rule.with_kernel in placed:
                other = placed[rule.with_kernel]
                b.row({**first, **({other[d]: -1.0} if d in other else {})}, -np.inf, 0.0)


def _resource_rows(b: _Builder, problem: AssignmentProblem, cores, actor_cores, extra_threads, res_plain,
                   res_inst) -> None:
    """Cores, a threaded kernel's extra threads beside the actors, memory and FPGA resources."""
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


def _edge_rows(b: _Builder, problem: AssignmentProblem, placed: dict[str, dict[str, int]], t_scale: float,
               t_lo: float) -> tuple[dict[int, float], dict[str, dict[int, float]]]:
    """Crossing variables ``y >= sum_{p in P} X[src,p] + sum_{q in Q} X[dst,q] - 1`` (exact for binary ``X``:
    ``y`` is 1 when the edge runs from a target in ``P`` to one in ``Q``); returns each ``y``'s transfer time
    (scaled) and every link's load terms.

    An overlapped protocol only feels a transfer through its links' busy time: a link whose load can never
    exceed ``t_lo`` (each edge at its worst pair) never binds and is left out, and pairs ``(p, q)`` that load
    the remaining links alike share one ``y`` over the product ``P x Q`` they form (docs/optimizer.md has the
    64-node cluster's counts). A serialized protocol adds every transfer time to ``T``, so there pairs share a
    ``y`` only when their total transfer time is the same too.
    """
    pairs = {edge: [(p, q, *edge_cost(problem, edge, p, q)) for p in placed[edge.src] for q in placed[edge.dst]]
             for edge in problem.edges}
    worst: dict[str, float] = defaultdict(float)
    for costs in pairs.values():
        per_link: dict[str, float] = defaultdict(float)
        for _, _, loads, _ in costs:
            for link_name, t in loads.items():
                per_link[link_name] = max(per_link[link_name], t)
        for link_name, t in per_link.items():
            worst[link_name] += t / t_scale
    binding = {link_name for link_name, most in worst.items() if most > t_lo * (1 + 1e-9)}
    comm: dict[int, float] = {}
    link_terms: dict[str, dict[int, float]] = defaultdict(dict)
    for edge, costs in pairs.items():
        alike: dict[tuple, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
        for p, q, loads, total in costs:
            felt = tuple(sorted((link_name, t) for link_name, t in loads.items() if link_name in binding))
            if total > 0.0 and (problem.serialized or felt):
                alike[(felt, total if problem.serialized else 0.0)][p].add(q)
        for (felt, total), targets in alike.items():
            blocks: dict[frozenset[str], list[str]] = defaultdict(list)
            for p, qs in targets.items():
                blocks[frozenset(qs)].append(p)
            for qs, ps in blocks.items():
                y = b.var()
                b.row({y: 1.0, **{placed[edge.src][p]: -1.0 for p in ps}, **{placed[edge.dst][q]: -1.0 for q in qs}},
                      -1.0, np.inf)
                comm[y] = total / t_scale
                for link_name, t in felt:
                    link_terms[link_name][y] = t / t_scale
    return comm, link_terms


def _synchronous_edge_vars(b: _Builder, problem: AssignmentProblem, xvars: dict[str, list[tuple[int, str, str, int]]],
                           placed: dict[str, dict[str, int]], t_scale: float) -> list[tuple[int, bool, float]]:
    """Synchronous: ``(y, collection edge, transfer time)`` of every edge that may cross devices. An edge between
    two unsplit kernels: ``y >= X[src,p] + X[dst,q] - 1`` per pair of targets; an edge with a split end (the
    actors' share of it depends on both replica counts, model.placed_edge_cost): ``y >= x_src + x_dst - 1`` for
    every pair of the two kernels' placement binaries."""
    def choice(device: str, variant: str, j: int) -> Choice:
        return Choice(device, variant, j * len(problem.devices[device].physical))

    crossings: list[tuple[int, bool, float]] = []
    for edge in problem.edges:
        collecting = collection_edge(problem, edge)
        if problem.split(edge.src) or problem.split(edge.dst):
            pairs = [(xs, xd, placed_edge_cost(problem, edge, choice(p, vs, js), choice(q, vd, jd))[1])
                     for xs, p, vs, js in xvars[edge.src] for xd, q, vd, jd in xvars[edge.dst]]
        else:
            pairs = [(src_x, dst_x, edge_cost(problem, edge, p, q)[1])
                     for p, src_x in placed[edge.src].items() for q, dst_x in placed[edge.dst].items()]
        for src_x, dst_x, total in pairs:
            if total > 0.0:
                y = b.var()
                b.row({y: 1.0, src_x: -1.0, dst_x: -1.0}, -1.0, np.inf)
                crossings.append((y, collecting, total / t_scale))
    return crossings


def _same_actor_rows(b: _Builder, problem: AssignmentProblem, xvars: dict[str, list[tuple[int, str, str, int]]]
                     ) -> None:
    """Synchronous: replicable kernels on one target run in the same actor processes, so their replica counts
    agree. For every pair (k, l), target p and count j: ``X[k,p,j] + sum_{j' != j} X[l,p,j'] <= 1``."""
    def by_target(kernel: str) -> dict[str, dict[int, list[int]]]:
        out: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
        for x, p, _, j in xvars[kernel]:
            out[p][j].append(x)
        return out

    replicable = [t.name for t in problem.tasks if t.replicable]
    for i, k in enumerate(replicable):
        for other in replicable[i + 1:]:
            mine, theirs = by_target(k), by_target(other)
            for p in set(mine) & set(theirs):
                for j, xs in mine[p].items():
                    elsewhere = [x for jj, ys in theirs[p].items() if jj != j for x in ys]
                    if elsewhere:
                        b.row({**{x: 1.0 for x in xs}, **{x: 1.0 for x in elsewhere}}, -np.inf, 1.0)


def _synchronous_rows(b: _Builder, problem: AssignmentProblem, xvars: dict[str, list[tuple[int, str, str, int]]],
                      load: dict[int, float], crossings: list[tuple[int, bool, float]], t_var: int,
                      t_hi: float) -> None:
    """Synchronous: ``C >=`` the collection kernels' and edges' times in series (an actor's vector steps), ``L >=``
    the learning kernels' and edges' times in series, ``T >= C + L`` (model.synchronous_phases)."""
    collect_var, learn_var = b.var(0.0, t_hi), b.var(0.0, t_hi)
    collect: dict[int, float] = {}
    learn: dict[int, float] = {}
    for task in problem.tasks:
        phase = collect if task.stage in COLLECTION else learn
        for x, *_ in xvars[task.name]:
            phase[x] = load[x]
    for y, collecting, total in crossings:
        (collect if collecting else learn)[y] = total
    b.row({**collect, collect_var: -1.0}, -np.inf, 0.0)
    b.row({**learn, learn_var: -1.0}, -np.inf, 0.0)
    b.row({collect_var: 1.0, learn_var: 1.0, t_var: -1.0}, -np.inf, 0.0)


def _policy_lag_rows(b: _Builder, problem: AssignmentProblem, xvars, placed, load: dict[int, float], t_var: int,
                     t_hi: float) -> None:
    """The chain ``collection stage + (1 - overlap) * (the training device's other work) <= T``.

    ``R >= (1 - overlap) * (work on d) - M_d (1 - X[train, d])`` for every device ``d`` the training kernel
    may use (``M_d``: the most that work can be, so the row is void elsewhere), and ``T >= stage + R`` for
    each collection stage; the training kernel's own work is on its device wherever it runs (a valid cut).
    """
    rest = 1.0 - problem.overlap
    stage_of = {t.name: t.stage for t in problem.tasks}
    learner_side: dict[str, dict[int, float]] = defaultdict(dict)
    for k, entries in xvars.items():
        if stage_of[k] not in COLLECTION:
            for x, device_name, _, _ in entries:
                for d in problem.devices[device_name].physical:
                    learner_side[d][x] = rest * load[x]
    for train in [k for k in xvars if stage_of[k] == "train"]:
        waits = b.var(0.0, t_hi)  # R: the part of training the actors wait for
        b.row({waits: 1.0, **{x: -rest * load[x] for x, *_ in xvars[train]}}, 0.0, np.inf)
        for d, x_train in placed[train].items():  # binds only where the training kernel is placed
            big_m = sum(max((learner_side[d].get(x, 0.0) for x, *_ in xvars[k]), default=0.0) for k in xvars)
            terms = defaultdict(float, {x: -v for x, v in learner_side[d].items()})
            terms[x_train] -= big_m  # added: x_train is the training kernel's own binary when it has one choice on d
            b.row({waits: 1.0, **terms}, -big_m, np.inf)
        for stage in COLLECTION:
            work = {x: load[x] for k, entries in xvars.items() if stage_of[k] == stage for x, *_ in entries}
            b.row({**work, waits: 1.0, t_var: -1.0}, -np.inf, 0.0)


def _energy_rows(form: _Formulation, problem: AssignmentProblem, placed: dict[str, dict[str, int]],
                 busy: dict[str, dict[int, float]], max_energy: float | None) -> None:
    """Devices in use ``u >= X[k,p]`` (binary; devices used by the same placements share one ``u``: a pool's
    members), their idle power ``sum idle * u <= budget``, the rows holding ``E = price * T + D``, and
    ``busy_d <= T_max * u`` (a device works only while on, at most the longest time an interval allows:
    McCormick's bound on ``T * u``; it stops a relaxation from spreading a kernel over idle-free halves)."""
    b, t_var = form.builder, form.t_var
    users: dict[str, set[int]] = defaultdict(set)
    for targets in placed.values():
        for p, x_kp in targets.items():
            for d in problem.devices[p].physical:
                users[d].add(x_kp)
    alike: dict[frozenset[int], list[str]] = defaultdict(list)
    for d, xs in users.items():
        alike[frozenset(xs)].append(d)
    form.usage_scale = max((sum(problem.devices[d].idle_w for d in ds) for ds in alike.values()), default=1.0) or 1.0
    usage: dict[int, float] = {}
    for xs, devices in alike.items():
        u = b.var(integer=True)  # binary: HiGHS derives cover cuts from the idle-power budget
        for x_kp in xs:
            b.row({u: 1.0, x_kp: -1.0}, 0.0, np.inf)
        usage[u] = sum(problem.devices[d].idle_w for d in devices) / form.usage_scale
        form.usage_devices.extend(devices)
        work = busy.get(devices[0], {})  # alike devices carry the same work
        if work:
            b.row({**work, u: 0.0}, -np.inf, 0.0, keep=u)
            form.switched.append(b.last_kept)
    form.usage_row = b.row(usage, -np.inf, np.inf)
    form.host_idle = np.zeros(len(b.lower))
    for entries in form.xvars.values():
        for x, target, _, _ in entries:
            form.host_idle[x] = sum(problem.devices[d].idle_w for d in problem.devices[target].physical)
    if problem.power_cap_w is not None:  # price * T + D <= cap * T
        b.row({**form.dynamic, t_var: 0.0}, -np.inf, 0.0, keep=t_var)
        form.priced.append((b.last_kept, problem.power_cap_w))
    if max_energy is not None:
        b.row({**form.dynamic, t_var: 0.0}, -np.inf, max_energy / form.e_scale, keep=t_var)
        form.priced.append((b.last_kept, 0.0))


HIGHS_SOLVE_ERROR = 4
"""scipy's status for HiGHS's "Solve error" (numerical trouble)."""
HIGHS_HEURISTICS_OFF = {"mip_heuristic_run_rins": False, "mip_heuristic_run_rens": False,
                        "mip_heuristic_run_root_reduced_cost": False}
"""HiGHS options (passed through scipy) that skip its sub-MIP heuristics: on the 64-node cluster they took
most of each interval's time (1.2 of 2.2 s), and the search over idle-power intervals brings its own plans."""


def _run(form: _Formulation, objective: str, price_w: float = 0.0, budget_w: float | None = None,
         relax: bool = False, time_limit_s: float | None = None, t_max: float | None = None, gap: float = 1e-9):
    """HiGHS without presolve; with it only after a solve error. ``t_max`` (seconds) caps ``T`` for this solve.

    Presolve (scipy 1.17) returned a wrong "optimal" plan on a capped instance
    (tests/optimize: random_problem(221, power_cap=True)), so it is off; without it HiGHS
    stopped with a solve error on random_problem(148) (policy-lag rows), which presolve solves.
    """
    from scipy.optimize import Bounds, milp

    b = form.builder
    integrality = np.zeros(len(b.lower)) if relax else np.array(b.integral)
    upper = np.array(b.upper)
    if t_max is not None:
        upper[form.t_var] = max(min(upper[form.t_var], t_max / form.t_scale), b.lower[form.t_var])
    if budget_w is not None and form.host_idle is not None:
        upper[form.host_idle > budget_w] = 0.0  # a target idling above the budget is off in this interval
    options = {"mip_rel_gap": gap, "presolve": False, **HIGHS_HEURISTICS_OFF}
    if time_limit_s is not None:
        options["time_limit"] = max(float(time_limit_s), 1e-3)
    for presolve in (False, True):
        with warnings.catch_warnings():  # scipy passes HIGHS_HEURISTICS_OFF on to HiGHS, and warns that it does
            warnings.filterwarnings("ignore", "Unrecognized options detected", RuntimeWarning)
            res = milp(form.cost(objective, price_w), constraints=form.constraint(price_w, budget_w, upper[form.t_var]),
                       integrality=integrality, bounds=Bounds(b.lower, upper), options={**options, "presolve": presolve})
        if res.status != HIGHS_SOLVE_ERROR:
            break
    return res


def _infeasible(problem: AssignmentProblem, res, time_limit_s: float | None) -> PlanningError:
    if res.status == 2 or "infeasible" in str(res.message).lower():
        return PlanningError(f"no plan of {problem.name!r} satisfies every constraint together (cores, memory, "
                             "FPGA resources, power cap)")
    return PlanningError(f"the MILP found no plan within {time_limit_s} s: {res.message}")


def _assignment(problem: AssignmentProblem, form: _Formulation, x: np.ndarray) -> dict[str, Choice]:
    assignment = {}
    for k, entries in form.xvars.items():
        _, device_name, variant, j = max(entries, key=lambda e: x[e[0]])
        assignment[k] = Choice(device_name, variant, j * len(problem.devices[device_name].physical))
    return assignment


def _dual_bound(res, unit: float) -> float:
    bound = getattr(res, "mip_dual_bound", None)
    return float(res.fun if bound is None or not np.isfinite(bound) else bound) * unit


def relaxation_bound(problem: AssignmentProblem, objective: str, scale: tuple[float, float] | None = None,
                     time_limit_s: float | None = None) -> float:
    """Lower bound on the minimised objective from the LP relaxation (integrality dropped), idle priced at
    the least any plan draws."""
    problem.check_hostable()
    form = _formulate(problem, scale, uses_energy(problem, objective))
    res = _run(form, objective, price_w=least_idle_w(problem), relax=True, time_limit_s=time_limit_s)
    if res.x is None:
        raise _infeasible(problem, res, time_limit_s)
    return float(res.fun) * form.objective_unit(objective)


@dataclass
class _Stage:
    assignment: dict[str, Choice]
    performance: Performance
    optimal: bool
    bound: float
    leaves: list[tuple[float, int, int]] | None = None
    """The idle-power intervals the search ended with (``None``: one MILP, no search)."""


def _within(perf: Performance, max_time: float | None, max_energy: float | None) -> bool:
    tie = 1 + 1e-9
    return perf.feasible and (max_time is None or perf.time_per_sample <= max_time * tie) and (
        max_energy is None or perf.energy_per_sample_j <= max_energy * tie)


def _stage(problem: AssignmentProblem, objective: str, scale, deadline: float | None, max_time: float | None,
           max_energy: float | None, incumbent: Assignment | None, gap: float = 1e-9,
           intervals: list[tuple[int, int]] | None = None) -> _Stage:
    """Minimise ``objective`` (within ``max_time``/``max_energy``): one MILP when idle power does not enter,
    else the branch and bound over idle-power intervals (:mod:`pearl_py.optimize.idle_levels`), over
    ``intervals`` only when given."""
    energy = uses_energy(problem, objective, max_energy)
    form = _formulate(problem, scale, energy, max_time, max_energy)
    unit = form.objective_unit(objective)
    remaining = None if deadline is None else deadline - time.perf_counter()
    if not energy:
        res = _run(form, objective, time_limit_s=remaining, gap=gap)
        if res.x is None:
            raise _infeasible(problem, res, remaining)
        assignment = _assignment(problem, form, res.x)
        perf = _checked(problem, assignment)
        bound = min(_dual_bound(res, unit), perf.objective(objective))
        return _Stage(assignment, perf, res.status == 0 and _gap(perf.objective(objective), bound) <= 1e-6, bound)

    d_floor = dynamic_floor_j(problem)

    def solve_node(price_w: float, budget_w: float, cutoff: float | None, time_limit_s: float | None,
                   node_gap: float):
        if problem.power_cap_w is not None and price_w >= problem.power_cap_w:
            return None  # every plan of the interval idles at or above the cap
        # no plan drawing at least price_w with E = I*T + D <= cutoff is slower than (cutoff - D_floor) / price_w
        t_max = None
        if cutoff is not None:
            t_max = cutoff if objective == "throughput" else max(cutoff - d_floor, 0.0) / max(price_w, 1e-12)
        res = _run(form, objective, price_w, budget_w, time_limit_s=time_limit_s, t_max=t_max, gap=node_gap)
        if res.x is None:
            if res.status == 1:  # time limit before a plan: the node stays open
                return NodeResult(-math.inf, math.inf, 0.0, None)
            return None
        assignment = _assignment(problem, form, res.x)
        perf = evaluate(problem, assignment)
        # a plan drawing more than the price may break the power cap (its rows hold the price, not its idle
        # power): it only steers the split. One drawing at most the price meets every row as the model does.
        value = perf.objective(objective) if _within(perf, max_time, max_energy) else math.inf
        return NodeResult(_dual_bound(res, unit), value, perf.idle_w, (assignment, perf))

    start = None
    if incumbent is not None:
        perf = evaluate(problem, incumbent)
        if _within(perf, max_time, max_energy):
            start = (perf.objective(objective), (dict(incumbent), perf))
    levels = idle_levels([problem.devices[d].idle_w for d in form.usage_devices], least=least_idle_w(problem))
    found: SearchResult = branch_on_idle(levels, solve_node, start, deadline, tie=gap, intervals=intervals)
    if found.plan is None:
        if any(bound < math.inf for bound, _, _ in found.leaves):  # intervals left open: the time ran out
            raise PlanningError(f"the MILP found no plan within {remaining:.3g} s")
        raise PlanningError(f"no plan of {problem.name!r} satisfies every constraint together (cores, memory, "
                            "FPGA resources, power cap)")
    assignment, perf = found.plan
    # a search stopped before its first interval has no bound of its own: the interaction-free one holds
    bound = min(max(found.bound, kernel_bound(problem, objective)), perf.objective(objective))
    return _Stage(assignment, perf, found.complete and _gap(perf.objective(objective), bound) <= 1e-6, bound,
                  found.leaves)


def _gap(value: float, bound: float) -> float:
    return max(0.0, (value - bound) / value) if value > 0 else 0.0


def _checked(problem: AssignmentProblem, assignment: dict[str, Choice]) -> Performance:
    perf = evaluate(problem, assignment)
    if not perf.feasible:
        raise RuntimeError(f"MILP plan breaks the model's constraints: {perf.violations}")
    return perf


LEXICOGRAPHIC_TIE = 1e-9
"""Relative slack on the first objective while the second stage minimises the other one."""


def solve_milp(problem: AssignmentProblem, objective: str, time_limit_s: float | None = None,
               scale: tuple[float, float] | None = None, max_time: float | None = None,
               max_energy: float | None = None, incumbent: Assignment | None = None, gap: float = 1e-9) -> Solution:
    """Solve exactly (or until ``time_limit_s``; then ``bound`` is the best proven bound), lexicographically:
    among plans optimal for ``objective``, one optimal for the other objective.

    ``scale`` = (seconds, joules) per sample of a known plan (default: the kernel bounds);
    variables are expressed relative to it so HiGHS's absolute tolerances act as relative ones. ``max_time``
    adds ``T <= max_time`` (the Pareto sweep's epsilon constraint), ``max_energy`` ``E <= max_energy``.
    ``incumbent``: a known plan (the heuristic's) to prune with.
    """
    started = time.perf_counter()
    deadline = None if time_limit_s is None else started + time_limit_s
    problem.check_hostable()
    first = _stage(problem, objective, scale, deadline, max_time, max_energy, incumbent, gap)
    best = first
    if first.optimal and (deadline is None or time.perf_counter() < deadline):
        other = other_objective(objective)
        held = first.performance.objective(objective) * (1 + LEXICOGRAPHIC_TIE)
        limits = {"max_time": held, "max_energy": max_energy} if objective == "throughput" \
            else {"max_time": max_time, "max_energy": held}
        # a plan within the held value lies in an interval of the first search whose bound allows it
        within = None if first.leaves is None else [(i, j) for bound, i, j in first.leaves if bound <= held]
        try:
            second = _stage(problem, other, scale, deadline, incumbent=first.assignment, gap=gap, intervals=within,
                            **limits)
        except PlanningError:  # numerically infeasible at the held value: the first stage's plan stands
            second = None
        if second is not None and second.performance.objective(objective) <= held \
                and second.performance.objective(other) < first.performance.objective(other):
            best = _Stage(second.assignment, second.performance, first.optimal, first.bound)
    return Solution(best.assignment, best.performance, objective, "milp", optimal=best.optimal,
                    bound=best.bound, seconds=time.perf_counter() - started)
