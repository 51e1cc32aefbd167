"""Kernel kinds, declared once, and kernels: the units of work a training loop is split into.

A :class:`KernelKind` is declared once with :meth:`KernelKind.declare`: its name and what every stage needs to
know about it (docs/extending.md, "A new kernel kind"); no stage names a kind by a string literal. A kind *is*
its name (a ``str``), so plans, timers and result files keep plain names.

Example::

    >>> ENV_STEP.stage, ENV_STEP.replicable, ENV_STEP.hosts
    ('act', True, frozenset({'cpu'}))
    >>> KernelKind("replay_sample") is REPLAY_SAMPLE, REPLAY_SAMPLE == "replay_sample"
    (True, True)
    >>> NORMALIZE = KernelKind.declare("obs_normalize", "running mean/std of observations",
    ...                                stage="act", replicable=True)      # a new kind: one declaration
    >>> k = Kernel("obs_normalize", NORMALIZE, workload, rate=1.0)
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import yaml

from pearl_py.protocol.workload import (
    ADAM_COPIES,
    AdvantageWorkload,
    EnvWorkload,
    NetworkWorkload,
    ReplayWorkload,
    RolloutWorkload,
    SyncWorkload,
    Workload,
)

STAGES = ("act", "intake", "train", "")
"""Stages of the optimizer's policy-lag chain (docs/optimizer.md): acting, replay intake, the learner
update, and everything else."""

SIM_ROLES = ("actor", "intake", "sample", "update", "priority", "sync", "scan", "none")
"""How the discrete-event simulator plays a kind (pearl_py/simulate/processes.py, on_policy.py): in every actor
per vector step, as the replay intake, before each update, as the update, after it, per publication, once
per rollout before its updates (the advantage scan); ``none``: not simulated (its busy time still counts in
the performance model)."""


class _KindRegistry(type):
    """Lets ``for kind in KernelKind`` and ``len(KernelKind)`` walk the declared kinds, as an enum's."""

    def __iter__(cls) -> Iterator[KernelKind]:
        return iter(tuple(cls._declared.values()))

    def __len__(cls) -> int:
        return len(cls._declared)


class KernelKind(str, metaclass=_KindRegistry):
    """A declared kind of kernel; equal to (and hashed as) its name. ``KernelKind(name)`` finds one."""

    _declared: ClassVar[dict[str, KernelKind]] = {}
    summary: str
    stage: str
    replicable: bool
    warmup: bool
    storage: str
    hosts: frozenset[str] | None
    hosts_reason: str
    threaded: bool
    memory: Callable[[Workload], float]
    sim_role: str
    call_unit: str
    workload_type: type | None

    def __new__(cls, name: str) -> KernelKind:
        try:
            return cls._declared[str(name)]
        except KeyError:
            raise ValueError(f"unknown kernel kind {name!r}; declared: {', '.join(cls._declared)}") from None

    @classmethod
    def declare(cls, name: str, summary: str, *, stage: str = "", replicable: bool = False, warmup: bool = False,
                storage: str = "", hosts: frozenset[str] | set[str] | None = None, hosts_reason: str = "",
                threaded: bool = False, memory: Callable[[Workload], float] = lambda workload: 0.0,
                sim_role: str = "none", call_unit: str = "calls", workload_type: type | None = None) -> KernelKind:
        """Declare a kind once (a second declaration of the name is an error).

        ``storage``: kernels of kinds with the same non-empty storage touch one store and run where it
        lives (a replay's insert, sample and priority update); its ``memory`` is counted once per device.
        ``hosts``: device kinds that can run it (None: any), ``hosts_reason`` says why in errors. ``threaded``: it
        may run several threads on a CPU where calibrated (the learner update). ``workload_type``: the workload its
        kernels carry (checked when a :class:`Kernel` is made).
        """
        if name in cls._declared:
            raise ValueError(f"kernel kind {name!r} is already declared")
        if stage not in STAGES:
            raise ValueError(f"kernel kind {name!r}: stage must be one of {STAGES}, got {stage!r}")
        if sim_role not in SIM_ROLES:
            raise ValueError(f"kernel kind {name!r}: sim_role must be one of {SIM_ROLES}, got {sim_role!r}")
        kind = str.__new__(cls, name)
        kind.summary, kind.stage, kind.replicable, kind.warmup = summary, stage, replicable, warmup
        kind.storage, kind.hosts, kind.threaded, kind.memory = storage, frozenset(hosts) if hosts else None, \
            threaded, memory
        kind.hosts_reason = hosts_reason or (f"runs on {', '.join(sorted(hosts))} devices only" if hosts else "")
        kind.sim_role, kind.call_unit, kind.workload_type = sim_role, call_unit, workload_type
        cls._declared[name] = kind
        return kind

    @property
    def value(self) -> str:
        """The kind's name (as an enum member's ``value``)."""
        return str(self)

    @property
    def name(self) -> str:
        return str(self)

    def can_run_on(self, device_kind: str) -> bool:
        return self.hosts is None or device_kind in self.hosts

    def __reduce__(self) -> tuple[Any, ...]:  # pickles (actor processes, checkpoints) as a lookup by name
        return KernelKind, (str(self),)


