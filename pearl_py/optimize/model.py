"""The performance model of a plan: time per sample, bottleneck, utilization, power, samples per joule.

Each kernel puts ``rate * latency / replicas`` seconds per sample on every physical device of its placement;
overlapped protocols run at ``T = max(busy)`` (with a policy-lag chain when ``overlap < 1``), serialized ones
at the sum of every stage and transfer, synchronous ones at ``T = C + L`` (collection, then learning). Energy
per sample is ``T * idle(devices in use) + sum(rate * dynamic energy)``; a power cap stretches ``T`` until the
average power fits. docs/optimizer.md ("Performance model") has every term.

Example::

    >>> perf = evaluate(problem, {"act": Choice("cpu", replicas=4), "learn": Choice("gpu")})
    >>> perf.bottleneck, round(perf.samples_per_s)
    ('gpu', 8000)
"""
from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from pearl_py.optimize.problem import AssignmentProblem, Edge
from pearl_py.protocol.device_work import DeviceWork

OBJECTIVES = ("throughput", "power")


def other_objective(objective: str) -> str:
    """The objective that is not ``objective`` (``power`` for ``throughput`` and back)."""
    return "power" if objective == "throughput" else "throughput"


COLLECTION = ("act", "intake")
"""Stages that collect a round (pipelined with each other) while the learner waits under a policy-lag bound."""
POLICY_LAG = "policy lag"
"""The bottleneck name when actors wait for training (the chain of a policy-lag bound)."""
COLLECTION_PHASE, LEARNING_PHASE = "collection", "learning"
"""The phases of a synchronous protocol; its bottleneck reads ``collection (cpu)`` or ``learning (cpu)``."""


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
    collect_s: float = 0.0
    """Synchronous protocols: seconds per sample of the collection phase (0 otherwise)."""
    learn_s: float = 0.0
    """Synchronous protocols: seconds per sample of the learning phase (0 otherwise)."""
    binding: dict[str, str] = field(default_factory=dict)
    """Overlapped protocols, devices of several units: which of their work sets ``busy``
    (:meth:`DeviceWork.binding`: ``actors``, ``other``, ``cores`` or ``in series``)."""
    unit_busy: dict[str, float] = field(default_factory=dict)
    """Overlapped protocols, devices of several units: busy unit-seconds per sample over the units its processes
    use at once (what :attr:`utilization` divides by ``T``; ``busy`` is the device's binding time)."""

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
        """Busy fraction of every device and link in use (1.0 at the bottleneck of an overlapped plan that
        runs one process there; a device of several units: the busy fraction of the units it uses)."""
        t = self.time_per_sample
        both = {**self.busy, **self.unit_busy, **self.link_busy}
        return {name: (b / t if t > 0 else 0.0) for name, b in both.items()}

    def objective(self, name: str) -> float:
        """The minimised figure: seconds per sample (throughput) or joules per sample (power)."""
        return self.time_per_sample if name == "throughput" else self.energy_per_sample_j

    def ranking(self, objective: str) -> tuple[float, float]:
        """The sort key of plans by ``objective``: its figure, ties broken by the other objective's."""
        return self.objective(objective), self.objective(other_objective(objective))


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


def placed_edge_cost(problem: AssignmentProblem, edge: Edge, src: Choice, dst: Choice) -> tuple[dict[str, float], float]:
    """:func:`edge_cost` of an edge between two placed kernels, a synchronous protocol's split kernels (its
    actors) sending their shares apart: from a split source every replica sends its share of the envs' data
    (``parts`` transfers of ``bytes / parts`` per call, ``parts`` the most replicas of either split end); to a
    split destination alone every replica receives the whole (the parameters: ``replicas`` transfers)."""
    if problem.split(edge.src):
        parts = max(src.replicas, dst.replicas if problem.split(edge.dst) else 1)
        edge = dataclasses.replace(edge, bytes=edge.bytes / parts, rate=edge.rate * parts)
    elif problem.split(edge.dst):
        edge = dataclasses.replace(edge, rate=edge.rate * dst.replicas)
    return edge_cost(problem, edge, src.device, dst.device)


def placed_edges(problem: AssignmentProblem, assignment: Assignment) -> Iterator[tuple[Edge, dict[str, float], float]]:
    """``(edge, link loads, total)`` (:func:`placed_edge_cost`) of every edge whose both ends ``assignment`` places."""
    for edge in problem.edges:
        if edge.src in assignment and edge.dst in assignment:
            yield edge, *placed_edge_cost(problem, edge, assignment[edge.src], assignment[edge.dst])


