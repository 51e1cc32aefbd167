"""Build an :class:`AssignmentProblem` from a protocol, a platform and an estimator.

* every (kernel, device, variant) the estimator can cost becomes an option; what it
  cannot (a design that does not fit, a GPU asked to step gymnasium) is kept as the reason;
* variants per (kernel, device) are the estimator's (``Estimator.variants``: registered in
  ``pearl_py.kernels`` and able to run there); a variant with a one-off setup (a compile)
  is offered only when it pays the setup back over the run (``horizon`` samples); why a
  variant is not offered is kept in ``variant_notes``;
* CPUs of one model form a pool replicable kernels (actors) may spread over;
* identical nodes and identical devices in a node are interchangeable, so only as many
  of each as there are kernels are offered (an exact symmetry reduction for the
  catalogue's cluster platforms);
* memory needs, shared storage and stages come from the kernel kinds' declarations
  (:mod:`pearl_py.protocol.kernel`); capacities and pools from the device kinds'
  (:mod:`pearl_py.platform.kinds`);
* a kernel the estimator costs at more than one thread on a CPU (the learner update where
  calibrated, ``Estimator.thread_counts``) gets those costs in ``Option.threads``: the
  optimizer picks its thread count like a replica count (docs/optimizer.md);
* in a synchronous protocol (on-policy) a replicable kernel's replicas split its call's envs:
  ``Option.shares`` holds the cost of one replica's call on the largest share at every replica
  count up to the envs and the target's cores (``pearl_py.protocol.share.env_share``).

Example::

    >>> problem = build_problem(pearl.DQN("CartPole-v1").protocol(), Platform.load("pearl-cpu-gpu-fpga"),
    ...                         Estimator(), Constraints(power_cap_w=400))
    >>> problem.candidates(REPLAY_SAMPLE)
    [('cpu', 'reference'), ('gpu', 'reference'), ('fpga', 'reference')]
"""
from __future__ import annotations

import dataclasses
import itertools
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pearl_py.errors import PlanningError, UserError
from pearl_py.optimize.problem import (
    AssignmentProblem,
    Colocation,
    Device,
    Edge,
    Link,
    Option,
    Task,
)
from pearl_py.platform import Platform
from pearl_py.platform.kinds import device_kind
from pearl_py.protocol import Kernel, ProtocolGraph
from pearl_py.protocol.kernel import LEARNER_UPDATE, REPLAY_KINDS


class KernelCost(Protocol):
    """One call's cost as the builder reads it (:class:`pearl_py.estimate.Cost`)."""

    latency_s: float
    energy_j: float
    resources: Mapping[str, float]
    source: str
    instance: str
    setup_s: float


class CostModel(Protocol):
    """The estimator–optimizer contract, whole: what :func:`build_problem` asks of a cost model
    (:class:`pearl_py.estimate.Estimator` implements it; a test or a benchmark may bring its own).

    ``cost`` raises a :class:`~pearl_py.errors.UserError` (``Infeasible``) where the kernel cannot run.
    """

    def variants(self, kernel: Kernel, device: Any) -> list[str]:
        """Variants offered for ``kernel`` on ``device``, ``"reference"`` first."""

    def unavailable_variants(self, kernel: Kernel, device: Any) -> dict[str, str]:
        """Variants not offered there, with the reason (for reports)."""

    def thread_counts(self, kernel: Kernel, device: Any, variant: str = "reference") -> list[int]:
        """Thread counts a call is costed at (``[1]`` unless calibrated at more)."""

    def thread_note(self, kernel: Kernel, device: Any) -> str | None:
        """Why a kernel that could run threaded is offered one thread only, if so."""

    def cost(self, kernel: Kernel, device: Any, variant: str = "reference", threads: int = 1) -> KernelCost:
        """One call of ``kernel`` on ``device`` as ``variant`` at ``threads`` threads."""

    def process_start(self) -> tuple[float, str]:
        """``(seconds, source)`` until one child process of the runtime (an actor) runs its loop on this host."""


def break_even_calls(setup_s: float, latency_s: float, reference_latency_s: float) -> float:
    """Calls after which a variant's one-off setup is paid back by its faster calls (inf if it is not faster)."""
    saving = reference_latency_s - latency_s
    if setup_s <= 0:
        return 0.0
    return setup_s / saving if saving > 0 else float("inf")


