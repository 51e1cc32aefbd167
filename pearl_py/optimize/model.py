"""The performance model of a plan: time per sample, bottleneck, utilization, power, samples per joule.

For each physical device the busy time per sample is ``sum(rate * latency / replicas)``
over the kernels on it (a pool member carries ``1/members`` of the calls with
``replicas/members`` processes, the same figure); every link carries
``rate * (latency + bytes/bandwidth)`` per edge that crosses it. Overlapped
protocols run at ``T = max(busy)``, serialized ones at ``T = sum`` of every stage and
transfer. A policy-lag bound lets actors overlap only ``overlap`` of a training round, so
an overlapped plan also needs ``T >= max(acting, intake) + (1 - overlap) * rest``: the
round's collection (the acting kernels, pipelined with the replay inserts), plus the part
of the learner device's other work (``stage == "train"``) that the actors must wait for
(bottleneck ``policy lag``). Energy per sample is ``T * idle(devices in use) + sum(rate * dynamic energy)``;
a power cap stretches ``T`` until the average power fits. See docs/optimizer.md.

Example::

    >>> perf = evaluate(problem, {"act": Choice("cpu", replicas=4), "learn": Choice("gpu")})
    >>> perf.bottleneck, round(perf.samples_per_s)
    ('gpu', 8000)
"""
from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from pearl_py.optimize.problem import AssignmentProblem, Edge

OBJECTIVES = ("throughput", "power")
COLLECTION = ("act", "intake")
"""Stages that collect a round (pipelined with each other) while the learner waits under a policy-lag bound."""
POLICY_LAG = "policy lag"
"""The bottleneck name when actors wait for training (the chain of a policy-lag bound)."""


@dataclass(frozen=True)
class Choice:
    """Where one kernel runs: device (or pool), variant and total replicas (over all pool members)."""

    device: str
    variant: str = "reference"
    replicas: int = 1


Assignment = Mapping[str, Choice]


@dataclass
class Performance:
    """The model's prediction for one assignment (all times per sample, energy in joules)."""

    time_per_sample: float
    energy_per_sample_j: float
    busy: dict[str, float]
    link_busy: dict[str, float]
    bottleneck: str
    throttled: bool = False
    violations: list[str] = field(default_factory=list)
    idle_w: float = 0.0
    dynamic_j: float = 0.0

    @property
    def feasible(self) -> bool:
        return not self.violations

    @property
    def samples_per_s(self) -> float:
        return 1.0 / self.time_per_sample if self.time_per_sample > 0 else math.inf

    @property
    def samples_per_j(self) -> float:
        return 1.0 / self.energy_per_sample_j if self.energy_per_sample_j > 0 else math.inf

    @property
    def power_w(self) -> float:
        return self.energy_per_sample_j / self.time_per_sample if self.time_per_sample > 0 else 0.0

    @property
    def utilization(self) -> dict[str, float]:
        """Busy fraction of every device and link in use (1.0 at the bottleneck of an overlapped plan)."""
        t = self.time_per_sample
        both = {**self.busy, **self.link_busy}
        return {name: (b / t if t > 0 else 0.0) for name, b in both.items()}

    def objective(self, name: str) -> float:
        """The minimised figure: seconds per sample (throughput) or joules per sample (power)."""
        return self.time_per_sample if name == "throughput" else self.energy_per_sample_j


def traffic(problem: AssignmentProblem, src: str, dst: str) -> list[tuple[str, str, float]]:
    """Physical ``(from, to, share)`` pairs an edge from placement ``src`` to ``dst`` uses.

    Kernels on one device or on one pool exchange data locally (each pool member
    talks to itself); otherwise the calls spread evenly over both member sets.
    """
    if src == dst:
        return []
    a_members, b_members = problem.devices[src].physical, problem.devices[dst].physical
    share = 1.0 / (len(a_members) * len(b_members))
    return [(a, b, share) for a in a_members for b in b_members if a != b]