def call_cost(problem: AssignmentProblem, kernel: str, choice: Choice) -> tuple[float, float]:
    """``(seconds, dynamic joules)`` of one call as placed: a threaded kernel's at its thread count
    (``choice.replicas``), a split kernel's one replica's call on its share of the envs, any other
    kernel's one-thread call."""
    option = problem.option(kernel, choice.device, choice.variant)
    if problem.split(kernel):
        return option.share(choice.replicas)
    if problem.task(kernel).replicable:
        return option.latency_s, option.energy_j
    return option.at(choice.replicas)


def contribution(problem: AssignmentProblem, kernel: str, choice: Choice) -> float:
    """Busy seconds per sample the kernel adds to each member device of its placement: calls per sample
    times the call's latency, spread over the replicas of a replicable kernel (a threaded kernel's
    latency is already the one at its thread count; the replicas of a split kernel run their calls on their
    shares side by side, each on its own core)."""
    spread = choice.replicas if problem.task(kernel).replicable and not problem.split(kernel) else 1
    return problem.task(kernel).rate * call_cost(problem, kernel, choice)[0] / spread


def dynamic_energy(problem: AssignmentProblem, kernel: str, choice: Choice) -> float:
    """Dynamic joules per sample of the kernel: calls per sample times one call's energy (a split kernel's
    replicas each run a call on their share)."""
    calls = choice.replicas if problem.split(kernel) else 1
    return problem.task(kernel).rate * call_cost(problem, kernel, choice)[1] * calls


def placements(problem: AssignmentProblem, kernel: str) -> list[Choice]:
    """Every (device, variant, replicas or threads) the kernel may take."""
    out = []
    for device, variant in problem.candidates(kernel):
        members = len(problem.devices[device].physical)
        out += [Choice(device, variant, n * members) for n in problem.replica_choices(kernel, device, variant)]
    return out


def slowest_time(problem: AssignmentProblem) -> float:
    """Upper bound on any plan's time per sample before a power cap stretches it (all work and transfers in series)."""
    work = sum(max((contribution(problem, t.name, c) * (c.replicas if problem.task(t.name).replicable
                                                         and not problem.split(t.name) else 1)
                    for c in placements(problem, t.name)), default=0.0) for t in problem.tasks)
    hops = max((len(r) for r in problem.routes.values()), default=0)
    slowest_link = lambda n: max((link.transfer_s(n) for link in problem.links.values()), default=0.0)  # noqa: E731
    comm = sum(e.rate * hops * slowest_link(e.bytes) for e in problem.edges)
    return work + comm


