"""Admission: a run's memory, processes and threads checked against this machine before anything starts.

Two checks, each refusing with the figures and the key that sets the largest need:

* :func:`admit_config`, before the algorithm's kernels are derived (deriving them builds the networks
  and a batch): the learner's networks (weights, gradients, Adam's two moments, target copies), one
  training batch with its activations and the replay (or rollout) must fit in the memory available
  now. Every figure is modelled from the config: the networks are built on torch's ``meta`` device
  (shapes, no storage) and counted; the replay's bytes are its storage layout's.
* :func:`admit_plan`, once the plan is resolved and checked: the processes it starts (the learner,
  ``env_step.replicas`` actors, a replay or inference server) must fit in memory (each costs the memory
  of a freshly started pearl_py process, measured once on this machine and cached, plus its
  networks), the shared-memory segments in ``/dev/shm``, the processes in the user's process limit;
  and the cores it holds should not outnumber the usable cores, counted by the optimizer's rule
  (docs/optimizer.md, "threads"): every actor process holds a core (as many as its env backend's worker
  threads: ``envpool_t2`` two), and so does each learner thread beyond the first (the first thread and any
  server share the cores, their time in the busy-time model), so every plan the optimizer makes for this
  machine fits. An oversubscribed plan runs only
  with ``oversubscribe`` (the CLI's ``--oversubscribe``), and the result records it. On a CUDA device the
  plan uses, the learner's networks and batch (where ``learner_update`` runs) and the replay (where its kernels
  run; a GPU replay stores whole observations, no frame ring) must fit in the device's free memory
  (``torch.cuda.mem_get_info``).

A refusal is a :class:`~pearl_py.errors.ConfigError` located at the key (``plan.yaml:12:
placements.env_step.replicas: ...``); the CLI prints it on one line and exits with code 2.

Example::

    >>> admit_config(pearl.DQN("CartPole-v1", net_arch=[1_000_000, 1_000_000]))
    ConfigError: hyperparameters.net_arch: the learner's networks need 5.0 TB (modelled: 1.0e+12 parameters ...
    >>> admission = admit_plan(plan, algo, oversubscribe=False)
    >>> admission.describe()
    'admission: 2 processes (learner with 1 thread, 1 actor) on 2 usable cores; memory 0.5 GB of 21.9 GB ...'
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import resource
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from pearl_py.algorithms.core import BaseAlgorithm
from pearl_py.algorithms.off_policy.base import Algorithm
from pearl_py.algorithms.on_policy import OnPolicyAlgorithm
from pearl_py.errors import ConfigError
from pearl_py.fileio import atomic_write_json
from pearl_py.kernels.registry import call_cores
from pearl_py.plan import Plan
from pearl_py.platform.local import (
    available_memory_bytes,
    shared_memory_bytes,
    usable_cores,
)
from pearl_py.protocol.kernel import ENV_STEP, INFERENCE, LEARNER_UPDATE, REPLAY_INSERT
from pearl_py.protocol.workload import ADAM_COPIES, FLOAT_BYTES

KeyPath = tuple[str, ...]
Locate = Callable[[KeyPath, str], ConfigError]
"""Builds the located error for a key path (a file's ``doc.error``; :func:`plain_error` without a file)."""

ACTIVATION_COPIES = 2
"""Per sample and network layer, an update keeps the layer's output for the backward pass and its gradient."""
PROBE_FILE = "process-memory.json"
"""The cached measurement of one pearl_py process (in ``$PEARL_CACHE_DIR``, beside the calibration)."""


def plain_error(path: KeyPath, message: str) -> ConfigError:
    return ConfigError(message, key=".".join(path) or None)


@dataclass(frozen=True)
class Need:
    """Memory a run needs for one thing: what, bytes, the key that sets it, and how the figure is known."""

    what: str
    bytes: float
    key: KeyPath
    source: str = "modelled"
    detail: str = ""
    """How the figure is made up, for the refusal's message."""
    shared: bool = False
    """It lives in ``/dev/shm`` (shared-memory segments; they take the machine's memory too)."""


@dataclass(frozen=True)
class Machine:
    """What this machine offers a run now."""

    cores: int
    available_bytes: float
    shm_bytes: float
    process_bytes: float | None
    """Private memory of a freshly started run child (measured once; None where it cannot be measured)."""
    process_slots: int | None = None
    """Processes the user may still start (``RLIMIT_NPROC`` less those running; None: no limit)."""
    gpu_free_bytes: dict[int, float] = field(default_factory=dict)
    """Free memory of each CUDA device, by index (``torch.cuda.mem_get_info``; empty without CUDA)."""

    @classmethod
    def here(cls, measure: bool = True) -> Machine:
        """This machine's figures (``measure``: the per-process memory too, measured once and cached)."""
        return cls(cores=usable_cores(), available_bytes=available_memory_bytes(), shm_bytes=shared_memory_bytes(),
                   process_bytes=process_memory_bytes() if measure else None, process_slots=_process_slots(),
                   gpu_free_bytes=_gpu_free_bytes())


@dataclass(frozen=True)
class Footprint:
    """The memory an algorithm's config asks for, modelled (see the module docstring)."""

    networks: Need
    batch: Need
    storage: Need
    acting_bytes: float
    """One copy of the acting networks (each actor's, the parameter board's)."""

    @classmethod
    def of(cls, algorithm: BaseAlgorithm) -> Footprint:
        cfg, spec = algorithm.config, algorithm.spec
        try:
            with torch.device("meta"):  # shapes without storage: a config's networks are counted, never allocated
                nets = algorithm.build_networks()
        except Exception:  # a user's networks that cannot be built without storage: not counted (no refusal)
            nets = {}
        params = {name: sum(p.numel() for p in net.parameters()) for name, net in nets.items()}
        widths = sum(m.out_features for net in nets.values() for m in net.modules() if isinstance(m, torch.nn.Linear))
        targets = sum(params.get(name, 0) for name in getattr(algorithm, "target_networks", ()))
        acting = sum(params.get(name, 0) for name in algorithm.acting_networks or params)
        trained = sum(params.values())
        network_bytes = FLOAT_BYTES * (ADAM_COPIES * trained + targets)
        networks = Need("the learner's networks", network_bytes, ("hyperparameters", "net_arch"),
                        detail=f"{trained:.3g} parameters x {FLOAT_BYTES} B x {ADAM_COPIES}: weights, gradients, "
                               f"Adam's two moments" + (f", + {targets:.3g} target parameters" if targets else "")
                               + ", modelled")
        if isinstance(algorithm, Algorithm):
            rows, item = cfg.batch_size, algorithm.transition_layout().sampled_bytes
            storage = Need("the replay", float(algorithm.replay_bytes()), ("hyperparameters", "buffer_size"),
                           detail=f"{cfg.buffer_size:,} transitions, its storage layout")
        elif isinstance(algorithm, OnPolicyAlgorithm):
            from pearl_py.replay.rollout import RolloutBuffer

            rows = min(cfg.minibatch_size, cfg.rollout_size)
            item = RolloutBuffer.item_bytes(spec.obs_shape, spec.action_shape, spec.action_dtype, spec.obs_dtype)
            storage = Need("the rollout", float(cfg.rollout_size * item), ("hyperparameters", "n_steps"),
                           detail=f"n_steps x n_envs = {cfg.rollout_size:,} items of {item} B, modelled")
        else:  # a family without replay or rollout storage: its networks and one observation per row
            rows, item = 1, FLOAT_BYTES * spec.obs_dim
            storage = Need("no replay or rollout", 0.0, ("hyperparameters",), detail=f"the {algorithm.family} "
                           "family stores no transitions")
        per_row = item + FLOAT_BYTES * ACTIVATION_COPIES * widths
        batch = Need("one training batch", float(rows) * per_row, ("hyperparameters", "batch_size"),
                     detail=f"{rows:,} rows x {per_row:,} B: the transition and {ACTIVATION_COPIES} x {widths:,} "
                            "layer outputs (activations, their gradients), modelled")
        return cls(networks, batch, storage, float(FLOAT_BYTES * acting))


@dataclass(frozen=True)
class Admission:
    """What :func:`admit_plan` found: the run's processes, busy cores and memory against the machine's."""

    processes: int
    busy: int
    """Cores the plan holds: its actor processes (each its env backend's worker threads) and the learner's threads
    beyond the first."""
    cores: int
    memory_bytes: float
    available_bytes: float
    shm_bytes: float
    shm_available_bytes: float
    oversubscribed: bool
    parts: str
    """The processes in words: ``learner with 1 thread, 2 actors, a replay server``."""
    needs: tuple[Need, ...] = field(default=())

    def describe(self) -> str:
        over = " (oversubscribed: allowed by --oversubscribe)" if self.oversubscribed else ""
        return (f"admission: {self.processes} process{'es' * (self.processes > 1)} ({self.parts}) hold {self.busy} "
                f"of {self.cores} usable cores{over}; memory {_size(self.memory_bytes)} of "
                f"{_size(self.available_bytes)} available, shared memory {_size(self.shm_bytes)} of "
                f"{_size(self.shm_available_bytes)} (modelled, per-process memory measured)")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["needs"] = [{"what": n.what, "bytes": n.bytes, "key": ".".join(n.key), "source": n.source,
                          "shared": n.shared} for n in self.needs]
        return data


def admit_config(algorithm: BaseAlgorithm, *, replay: bool = True, error: Locate = plain_error,
                 machine: Machine | None = None) -> Footprint:
    """Refuse a config whose networks, batch and (with ``replay``) replay or rollout cannot fit in the memory
    available now; the error names the largest. Returns the footprint."""
    footprint = Footprint.of(algorithm)
    machine = machine or Machine.here(measure=False)
    needs = [footprint.networks, footprint.batch] + ([footprint.storage] if replay else [])
    _fit(needs, machine.available_bytes, "of memory available here", error)
    return footprint


def admit_plan(plan: Plan, algorithm: Algorithm, *, oversubscribe: bool = False, plan_error: Locate = plain_error,
               config_error: Locate = plain_error, machine: Machine | None = None) -> Admission:
    """Refuse a plan whose processes, shared memory or memory cannot fit this machine, or that keeps more cores
    busy than there are without ``oversubscribe``; what it found otherwise (see the module docstring)."""
    from pearl_py.runtime.parallel.placement import RuntimeLayout

    footprint = Footprint.of(algorithm)
    machine = machine or Machine.here(measure=not plan.serialized)
    locate = _locator(plan_error, config_error)
    parallel: ParallelNeeds | None = None
    if plan.serialized:
        threads, actors, servers = plan.learner_threads, 0, []
        needs, shm = [footprint.networks, footprint.batch, footprint.storage], []
    elif plan.mode == "synchronous":  # on-policy actors and a learner, one rollout in shared memory
        from pearl_py.runtime.on_policy_layout import OnPolicyLayout

        layout = OnPolicyLayout.from_plan(plan, algorithm)
        threads, actors, servers = layout.learner_threads, layout.actors, []
        parallel = RolloutNeeds(footprint, machine.process_bytes)
        needs, shm = parallel.memory(actors), parallel.shared(actors)
    else:
        layout = RuntimeLayout.from_plan(plan)
        threads, actors = layout.learner_threads, layout.actors
        servers = (["a replay server"] if layout.replay == "server" else []) + \
                  (["an inference server"] if layout.inference == "central" else [])
        parallel = ParallelNeeds(algorithm, footprint, machine.process_bytes, servers)
        needs, shm = parallel.memory(actors), parallel.shared(actors)
    _admit_gpus(plan, algorithm, footprint, machine, locate)
    processes = 1 + actors + len(servers)
    parts = ", ".join([f"learner with {threads} thread{'s' * (threads > 1)}"]
                      + ([f"{actors} actor{'s' * (actors > 1)}"] if actors else []) + servers)
    if machine.process_slots is not None and processes - 1 > machine.process_slots:
        raise plan_error(("placements", ENV_STEP, "replicas"),
                         f"the plan starts {processes - 1} processes ({parts}) but this user may start only "
                         f"{machine.process_slots} more (ulimit -u)")
    for wanted, capacity, where in ((shm, machine.shm_bytes, "free in /dev/shm"),
                                    (needs + shm, machine.available_bytes, "of memory available here")):
        if sum(n.bytes for n in wanted) > capacity:
            fits = parallel.most_actors(capacity, shared_only=wanted is shm) if parallel and actors else None
            raise _refusal(wanted, capacity, where, locate, fits)
    # the optimizer's rule (docs/optimizer.md, "threads", "a backend's worker threads"): an actor holds its env
    # backend's cores; a synchronous learner runs while its actors wait, a serialized one between the env steps
    each = call_cores(ENV_STEP, plan.variant(ENV_STEP), algorithm.family)
    if plan.serialized:
        busy = max(threads, each) - 1
    else:
        busy = actors * each if plan.mode == "synchronous" else actors * each + threads - 1
    if busy > machine.cores and not oversubscribe:
        fits = max((machine.cores - threads + 1) // each, 1)
        key, lower = (("placements", ENV_STEP, "replicas"), f"at most {fits} actor{'s' * (fits > 1)} here") if actors \
            else (("placements", LEARNER_UPDATE, "replicas"), f"at most {machine.cores} threads here")
        held = f"{actors} actor process{'es' * (actors != 1)}" + (f" of {each} cores each" if each > 1 else "") + \
            (f" and {threads - 1} learner thread{'s' * (threads > 2)} beyond its first" if threads > 1 else "")
        raise plan_error(key, f"the plan holds {busy} cores ({held}; {parts}) but this machine has {machine.cores} "
                              f"usable: pass --oversubscribe (oversubscribe=True) to run it anyway, its samples/s "
                              f"measured as they come, or lower it ({lower})")
    return Admission(processes=processes, busy=busy, cores=machine.cores,
                     memory_bytes=sum(n.bytes for n in needs + shm), available_bytes=machine.available_bytes,
                     shm_bytes=sum(n.bytes for n in shm), shm_available_bytes=machine.shm_bytes,
                     oversubscribed=busy > machine.cores, parts=parts, needs=tuple(needs + shm))


def _admit_gpus(plan: Plan, algorithm: Algorithm, footprint: Footprint, machine: Machine, error: Locate) -> None:
    """Refuse a plan whose buffers on a CUDA device exceed its free memory: the learner's networks and batch where
    ``learner_update`` runs there, the replay (whole observations) where its kernels do. A device this machine does
    not report is not checked (``check_runnable`` refuses a plan placed on it)."""
    from pearl_py.runtime.kernel_devices import REPLAY_KERNELS, kernel_devices

    placed: dict[torch.device, tuple[list[str], list[Need]]] = {}
    for kernel, device in kernel_devices(plan).items():
        if device.index is None or device.index not in machine.gpu_free_bytes:
            continue
        kernels, needs = placed.setdefault(device, ([], []))
        kernels.append(kernel)
        if kernel == LEARNER_UPDATE:
            needs += [footprint.networks, footprint.batch]
        elif kernel == REPLAY_INSERT and isinstance(algorithm, Algorithm):
            cfg = algorithm.config
            needs.append(Need("the replay on the GPU", float(algorithm.replay_bytes(whole_observations=True)),
                              ("hyperparameters", "buffer_size"), detail=f"{cfg.buffer_size:,} transitions, both "
                              "observations stored whole, modelled"))
    for device, (kernels, needs) in placed.items():
        held = [k for k in kernels if k == LEARNER_UPDATE or k in REPLAY_KERNELS]
        if needs:
            _fit(needs, machine.gpu_free_bytes[device.index],
                 f"free on {plan.placements[held[0]].device} ({device}, torch.cuda.mem_get_info) for "
                 f"{', '.join(held)}", error)


class ParallelNeeds:
    """The memory of a parallel run as a function of its actors: the learner's, each process's, the segments'."""

    def __init__(self, algorithm: Algorithm, footprint: Footprint, process_bytes: float | None,
                 servers: list[str]) -> None:
        from pearl_py.protocol.schedule import TrainSchedule
        from pearl_py.runtime.parallel.actor import ring_fields

        self.footprint, self.servers = footprint, servers
        self.each = process_bytes or 0.0
        self.source = ("measured once on this machine" if process_bytes
                       else "not measured here, so not counted")
        self.schedule = TrainSchedule.from_config(algorithm.config, 1)
        self.record = sum(int(np.dtype(dtype).itemsize * math.prod(shape))
                          for dtype, shape in ring_fields(algorithm).values())
        self.served = "a replay server" in servers

    def memory(self, actors: int) -> list[Need]:
        """Private memory: the learner's networks and batch (and replay when it holds it), actors, servers."""
        f, acting = self.footprint, self.footprint.acting_bytes
        needs = [f.networks, f.batch] + ([] if self.served else [f.storage])
        needs.append(Need(f"{actors} actor process{'es' * (actors > 1)}", actors * (self.each + acting),
                          ("placements", ENV_STEP, "replicas"), "measured",
                          detail=f"{_size(self.each)} per process, {self.source}, + {_size(acting)} of acting "
                                 "networks each, modelled"))
        needs += [Need(name, self.each + acting, ("placements", INFERENCE if "inference" in name else REPLAY_INSERT,
                                                  "device"), "measured") for name in self.servers]
        return needs

    def shared(self, actors: int) -> list[Need]:
        """Shared-memory segments: one transition ring per actor, the parameter board, a served replay."""
        from pearl_py.runtime.parallel.executor import ring_capacity

        capacity = ring_capacity(self.schedule, actors)
        shm = [Need("the actors' transition rings", float(actors * capacity * self.record),
                    ("placements", ENV_STEP, "replicas"), shared=True,
                    detail=f"{actors} x {capacity:,} records of {self.record} B, modelled"),
               Need("the parameter board", self.footprint.acting_bytes, ("hyperparameters", "net_arch"), shared=True)]
        if self.served:
            shm.append(dataclasses.replace(self.footprint.storage, shared=True))
        return shm

    def most_actors(self, capacity: float, shared_only: bool) -> int:
        """The most actors whose run fits ``capacity`` (0: not even one); bisected, the needs grow with actors."""
        def fits(actors: int) -> bool:
            wanted = self.shared(actors) + ([] if shared_only else self.memory(actors))
            return sum(n.bytes for n in wanted) <= capacity

        low, high = 0, 1
        while fits(high) and high < 2**20:
            low, high = high, 2 * high
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if fits(middle) else (low, middle)
        return low if fits(max(low, 1)) else 0


class RolloutNeeds(ParallelNeeds):
    """The memory of a synchronous (on-policy) parallel run: the learner's networks, batch and its copy of the
    rollout, each actor process, and in shared memory the rollout the actors write and the parameter board."""

    def __init__(self, footprint: Footprint, process_bytes: float | None) -> None:
        self.footprint, self.servers, self.served = footprint, [], False
        self.each = process_bytes or 0.0
        self.source = ("measured once on this machine" if process_bytes
                       else "not measured here, so not counted")

    def shared(self, actors: int) -> list[Need]:
        return [dataclasses.replace(self.footprint.storage, what="the shared rollout", shared=True),
                Need("the parameter board", self.footprint.acting_bytes, ("hyperparameters", "net_arch"), shared=True)]


def process_memory_bytes() -> float | None:
    """Private memory of a freshly started run child, measured once per machine, Python and torch and cached
    (``$PEARL_CACHE_DIR/process-memory.json``); None where it cannot be measured."""
    from pearl_py.estimate.calibration import cache_dir, machine_fingerprint
    from pearl_py.runtime.parallel.process import measure_child_memory

    key = {"machine": machine_fingerprint(), "python": sys.version.split()[0], "torch": torch.__version__}
    path = cache_dir() / PROBE_FILE
    try:
        cached = json.loads(path.read_text())
        if {k: cached.get(k) for k in key} == key and cached.get("bytes", 0) > 0:
            return float(cached["bytes"])
    except (OSError, ValueError, AttributeError):
        pass
    measured = measure_child_memory()
    if measured is not None:
        try:
            atomic_write_json(path, {**key, "bytes": measured, "source": "measured"})
        except OSError:  # a read-only cache: measure again next time
            pass
    return measured


def _fit(needs: list[Need], capacity: float, where: str, error: Locate) -> None:
    """Raise at the largest need when the needs do not fit in ``capacity`` bytes."""
    if sum(n.bytes for n in needs) > capacity:
        raise _refusal(needs, capacity, where, error)


def _refusal(needs: list[Need], capacity: float, where: str, error: Locate, actors_fit: int | None = None
             ) -> ConfigError:
    """The error naming the largest of ``needs`` (with the figures) that do not fit in ``capacity``."""
    total = sum(n.bytes for n in needs)
    largest = max(needs, key=lambda n: n.bytes)
    rest = f"; the run needs {_size(total)} in all" if total > largest.bytes * 1.001 else ""
    detail = f" ({largest.detail})" if largest.detail else f" ({largest.source})"
    hint = ""
    if actors_fit is not None and largest.key[-1] == "replicas":
        hint = f": at most {actors_fit} actor{'s' * (actors_fit != 1)} fit" if actors_fit else ": not one actor fits"
    return error(largest.key, f"{largest.what} would take {_size(largest.bytes)}{detail}{rest}, more than the "
                              f"{_size(capacity)} {where}{hint}")


def _locator(plan_error: Locate, config_error: Locate) -> Locate:
    """Plan keys located in the plan file, hyperparameters in the config file."""
    return lambda path, message: (config_error if path[0] == "hyperparameters" else plan_error)(path, message)


def _process_slots() -> int | None:
    soft, _ = resource.getrlimit(resource.RLIMIT_NPROC)
    if soft == resource.RLIM_INFINITY:
        return None
    uid = os.getuid()
    running = 0
    for entry in Path("/proc").iterdir():
        try:
            running += entry.name.isdigit() and entry.stat().st_uid == uid
        except OSError:
            continue
    return max(soft - running, 0)


def _gpu_free_bytes() -> dict[int, float]:
    """Free bytes of each CUDA device now (empty without CUDA)."""
    if not torch.cuda.is_available():
        return {}
    return {i: float(torch.cuda.mem_get_info(i)[0]) for i in range(torch.cuda.device_count())}


def _size(nbytes: float) -> str:
    """Bytes in decimal units: ``245 MB``, ``1.2 TB``."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes:.0f} B"
