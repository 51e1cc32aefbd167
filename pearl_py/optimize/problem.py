"""AssignmentProblem: the optimizer's input as plain data (no torch, no estimator, no platform).

Every solver reads only this. :func:`pearl_py.optimize.builder.build_problem` makes one
from a protocol, a platform and an estimator; tests make them by hand.

Example::

    >>> p = AssignmentProblem(
    ...     tasks=(Task("act", rate=1.0, replicable=True), Task("learn", rate=0.25)),
    ...     devices={"cpu": Device("cpu", "cpu", units=4, idle_w=20, peak_w=80),
    ...              "gpu": Device("gpu", "gpu", units=1, idle_w=30, peak_w=300)},
    ...     options={("act", "cpu", "reference"): Option(1e-3, 2e-3),
    ...              ("learn", "cpu", "reference"): Option(4e-3, 8e-3),
    ...              ("learn", "gpu", "reference"): Option(5e-4, 1e-2)},
    ...     edges=(Edge("act", "learn", bytes=1024, rate=1.0),),
    ...     links={"pcie": Link(latency_s=1e-5, bandwidth_bps=25e9)},
    ...     routes={("cpu", "gpu"): ("pcie",), ("gpu", "cpu"): ("pcie",)})
    >>> p.candidates("learn")
    [('cpu', 'reference'), ('gpu', 'reference')]
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pearl_py.errors import PlanningError


@dataclass(frozen=True)
class Task:
    """A kernel as the optimizer sees it: calls per sample, whether it replicates, an optional pin."""

    name: str
    rate: float
    replicable: bool = False
    pinned: str | None = None
    """Device (or pool) the user requires this kernel to run on."""
    stage: str = ""
    """``act`` (env step, inference: the stage a policy-lag bound makes wait for training),
    ``intake`` (replay insert: pipelined with acting), ``train`` (the learner update, whose
    device's other work the actors wait for) or empty."""

    @property
    def acting(self) -> bool:
        return self.stage == "act"


@dataclass(frozen=True)
class Device:
    """A device, or a pool of identical devices (``members``) a replicable kernel may spread over.

    ``units`` are parallel units per member (CPU cores; 1 for a GPU or an FPGA).
    ``capacity`` holds checked resources (``memory_bytes``, FPGA ``dsp``, ``lut``, RAM blocks).
    """

    name: str
    kind: str
    units: int
    idle_w: float
    peak_w: float
    capacity: Mapping[str, float] = field(default_factory=dict)
    members: tuple[str, ...] = ()
    model: str = ""
    node: str = ""

    @property
    def physical(self) -> tuple[str, ...]:
        """The physical devices this placement target occupies."""
        return self.members or (self.name,)

    @property
    def is_pool(self) -> bool:
        return bool(self.members)


@dataclass(frozen=True)
class Option:
    """One call of a kernel on a device with a variant: latency, dynamic energy, resources, source.

    Options sharing a non-empty ``instance`` on one device share hardware (an FPGA
    sum tree serving insert, sample and priority update): its resources count once.
    """

    latency_s: float
    energy_j: float = 0.0
    resources: Mapping[str, float] = field(default_factory=dict)
    source: str = "modelled"
    instance: str = ""
    setup_s: float = 0.0
    """One-off seconds before the first call (a variant's compile); reported, not in the per-sample model."""
    threads: tuple[tuple[float, float], ...] = ()
    """``(latency_s, energy_j)`` per call at 2, 3, ... threads, for a kernel that may run multi-threaded on a
    CPU (the learner update, where calibrated); ``latency_s``/``energy_j`` are the one-thread call."""
    energy_source: str = "modelled"
    setup_source: str = "modelled"
    layers: tuple = ()
    """Per-layer breakdown (:class:`pearl_py.plan.LayerCost`), carried to the prediction for reports."""
    shares: tuple[tuple[float, float], ...] = ()
    """``(latency_s, energy_j)`` of one replica's call when the call's envs are split over 2, 3, ... replicas:
    a synchronous protocol's actor-side kernels (each actor steps, infers for and stores its share of the envs,
    the largest share setting the pace). Empty: the call cannot be split (one replica at most there)."""
    loop_s: float = 0.0
    """The part of ``latency_s`` (and of every share) that is the training loop's own work per call (an
    ``env_step``'s, ``Cost.loop_s``); reports show it apart from the kernel."""
    loop_source: str = "modelled"
    cores: int = 1
    """Cores one call (one replica's) holds on a CPU: more than one for an env backend's worker threads
    (``Variant.cores``); :meth:`AssignmentProblem.cores` charges them."""
    normalize_s: float = 0.0
    """The part of ``loop_s`` that is the ``normalize`` transform's work (``Cost.normalize_s``)."""

    @property
    def max_threads(self) -> int:
        return 1 + len(self.threads)

    @property
    def max_split(self) -> int:
        """Replicas a synchronous protocol may split the call over (1 + the shares costed)."""
        return 1 + len(self.shares)

    def share(self, replicas: int) -> tuple[float, float]:
        """``(latency_s, energy_j)`` of one replica's call when the envs are split over ``replicas`` replicas."""
        return self._nth(self.shares, replicas, "split over {} replicas")

    def at(self, threads: int) -> tuple[float, float]:
        """``(latency_s, energy_j)`` of one call at ``threads`` threads (1 .. :attr:`max_threads`)."""
        return self._nth(self.threads, threads, "at {} threads")

    def _nth(self, costs: tuple[tuple[float, float], ...], n: int, what: str) -> tuple[float, float]:
        """The one-call cost for ``n`` = 1, else ``costs[n - 2]``; ``what`` names ``n`` in the error."""
        if n == 1:
            return self.latency_s, self.energy_j
        if not 2 <= n <= 1 + len(costs):
            raise ValueError(f"option has no cost {what.format(n)} (1..{1 + len(costs)})")
        return costs[n - 2]


@dataclass(frozen=True)
class Edge:
    """Data from ``src`` to ``dst``: ``bytes`` per transfer, ``rate`` transfers per sample."""

    src: str
    dst: str
    bytes: float
    rate: float


@dataclass(frozen=True)
class Link:
    """A physical link: one-way latency (s) and bandwidth (bytes/s)."""

    latency_s: float
    bandwidth_bps: float

    def transfer_s(self, nbytes: float) -> float:
        return self.latency_s + nbytes / self.bandwidth_bps


@dataclass(frozen=True)
class Colocation:
    """On each of ``devices``, the ``kernels`` are all placed there or none is, and where they are, ``with_kernel``
    is too: one store on a device, beside the kernel that consumes it (the replay on a GPU is a
    ``TorchReplayBuffer`` in the learner's process: its insert, sample and priority update there, with the learner)."""

    kernels: tuple[str, ...]
    devices: tuple[str, ...]
    with_kernel: str | None = None
    reason: str = ""

    def breaches(self, placed: Mapping[str, str]) -> list[str]:
        """What ``placed`` (kernel -> device, the kernels placed so far) breaks of this rule, in words."""
        out = []
        for device in self.devices:
            here = [k for k in self.kernels if placed.get(k) == device]
            if not here:
                continue
            away = [k for k in self.kernels if k in placed and placed[k] != device]
            if away:
                out.append(f"{', '.join(here)} on {device!r} but {', '.join(away)} elsewhere ({self.reason})")
            if self.with_kernel in placed and placed[self.with_kernel] != device:
                out.append(f"{', '.join(here)} on {device!r} without {self.with_kernel} ({self.reason})")
        return out


@dataclass
class AssignmentProblem:
    """Kernels, devices, the cost table ``options[(kernel, device, variant)]``, edges, links, routes.

    ``routes[(a, b)]`` lists the link names crossed from physical device ``a`` to ``b``.
    ``serialized`` is true when the protocol runs its stages one after another; ``synchronous`` when
    collection (the ``act`` and ``intake`` stages, replicated over actors that split the envs) and learning
    (everything else) alternate, as an on-policy run does (docs/optimizer.md, "Synchronous protocols").
    ``overlap`` (overlapped protocols): the fraction of a training round the acting stage
    may run alongside training (:attr:`pearl_py.protocol.schedule.TrainSchedule.overlap`);
    below 1 the acting stage (or the intake, if slower) and ``1 - overlap`` of the other work
    on the training kernel's device form a chain.
    ``infeasible[kernel]`` keeps why a kernel cannot run on some devices (for error messages);
    ``variant_notes[kernel]`` why some implementation variants are not offered (not available
    on this machine, a one-off setup the run would not pay back), for reports.
    ``colocations``: kernels that go together on some devices (:class:`Colocation`).
    """

    tasks: tuple[Task, ...]
    devices: dict[str, Device]
    options: dict[tuple[str, str, str], Option]
    edges: tuple[Edge, ...] = ()
    links: dict[str, Link] = field(default_factory=dict)
    routes: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)
    serialized: bool = False
    synchronous: bool = False
    overlap: float = 1.0
    power_cap_w: float | None = None
    name: str = "problem"
    infeasible: dict[str, list[str]] = field(default_factory=dict)
    variant_notes: dict[str, list[str]] = field(default_factory=dict)
    colocations: tuple[Colocation, ...] = ()
    process_start_s: float = 0.0
    """Seconds until one child process of the runtime (an actor) runs its loop: a spawned interpreter importing
    the runtime, paid once per run by plans that are not serialized (:mod:`pearl_py.optimize.whole_run`)."""
    process_start_source: str = "modelled"
    """How ``process_start_s`` is known: ``calibrated`` (timed by ``pearl profile``) or ``modelled``."""

    def __post_init__(self) -> None:
        self._task = {t.name: t for t in self.tasks}
        self.cache: dict = {}
        """Memo of derived figures (edge costs per placement pair), filled by the model."""
        self._cands: dict[str, list[tuple[str, str]]] = {t.name: [] for t in self.tasks}
        for (k, d, v) in self.options:
            if k not in self._task:
                raise ValueError(f"option for unknown kernel {k!r}")
            if d not in self.devices:
                raise ValueError(f"option for kernel {k!r} on unknown device {d!r}")
            task = self._task[k]
            if task.replicable and self.options[(k, d, v)].threads:
                raise ValueError(f"option ({k}, {d}, {v}): a replicable kernel cannot also be threaded")
            if self.options[(k, d, v)].shares and not (task.replicable and self.synchronous):
                raise ValueError(f"option ({k}, {d}, {v}): split costs belong to a replicable kernel of a "
                                 "synchronous protocol")
            if self.devices[d].is_pool and not task.replicable:
                continue  # only replicable kernels spread over a pool
            if task.pinned is not None and d != task.pinned:
                continue
            if self.split(k) and not self.replica_choices(k, d, v):
                continue  # a pool with more members than the call has envs to split among them
            self._cands[k].append((d, v))
        for edge in self.edges:
            for end in (edge.src, edge.dst):
                if end not in self._task:
                    raise ValueError(f"edge {edge.src}->{edge.dst}: unknown kernel {end!r}")

    def task(self, name: str) -> Task:
        return self._task[name]

    @property
    def mode(self) -> str:
        """``serialized``, ``synchronous`` or ``overlapped`` (a plan's ``mode``)."""
        return "serialized" if self.serialized else "synchronous" if self.synchronous else "overlapped"

    def split(self, kernel: str) -> bool:
        """Whether the kernel's replicas split its calls' envs (a replicable kernel of a synchronous protocol)
        rather than share its calls."""
        return self.synchronous and not self.serialized and self._task[kernel].replicable

    def candidates(self, kernel: str) -> list[tuple[str, str]]:
        """``(device, variant)`` pairs the kernel may be placed on (pins and pools applied)."""
        return self._cands[kernel]

    def option(self, kernel: str, device: str, variant: str) -> Option:
        return self.options[(kernel, device, variant)]

    def replica_choices(self, kernel: str, device: str, variant: str = "reference") -> range:
        """Replicas per member device (1..units) for a replicable kernel; threads (1..the option's
        calibrated counts, at most the device's units) for a threaded option; else just 1."""
        units = self.devices[device].units
        if self._task[kernel].replicable:   # a replica holding several cores: as many as fit the units, one at least
            units = max(units // self._option_cores(kernel, device, variant), 1)
        if self.split(kernel):   # every replica takes a share of the envs: at most max_split in all
            option = self.options.get((kernel, device, variant))
            limit = option.max_split // len(self.devices[device].physical) if option is not None else 1
            return range(1, min(units, limit) + 1)
        if self._task[kernel].replicable:
            return range(1, units + 1)
        option = self.options.get((kernel, device, variant))
        return range(1, min(option.max_threads, units) + 1) if option is not None else range(1, 2)

    def _option_cores(self, kernel: str, device: str, variant: str) -> int:
        option = self.options.get((kernel, device, variant))
        return option.cores if option is not None else 1

    def cores(self, kernel: str, device: str, variant: str, count: int) -> int:
        """Cores on each member device of ``device`` that ``kernel`` holds as ``variant`` with ``count`` replicas
        per member (each holds its option's cores: an env backend's worker threads) or ``count`` threads (a
        threaded kernel): what the core rows and admission charge.

            >>> problem.cores("act", "cpu", "envpool_t2", 1), problem.cores("learn", "cpu", "fused", 2)
            (2, 2)
        """
        if not self._task[kernel].replicable:
            return count
        return count * self._option_cores(kernel, device, variant)

    def threaded(self, kernel: str, device: str, variant: str) -> bool:
        """Whether the kernel may run more than one thread on ``device`` as ``variant``."""
        return len(self.replica_choices(kernel, device, variant)) > 1 and not self._task[kernel].replicable

    def physical_devices(self) -> list[Device]:
        return [d for d in self.devices.values() if not d.is_pool]

    def route(self, a: str, b: str) -> tuple[str, ...]:
        if a == b:
            return ()
        try:
            return self.routes[(a, b)]
        except KeyError:
            raise PlanningError(f"no route from {a!r} to {b!r} on platform {self.name!r}") from None

    def check_hostable(self) -> None:
        """Raise :class:`PlanningError` naming the first kernel no device can host, with the reasons."""
        for task in self.tasks:
            if self._cands[task.name]:
                continue
            reasons = "; ".join(self.infeasible.get(task.name, [])) or "no cost entry on any device"
            if task.pinned is not None:
                raise PlanningError(f"kernel {task.name!r} is pinned to {task.pinned!r}, which cannot host it "
                                    f"({reasons})")
            raise PlanningError(f"kernel {task.name!r}: no device of {self.name!r} can host it ({reasons})")