def edge_cost(problem: AssignmentProblem, edge: Edge, src: str, dst: str) -> tuple[dict[str, float], float]:
    """Per-sample busy time the edge adds to each link, and its end-to-end transfer time per sample."""
    key = (edge, src, dst)
    hit = problem.cache.get(key)
    if hit is None:
        loads: dict[str, float] = defaultdict(float)
        total = 0.0
        for a, b, share in traffic(problem, src, dst):
            for link_name in problem.route(a, b):
                t = edge.rate * share * problem.links[link_name].transfer_s(edge.bytes)
                loads[link_name] += t
                total += t
        hit = problem.cache[key] = (dict(loads), total)
    return hit


def call_cost(problem: AssignmentProblem, kernel: str, choice: Choice) -> tuple[float, float]:
    """``(seconds, dynamic joules)`` of one call as placed: a threaded kernel's at its thread count
    (``choice.replicas``), any other kernel's one-thread call."""
    option = problem.option(kernel, choice.device, choice.variant)
    if problem.task(kernel).replicable:
        return option.latency_s, option.energy_j
    return option.at(choice.replicas)


def contribution(problem: AssignmentProblem, kernel: str, choice: Choice) -> float:
    """Busy seconds per sample the kernel adds to each member device of its placement: calls per sample
    times the call's latency, spread over the replicas of a replicable kernel (a threaded kernel's
    latency is already the one at its thread count)."""
    spread = choice.replicas if problem.task(kernel).replicable else 1
    return problem.task(kernel).rate * call_cost(problem, kernel, choice)[0] / spread


def placements(problem: AssignmentProblem, kernel: str) -> list[Choice]:
    """Every (device, variant, replicas or threads) the kernel may take."""
    out = []
    for device, variant in problem.candidates(kernel):
        members = len(problem.devices[device].physical)
        out += [Choice(device, variant, n * members) for n in problem.replica_choices(kernel, device, variant)]
    return out


def slowest_time(problem: AssignmentProblem) -> float:
    """Upper bound on any plan's time per sample before a power cap stretches it (all work and transfers in series)."""
    work = sum(max((problem.task(t.name).rate * call_cost(problem, t.name, c)[0] for c in placements(problem, t.name)),
                   default=0.0) for t in problem.tasks)
    hops = max((len(r) for r in problem.routes.values()), default=0)
    slowest_link = lambda n: max((link.transfer_s(n) for link in problem.links.values()), default=0.0)  # noqa: E731
    comm = sum(e.rate * hops * slowest_link(e.bytes) for e in problem.edges)
    return work + comm


def kernel_bound(problem: AssignmentProblem, objective: str) -> float:
    """Bound ignoring interactions: no plan beats any kernel's fastest (or most frugal) placement alone,
    nor idles below the least idle device for that long."""
    if objective == "throughput":
        return max(min(contribution(problem, t.name, c) for c in placements(problem, t.name)) for t in problem.tasks)
    dynamic = sum(min(t.rate * call_cost(problem, t.name, c)[1] for c in placements(problem, t.name))
                  for t in problem.tasks)
    idle = min(d.idle_w for d in problem.physical_devices())
    return dynamic + idle * kernel_bound(problem, "throughput")


def time_limit(problem: AssignmentProblem) -> float:
    """Plans slower than this are rejected: 4x the all-in-series bound (only a power cap can reach it).
    A constant of the problem, so it is worked out once (``problem.cache``): capped plans ask on every evaluation."""
    if "time_limit" not in problem.cache:
        problem.cache["time_limit"] = 4.0 * slowest_time(problem)
    return problem.cache["time_limit"]