def kernel_bound(problem: AssignmentProblem, objective: str) -> float:
    """Bound ignoring interactions: no plan beats any kernel's fastest (or most frugal) placement alone,
    nor idles below the least idle device for that long."""
    if objective == "throughput":
        return max(min(contribution(problem, t.name, c) for c in placements(problem, t.name)) for t in problem.tasks)
    dynamic = sum(min(dynamic_energy(problem, t.name, c) for c in placements(problem, t.name))
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
    device_work: dict[str, DeviceWork] = defaultdict(DeviceWork)
    serial_work = 0.0
    placed: dict[str, Choice] = {}
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
        placed[kernel] = choice
        held = problem.cores(kernel, choice.device, choice.variant, per_member)
        load = contribution(problem, kernel, choice)
        serial_work += load
        stage_work[task.stage] += load
        dynamic += dynamic_energy(problem, kernel, choice)
        for d in device.physical:
            busy[d] += load
            device_work[d].add(load, task.replicable, held)
            if task.stage not in COLLECTION:
                learner_side[d] += load
            if task.replicable:
                cores[d] += held
                actors[d] = max(actors[d], held)
            else:
                extra_threads[d] += held - 1
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
    # a synchronous protocol's actors run every collection kernel in the same processes, one after another
    # (so they take the cores of the most replicated kernel), and its learner runs while they wait
    for d, n in (actors if problem.synchronous else cores).items():
        if n > problem.devices[d].units:
            violations.append(f"device {d!r}: {n} replicas' cores on {problem.devices[d].units} units")
    if problem.synchronous:
        violations += unequal_actors(problem, assignment)
    for d, n in extra_threads.items():
        if n and not problem.synchronous and actors[d] + n > problem.devices[d].units:
            violations.append(f"device {d!r}: {n} extra thread(s) beside {actors[d]} actor core(s) on "
                              f"{problem.devices[d].units} units")
    devices_of = {kernel: choice.device for kernel, choice in assignment.items()}
    for rule in problem.colocations:
        violations += rule.breaches(devices_of)
    for d, res in usage.items():
        capacity = problem.devices[d].capacity
        for r, amount in res.items():
            if r in capacity and amount > capacity[r] * (1 + 1e-9):
                violations.append(f"device {d!r}: {r} needs {amount:g}, has {capacity[r]:g}")

    link_busy: dict[str, float] = defaultdict(float)
    comm = 0.0
    for _, loads, total in placed_edges(problem, assignment):
        comm += total
        for link_name, t in loads.items():
            link_busy[link_name] += t

    collect_s = learn_s = 0.0
    unit_busy: dict[str, float] = {}
    binding: dict[str, str] = {}
    if problem.serialized:
        t_min = serial_work + comm
        bottleneck = max(busy, key=busy.get, default="none")
    elif problem.synchronous:
        collect_s, learn_s, bottleneck = synchronous_phases(problem, placed)
        t_min = collect_s + learn_s
    else:
        busy = {d: work.busy_s(problem.devices[d].units) for d, work in device_work.items()}
        unit_busy = {d: work.unit_busy_s(problem.devices[d].units) for d, work in device_work.items()
                     if problem.devices[d].units > 1}
        binding = {d: device_work[d].binding(problem.devices[d].units) for d in unit_busy}
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
                       violations=violations, idle_w=idle, dynamic_j=dynamic, collect_s=collect_s, learn_s=learn_s,
                       unit_busy=unit_busy, binding=binding)


def collecting(problem: AssignmentProblem, kernel: str) -> bool:
    """Whether the kernel runs in a synchronous protocol's collection phase (an ``act`` or ``intake`` stage)."""
    return problem.task(kernel).stage in COLLECTION


def collection_edge(problem: AssignmentProblem, edge: Edge) -> bool:
    """Whether data crosses the edge during collection (both ends collect); other edges run while learning."""
    return collecting(problem, edge.src) and collecting(problem, edge.dst)


def synchronous_phases(problem: AssignmentProblem, assignment: Assignment) -> tuple[float, float, str]:
    """``(collection s, learning s, bottleneck)`` per sample of a synchronous protocol.

    Collection: every actor runs its vector steps' kernels one after another on its share of the envs, and
    waits at every step for the inference of all the envs it serves, so a step takes the collection kernels'
    calls (one replica's, on its share) and the transfers between them in series; the actors run side by side,
    each on its own core, the slowest setting the pace. Learning: every other kernel's time and every other
    edge's transfer time, in series (the advantage scan, the updates, the publication follow each other).
    The bottleneck names the phase and the device doing most of its work.
    """
    seconds = {True: 0.0, False: 0.0}  # keyed by "in the collection phase"
    on: dict[bool, dict[str, float]] = {True: defaultdict(float), False: defaultdict(float)}
    for kernel, choice in assignment.items():
        load, side = contribution(problem, kernel, choice), collecting(problem, kernel)
        seconds[side] += load
        on[side][choice.device] += load
    for edge, loads, total in placed_edges(problem, assignment):
        side = collection_edge(problem, edge)
        seconds[side] += total
        for link_name, t in loads.items():
            on[side][link_name] += t
    collect, learn = seconds[True], seconds[False]
    phase, work = (COLLECTION_PHASE, on[True]) if collect >= learn else (LEARNING_PHASE, on[False])
    return collect, learn, f"{phase} ({max(work, key=work.get, default='none')})"


def unequal_actors(problem: AssignmentProblem, assignment: Assignment) -> list[str]:
    """A synchronous protocol runs its replicable kernels placed together in the same actor processes: their
    replica counts must agree."""
    seen: dict[str, tuple[str, int]] = {}
    out = []
    for kernel, choice in assignment.items():
        if not problem.task(kernel).replicable:
            continue
        first = seen.setdefault(choice.device, (kernel, choice.replicas))
        if first[1] != choice.replicas:
            out.append(f"kernels {first[0]!r} and {kernel!r} share the actors on {choice.device!r} but have "
                       f"{first[1]} and {choice.replicas} replicas")
    return out