def _replay_bytes(workload: ReplayWorkload) -> float:
    return float(workload.capacity * workload.item_bytes)


ENV_STEP = KernelKind.declare(
    "env_step", "step of a vector of gymnasium envs", stage="act", replicable=True, warmup=True,
    hosts={"cpu"}, hosts_reason="gymnasium environments run on CPUs", sim_role="actor", workload_type=EnvWorkload)
INFERENCE = KernelKind.declare(
    "inference", "the acting network on a batch of observations", stage="act", replicable=True,
    memory=lambda w: float(w.weight_bytes), sim_role="actor", workload_type=NetworkWorkload)
REPLAY_INSERT = KernelKind.declare(
    "replay_insert", "transitions into the replay's ring storage (and priority tree)", stage="intake", warmup=True,
    storage="replay", memory=_replay_bytes, sim_role="intake", workload_type=ReplayWorkload)
REPLAY_SAMPLE = KernelKind.declare(
    "replay_sample", "a batch drawn from the replay (uniform or proportional)", storage="replay",
    memory=_replay_bytes, sim_role="sample", workload_type=ReplayWorkload)
PRIORITY_UPDATE = KernelKind.declare(
    "priority_update", "new priorities of the sampled batch (prioritized replay)", storage="replay",
    memory=_replay_bytes, sim_role="priority", workload_type=ReplayWorkload)
LEARNER_UPDATE = KernelKind.declare(
    "learner_update", "every loss of the algorithm, optimizer steps, target updates", stage="train", threaded=True,
    memory=lambda w: float(ADAM_COPIES * w.weight_bytes + w.resident_bytes), sim_role="update", call_unit="updates",
    workload_type=NetworkWorkload)
PARAM_SYNC = KernelKind.declare(
    "param_sync", "the acting networks' weights from the learner to the actors", sim_role="sync",
    call_unit="publications", workload_type=SyncWorkload)

yaml.SafeDumper.add_representer(KernelKind, lambda dumper, kind: dumper.represent_str(str(kind)))
"""plan.yaml and reports write a kind as its plain name."""

ROLLOUT_INSERT = KernelKind.declare(
    "rollout_insert", "a vector step's transitions into the on-policy rollout storage", stage="intake",
    replicable=True, storage="rollout", hosts={"cpu"}, hosts_reason="actors write their share of the rollout into "
    "host shared memory", memory=lambda w: float(w.capacity_bytes), sim_role="actor", workload_type=RolloutWorkload)
ADVANTAGE = KernelKind.declare(
    "advantage", "GAE(lambda) over the rollout, bootstrapped where a time limit cut an episode",
    sim_role="scan", call_unit="rollouts", workload_type=AdvantageWorkload)

for _kind in tuple(KernelKind):  # enum-style access: KernelKind.ENV_STEP
    setattr(KernelKind, _kind.upper(), _kind)

LOOP_WORK = "loop"
"""Not a kernel: the timing entry of a training loop's own work per vector step outside its kernels (the
collector's bookkeeping, episode tracking, logs). The serial executors measure it (their training time minus
their kernels'); the cost model charges it with the ``env_step`` it accompanies (``Cost.loop_s``)."""

LOOP_WORK_LABEL = "derived: training time minus the timed kernels"
"""What ``LOOP_WORK``'s figure is: not timed itself, but the remainder of two measured figures (``result.json``
``kernel_times.loop.source`` is ``derived``, its ``label`` this)."""


def setup_timing(kernel: str) -> str:
    """The timing entry of ``kernel``'s one-off setup paid inside a run (a CUDA graph's capture, a compile on the
    first call): measured apart from the kernel's own calls, as the prediction charges it apart (``setup_s``).

    >>> setup_timing("learner_update")
    'learner_update_setup'
    """
    return f"{kernel}_setup"


REPLAY_KINDS = frozenset(k for k in KernelKind if k.storage == "replay")
"""Kernels that touch the replay storage and so must run where it lives."""


@dataclass(frozen=True)
class Kernel:
    """A named unit of work with its workload and how often it runs.

    ``rate`` is calls per collected transition (one env step of one env).
    ``replicable`` kernels (actors: env_step, inference) may run as several
    parallel replicas, each taking a share of the calls (the kind's default).
    """

    name: str
    kind: KernelKind
    workload: Workload
    rate: float
    replicable: bool | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.kind, KernelKind):
            object.__setattr__(self, "kind", KernelKind(self.kind))
        if self.replicable is None:
            object.__setattr__(self, "replicable", self.kind.replicable)
        if self.rate < 0:
            raise ValueError(f"kernel {self.name!r}: rate must be >= 0, got {self.rate}")
        expected = self.kind.workload_type
        if expected is not None and not isinstance(self.workload, expected):
            raise TypeError(f"kernel {self.name!r}: a {self.kind} kernel carries a {expected.__name__}, "
                            f"got {type(self.workload).__name__}")

    @property
    def memory_bytes(self) -> float:
        """Resident bytes it keeps on its device (its kind's rule: replay storage, weights, Adam state)."""
        return self.kind.memory(self.workload)