def evaluate(problem: AssignmentProblem, assignment: Assignment) -> Performance:
    """Predict time and energy per sample of ``assignment``; constraint breaches land in ``violations``."""
    violations: list[str] = []
    busy: dict[str, float] = defaultdict(float)
    cores: dict[str, int] = defaultdict(int)
    actors: dict[str, int] = defaultdict(int)
    extra_threads: dict[str, int] = defaultdict(int)
    usage: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    instances: dict[tuple[str, str], dict[str, float]] = {}
    serial_work = 0.0
    stage_work: dict[str, float] = defaultdict(float)
    learner_side: dict[str, float] = defaultdict(float)
    dynamic = 0.0
    for kernel, choice in assignment.items():
        task = problem.task(kernel)
        if (choice.device, choice.variant) not in problem.candidates(kernel):
            violations.append(f"kernel {kernel!r} cannot run on {choice.device!r} as {choice.variant!r}")
            continue
        device = problem.devices[choice.device]
        option = problem.option(kernel, choice.device, choice.variant)
        members = len(device.physical)
        per_member, rest = divmod(choice.replicas, members)
        if rest or per_member not in problem.replica_choices(kernel, choice.device, choice.variant):
            what = "replicas" if task.replicable or not problem.threaded(kernel, choice.device, choice.variant) \
                else "threads"
            violations.append(f"kernel {kernel!r}: {choice.replicas} {what} on {choice.device!r}")
            continue
        latency, energy = call_cost(problem, kernel, choice)
        load = task.rate * latency / (choice.replicas if task.replicable else 1)  # contribution(), costed once
        serial_work += load
        stage_work[task.stage] += load
        dynamic += task.rate * energy
        for d in device.physical:
            busy[d] += load
            if task.stage not in COLLECTION:
                learner_side[d] += load
            if task.replicable:
                cores[d] += per_member
                actors[d] = max(actors[d], per_member)
            else:
                extra_threads[d] += choice.replicas - 1
            if option.instance:
                mine = instances.setdefault((d, option.instance), {})
                for r, amount in option.resources.items():
                    mine[r] = max(mine.get(r, 0.0), amount)
            else:
                for r, amount in option.resources.items():
                    usage[d][r] += amount
    for (d, _), res in instances.items():
        for r, amount in res.items():
            usage[d][r] += amount
    for d, n in cores.items():
        if n > problem.devices[d].units:
            violations.append(f"device {d!r}: {n} replicas on {problem.devices[d].units} units")
    for d, n in extra_threads.items():
        if n and actors[d] + n > problem.devices[d].units:
            violations.append(f"device {d!r}: {n} extra thread(s) beside {actors[d]} actor process(es) on "
                              f"{problem.devices[d].units} units")
    placed = {kernel: choice.device for kernel, choice in assignment.items()}
    for rule in problem.colocations:
        violations += rule.breaches(placed)
    for d, res in usage.items():
        capacity = problem.devices[d].capacity
        for r, amount in res.items():
            if r in capacity and amount > capacity[r] * (1 + 1e-9):
                violations.append(f"device {d!r}: {r} needs {amount:g}, has {capacity[r]:g}")

    link_busy: dict[str, float] = defaultdict(float)
    comm = 0.0
    for edge in problem.edges:
        if edge.src not in assignment or edge.dst not in assignment:
            continue
        loads, total = edge_cost(problem, edge, assignment[edge.src].device, assignment[edge.dst].device)
        comm += total
        for link_name, t in loads.items():
            link_busy[link_name] += t

    if problem.serialized:
        t_min = serial_work + comm
        bottleneck = max(busy, key=busy.get, default="none")
    else:
        both = {**busy, **link_busy}
        bottleneck = max(both, key=both.get, default="none")
        t_min = both.get(bottleneck, 0.0)
        trains = [c.device for k, c in assignment.items() if problem.task(k).stage == "train"]
        if problem.overlap < 1.0 and trains:
            collect = max(stage_work[s] for s in COLLECTION)
            chain = collect + (1.0 - problem.overlap) * learner_side.get(trains[0], 0.0)
            if chain > t_min * (1 + 1e-12):
                bottleneck, t_min = POLICY_LAG, chain
    idle = sum(problem.devices[d].idle_w for d in busy)
    t = t_min
    throttled = False
    cap = problem.power_cap_w
    if cap is not None and busy:
        if idle >= cap:
            violations.append(f"power cap {cap:g} W is below the idle power {idle:g} W of the devices in use")
        elif t > 0 and idle + dynamic / t > cap * (1 + 1e-12):
            t, throttled = dynamic / (cap - idle), True
        if t > time_limit(problem) * (1 + 1e-9):
            violations.append("the power cap slows the plan below the model's time limit")
    return Performance(time_per_sample=t, energy_per_sample_j=idle * t + dynamic, busy=dict(busy),
                       link_busy=dict(link_busy), bottleneck=bottleneck, throttled=throttled,
                       violations=violations, idle_w=idle, dynamic_j=dynamic)