def _calls(n: float) -> str:
    return f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.1f}k" if n >= 1e3 else f"{n:.0f}"


def decline_reason(kernel: Kernel, device: str, variant: str, setup_s: float, latency_s: float,
                   reference_latency_s: float, horizon: float | None) -> str | None:
    """Why a variant with a one-off setup is not offered over a run of ``horizon`` samples (None: it pays)."""
    if setup_s <= 0:
        return None
    needed = break_even_calls(setup_s, latency_s, reference_latency_s)
    calls = None if horizon is None else kernel.rate * horizon
    if calls is not None and calls > needed:
        return None
    head = f"{kernel.name}: variant {variant!r} on {device} not chosen: its one-off setup of {setup_s:.1f} s"
    if needed == float("inf"):
        return f"{head} buys no faster call ({latency_s * 1e3:.3g} vs {reference_latency_s * 1e3:.3g} ms)"
    head += f" pays back after {_calls(needed)} calls ({latency_s * 1e3:.3g} vs {reference_latency_s * 1e3:.3g} ms)"
    if calls is None:
        return head + "; the run length is unknown (plan with horizon=<env steps> to weigh it)"
    return head + f"; the run makes {_calls(calls)}"


@dataclass(frozen=True)
class Constraints:
    """User constraints: a power cap (W), kernels pinned to devices, devices not to use.

    Example: ``Constraints.from_mapping({"power_cap_w": 500, "pin": {"replay_sample": "fpga"}})``.
    """

    power_cap_w: float | None = None
    pin: Mapping[str, str] = field(default_factory=dict)
    exclude: tuple[str, ...] = ()

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | Constraints | None) -> Constraints:
        if data is None:
            return cls()
        if isinstance(data, Constraints):
            return data
        unknown = set(data) - {"power_cap_w", "pin", "exclude"}
        if unknown:
            raise PlanningError(f"unknown constraint {sorted(unknown)[0]!r}; known: power_cap_w, pin, exclude")
        cap = data.get("power_cap_w")
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, (int, float)) or cap <= 0):
            raise PlanningError(f"constraint power_cap_w must be a number of watts > 0, got {cap!r}")
        return cls(None if cap is None else float(cap), dict(data.get("pin") or {}), tuple(data.get("exclude") or ()))


def _group(name: str) -> tuple[str, str]:
    """``("node3", "gpu")`` for ``node3.gpu5``; ``("", "cpu")`` for ``cpu1``."""
    node, _, local = name.rpartition(".")
    return node, re.sub(r"\d+$", "", local)


def canonical_devices(platform: Platform, keep: int) -> list[str]:
    """The first ``keep`` nodes, and in each the first ``keep`` devices of every group of identical devices."""
    nodes = sorted({d.node for d in platform}, key=lambda n: (len(n), n))[:keep]
    seen: dict[tuple[str, str, str], int] = defaultdict(int)
    out = []
    for device in platform:
        if device.node not in nodes:
            continue
        key = (*_group(device.name), device.model)
        if seen[key] < keep:
            seen[key] += 1
            out.append(device.name)
    return out


def _device(device, name: str | None = None, members: tuple[str, ...] = ()) -> Device:
    spec = device.spec
    capacity: dict[str, float] = {}
    if device.memory_bytes > 0:
        capacity["memory_bytes"] = device.memory_bytes
    capacity.update(device_kind(device.kind).capacity(spec))
    return Device(name or device.name, device.kind, device.parallel_units, float(spec.idle_w), float(spec.peak_w),
                  capacity, members, device.model, device.node)


def _routes(platform: Platform, devices: Iterable[str]) -> tuple[dict[str, Link], dict[tuple[str, str], tuple]]:
    """Directed link resources and the fastest route (for 1 MB, as :meth:`Platform.route`) between devices."""
    names = sorted(set(devices))
    links: dict[str, Link] = {}
    routes: dict[tuple[str, str], tuple] = {}
    for src in names:
        paths = platform.fastest_paths(src)
        for dst in names:
            if dst == src or dst not in paths:
                continue
            hops = []
            for a, b in itertools.pairwise(paths[dst]):
                spec = platform.link(a, b)
                link_id = f"{a}->{b} ({spec.name})" if spec.name else f"{a}->{b}"
                links[link_id] = Link(spec.latency_us * 1e-6, spec.bandwidth_gbs * 1e9)
                hops.append(link_id)
            routes[(src, dst)] = tuple(hops)
    return links, routes


def _threaded(estimator: CostModel, kernel: Kernel, device, variant: str, target: str) -> tuple[tuple[float, float], ...]:
    """``(latency_s, energy_j)`` at 2, 3, ... threads where the estimator costs more than one thread
    (a non-replicable kernel of a threaded kind on one device, not a pool: the learner update on the
    calibrated local CPU)."""
    if kernel.replicable or not kernel.kind.threaded or target != device.name:
        return ()
    counts = [n for n in estimator.thread_counts(kernel, device, variant) if n > 1]
    return tuple((c.latency_s, c.energy_j) for c in (estimator.cost(kernel, device, variant, threads=n) for n in counts))


def _shares(estimator: CostModel, kernel: Kernel, device, variant: str, units: int) -> tuple[tuple[float, float], ...]:
    """``(latency_s, energy_j)`` of one replica's call when the kernel's envs are split 2, 3, ... ways (at most
    the envs, and ``units`` replicas): the estimator's cost of the largest share's workload."""
    from pearl_py.protocol.share import env_count, env_share

    out = []
    for replicas in range(2, min(env_count(kernel.workload), units) + 1):
        cost = estimator.cost(dataclasses.replace(kernel, workload=env_share(kernel.workload, replicas)), device,
                              variant)
        out.append((cost.latency_s, cost.energy_j))
    return tuple(out)


def build_problem(protocol: ProtocolGraph, platform: Platform, estimator: CostModel,
                  constraints: Constraints | Mapping[str, Any] | None = None,
                  variants: Sequence[str] | None = None, horizon: float | None = None,
                  refused_variants: Mapping[str, Mapping[str, str]] | None = None) -> AssignmentProblem:
    """The optimizer's view of running ``protocol`` on ``platform`` with ``estimator``'s costs.

    ``variants`` restricts the implementation variants considered (default: every variant
    the estimator offers per kernel and device, ``reference`` at least; the estimator offers
    only variants that support the kernel as its algorithm declared it). ``horizon``: samples
    (env steps) of the run; a variant with a one-off setup (``Cost.setup_s``, a compile) is
    offered only where its faster calls pay the setup back within it. ``None``: the run
    length is unknown and such variants are not offered (the reason is kept).
    ``refused_variants``: ``{kernel: {variant: reason}}``, more variants the caller keeps out
    (on every device); the reason is kept.
    """
    refused_variants = refused_variants or {}
    constraints = Constraints.from_mapping(constraints)
    kernels = list(protocol.kernels())
    for kernel_name, device_name in constraints.pin.items():
        if kernel_name not in protocol:
            raise PlanningError(f"pin: unknown kernel {kernel_name!r}; the protocol has {sorted(k.name for k in protocol.kernels())}")

    keep = canonical_devices(platform, len(kernels))
    pinned = set(constraints.pin.values())
    for name in pinned:
        if name not in platform.devices and not name.startswith("pool:"):
            raise PlanningError(f"pin: platform {platform.name!r} has no device {name!r}")
    chosen = [d for d in platform if (d.name in keep or d.name in pinned) and d.name not in constraints.exclude]
    devices = {d.name: _device(d) for d in chosen}
    by_model: dict[str, list] = defaultdict(list)
    for d in platform:
        if device_kind(d.kind).poolable and d.name not in constraints.exclude:
            by_model[d.model].append(d)
    pools = {}
    for model, members in by_model.items():
        if len(members) > 1:
            pool_name = f"pool:{model}x{len(members)}"
            devices[pool_name] = _device(members[0], pool_name, tuple(m.name for m in members))
            pools[pool_name] = members[0]
            for m in members:  # members outside the reduced set exist only as parts of the pool
                devices.setdefault(m.name, _device(m))

    options: dict[tuple[str, str, str], Option] = {}
    infeasible: dict[str, list[str]] = defaultdict(list)
    notes: dict[str, list[str]] = defaultdict(list)
    for kernel in kernels:
        targets = [(d.name, d) for d in chosen] + [(p, first) for p, first in pools.items() if kernel.replicable]
        for target, device in targets:
            offered = estimator.variants(kernel, device)
            if variants is not None:
                offered = [v for v in offered if v in variants]
            refused = {v: why for v, why in refused_variants.get(kernel.name, {}).items() if v in offered}
            offered = [v for v in offered if v not in refused]
            if target == device.name:
                for name, reason in {**estimator.unavailable_variants(kernel, device), **refused}.items():
                    notes[kernel.name].append(f"{kernel.name}: variant {name!r} not offered on {target}: {reason}")
            reference = None
            for variant in offered:
                try:
                    cost = estimator.cost(kernel, device, variant)
                except UserError as exc:
                    if variant == "reference" or reference is None:
                        infeasible[kernel.name].append(str(exc))
                        break
                    continue  # this variant cannot run here; the reference can
                if reference is not None and cost == reference:
                    continue  # the variant changes nothing on this device
                setup_s = float(cost.setup_s)
                if reference is not None and setup_s > 0:
                    reason = decline_reason(kernel, target, variant, setup_s, cost.latency_s,
                                            reference.latency_s, horizon)
                    if reason is not None:
                        if target == device.name:
                            notes[kernel.name].append(reason)
                        continue
                reference = reference or cost
                resources = {k: float(v) for k, v in cost.resources.items() if k != "cores"}
                need = kernel.memory_bytes
                if need:
                    resources["memory_bytes"] = need
                # an HLS design's instance is hardware kernels share (the FPGA sum tree); elsewhere kernels of
                # one storage share its memory (the replay's insert, sample and priority update)
                instance = cost.instance if device_kind(device.kind).costing == "hls" else kernel.kind.storage
                split = protocol.synchronous and not protocol.serialized and kernel.replicable
                units = devices[target].units * len(devices[target].physical)
                options[(kernel.name, target, variant)] = Option(
                    cost.latency_s, cost.energy_j, resources, cost.source, instance, setup_s,
                    _threaded(estimator, kernel, device, variant, target),
                    getattr(cost, "energy_source", "modelled"), getattr(cost, "setup_source", cost.source),
                    tuple(getattr(cost, "layers", ())),
                    shares=_shares(estimator, kernel, device, variant, units) if split else (),
                    loop_s=getattr(cost, "loop_s", 0.0), loop_source=getattr(cost, "loop_source", "modelled"),
                    cores=int(cost.resources.get("cores", 1)),
                    normalize_s=getattr(cost, "normalize_s", 0.0))
            if target == device.name:
                note = estimator.thread_note(kernel, device)
                if note:
                    notes[kernel.name].append(note)
    tasks = tuple(Task(k.name, k.rate, k.replicable, constraints.pin.get(k.name), k.kind.stage) for k in kernels)
    colocations = _device_storage(kernels, [d for d in chosen if not device_kind(d.kind).device_runtime.on_host])
    edges = tuple(Edge(src, dst, float(nbytes), float(rate)) for src, dst, nbytes, rate in protocol.edges())
    physical = {m for d in devices.values() for m in d.physical}
    links, routes = _routes(platform, physical)
    process_start_s, process_start_source = estimator.process_start()
    return AssignmentProblem(tasks, devices, options, edges, links, routes, serialized=protocol.serialized,
                             synchronous=protocol.synchronous and not protocol.serialized, overlap=protocol.overlap,
                             power_cap_w=constraints.power_cap_w, name=platform.name,
                             infeasible=dict(infeasible), variant_notes=dict(notes), colocations=colocations,
                             process_start_s=process_start_s, process_start_source=process_start_source)


def _device_storage(kernels: list[Kernel], gpus: list) -> tuple[Colocation, ...]:
    """The replay on a GPU (``gpus``: the devices whose runtime is off the host) is a ``TorchReplayBuffer`` in the
    learner's process (pearl_py.runtime.device_replay): its kernels go to a GPU together and with the learner
    (docs/optimizer.md)."""
    replay = tuple(k.name for k in kernels if k.kind in REPLAY_KINDS)
    learner = next((k.name for k in kernels if k.kind == LEARNER_UPDATE), None)
    if not replay or not gpus:
        return ()
    return (Colocation(replay, tuple(d.name for d in gpus), learner,
                       "a replay on a GPU is one TorchReplayBuffer in the learner's process"),)
