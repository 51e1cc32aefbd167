"""A plan checked against the algorithm it runs, the platform it names and this machine, before anything starts.

:func:`pearl_py.plan_file.load_plan` checks a plan file's form (keys, types); this module checks what the
plan means: every kernel of the algorithm placed once and no other, every device one of its platform's (of
the kind the plan says), every kernel on a device kind that can host it, every variant one that exists for
the kernel on that device, runs here and implements the algorithm's kernel, and replicas in range (one for a
kernel that does not replicate, at most this machine's cores as the learner's threads). The first mistake,
in file order, is a :class:`~pearl_py.errors.ConfigError` naming ``file:line: key``, what is wrong and what
would be valid; the CLI prints it on one line and exits with code 2. Whether the plan's processes and
memory fit this machine is :mod:`pearl_py.pipeline.admission`'s question, asked next. A plan made on a Ray cluster
(``pearl plan --address``) is checked against the cluster the run joins (``address``): its platform is read from that
cluster again, and the plan is refused, naming its devices, when their Ray nodes are not that cluster's any more.

Example::

    >>> plan = load_checked_plan(Path("out/plan/plan.yaml"), pearl.DQN("CartPole-v1"))
    >>> check_plan(dataclasses.replace(plan, placements={**plan.placements,
    ...                                                  "inference": Placement("cpu", "turbo")}), algo)
    ConfigError: plan: placements.inference.variant: no inference variant 'turbo' on cpu; valid: reference, fused
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pearl_py.algorithms.off_policy.base import Algorithm
from pearl_py.config.yaml_source import KeyPath, YamlDocument
from pearl_py.errors import ConfigError, UserError
from pearl_py.plan import Placement, Plan
from pearl_py.plan_file import load_plan
from pearl_py.platform import Device, Platform
from pearl_py.platform.kinds import device_kind
from pearl_py.platform.local import usable_cores
from pearl_py.protocol.kernel import PRIORITY_UPDATE, Kernel, KernelKind


@dataclass(frozen=True)
class PlanSource:
    """Where a plan came from, so an error can point at ``file:line: key`` (a plan made in Python: ``plan: key``)."""

    doc: YamlDocument | None = None

    @classmethod
    def of(cls, path: str | Path | None) -> PlanSource:
        """The source of the plan file at ``path`` (None: a plan made in Python)."""
        return cls(YamlDocument.load(path) if path is not None else None)

    def error(self, path: KeyPath, message: str) -> ConfigError:
        if self.doc is not None:
            return self.doc.error(path, message)
        return ConfigError(message, key=".".join(("plan",) + tuple(map(str, path))))


def load_checked_plan(path: str | Path, algorithm: Algorithm, address: str | None = None) -> Plan:
    """Read the plan file at ``path`` (:func:`~pearl_py.plan_file.load_plan`) and check it for ``algorithm``
    (:func:`check_plan`; ``address``: the Ray cluster a cluster plan runs on)."""
    plan = load_plan(path)
    check_plan(plan, algorithm, PlanSource.of(path), address=address)
    return plan


def check_plan(plan: Plan, algorithm: Algorithm, source: PlanSource = PlanSource(), runs_here: bool = True,
               address: str | None = None) -> None:
    """Raise a located :class:`ConfigError` at the first thing in ``plan`` that cannot run ``algorithm`` here.

    ``runs_here=False`` (a plan only simulated): variants need not run on this machine, and the learner's
    threads are bounded by its device's parallel units on the plan's platform, not by this machine's cores.
    ``address``: the Ray cluster the run joins (a plan made on a cluster runs only there: :func:`_cluster`).
    """
    _check_made_for(plan, algorithm, source)
    kernels = {k.name: k for k in algorithm.protocol(serialized=plan.serialized).kernels()}
    platform = _platform(plan, source, address)
    for device, kind in plan.devices.items():
        _check_device(platform, device, kind, ("devices", device), source)
    for name, placement in plan.placements.items():
        where = ("placements", name)
        kernel = kernels.get(name)
        if kernel is None:
            raise source.error(where, _unknown_kernel(name, algorithm, kernels))
        kind = plan.devices.get(placement.device) or _check_device(platform, placement.device, None,
                                                                    where + ("device",), source)
        if not kernel.kind.can_run_on(kind):
            raise source.error(where + ("device",), f"{name} cannot run on {placement.device!r}, a {kind} device: "
                                                   f"{kernel.kind.hosts_reason}")
        _check_variant(kernel, placement, kind, where + ("variant",), source, runs_here)
        cores = usable_cores() if runs_here else _device(platform, placement.device).parallel_units
        _check_replicas(kernel, placement, cores, where + ("replicas",), source)
    missing = [name for name in kernels if name not in plan.placements]
    if missing:
        raise source.error(("placements",), f"no placement for {', '.join(missing)}; {algorithm.name} runs "
                                            f"{', '.join(kernels)}, each placed once")


def _check_made_for(plan: Plan, algorithm: Algorithm, source: PlanSource) -> None:
    """A plan that records what it was made for runs that algorithm on that env with those kernels (an older
    plan file, without the record, is checked by its kernels alone)."""
    made = plan.made_for
    if made is None:
        return
    name = Path(source.doc.file).name if source.doc is not None else "the plan"
    mine = f"{algorithm.name} on {algorithm.env_id}"
    if (made.algorithm, made.env) != (algorithm.name, algorithm.env_id):
        raise source.error(("made_for",), f"{name} was made for {made.describe()}, not {mine}; make one for this "
                                          "config with `pearl plan`")
    kernels = tuple(k.name for k in algorithm.protocol().kernels())
    if set(made.kernels) != set(kernels):
        raise source.error(("made_for", "kernels"), f"{name} was made for {made.describe()} running "
                                                    f"{', '.join(made.kernels)}; this config runs "
                                                    f"{', '.join(kernels)}; make one for it with `pearl plan`")


def _platform(plan: Plan, source: PlanSource, address: str | None) -> Platform:
    from pearl_py.runtime.ray_backend.cluster import CLUSTER_PLATFORM

    if plan.platform == CLUSTER_PLATFORM:
        return _cluster(plan, source, address)
    try:
        return Platform.local() if plan.platform == "local" else Platform.load(plan.platform)
    except UserError as exc:
        raise source.error(("platform",), str(exc)) from None


def _cluster(plan: Plan, source: PlanSource, address: str | None) -> Platform:
    """The platform of the Ray cluster at ``address``, read again, when it is the one ``plan`` was made on: each
    device the plan recorded (``prediction.platform``) is there under its name, on the same Ray node."""
    from pearl_py.runtime.ray_backend.cluster import cluster_platform

    if address is None:
        raise source.error(("platform",), "the plan was made on a Ray cluster (`pearl plan --address`): run it there "
                                          "with --backend ray --address HOST:PORT")
    running = cluster_platform(address)
    recorded = plan.prediction.platform.devices if plan.prediction and plan.prediction.platform else ()
    moved = [f"{d['name']} (Ray node {str(d.get('node'))[:8]})" for d in recorded
             if d["name"] not in running.devices or running.devices[d["name"]].node != d.get("node")]
    if moved or not recorded:
        now = ", ".join(f"{d.name} (Ray node {d.node[:8]})" for d in running) or "no node with CPUs"
        raise source.error(("platform",), f"the plan was made on another Ray cluster than the one at {address}: "
                                          f"{', '.join(moved) or 'no recorded devices'} not there (it has {now}); "
                                          f"plan again with `pearl plan --address {address}`")
    return running


def _check_device(platform: Platform, device: str, kind: str | None, where: KeyPath, source: PlanSource) -> str:
    """The kind of ``device`` on ``platform``; an error unless it has it (as a ``kind`` device, when given)."""
    found = _device(platform, device)
    if found is None:
        shown = list(platform.devices)
        more = f" and {len(shown) - 8} more" if len(shown) > 8 else ""
        raise source.error(where, f"platform {platform.name!r} has no device {device!r}; its devices: "
                                  f"{', '.join(shown[:8])}{more}")
    if kind is not None and kind != found.kind:
        raise source.error(where, f"{device!r} is a {found.kind} device on platform {platform.name!r}, not a {kind}")
    return found.kind


def _device(platform: Platform, name: str) -> Device | None:
    """``platform``'s device ``name``; for a pool the optimizer made (``pool:MODELxN``: the platform's N poolable
    devices of model MODEL), its first member; None when there is none."""
    if not name.startswith("pool:"):
        return platform.devices.get(name)
    model, _, count = name[len("pool:"):].rpartition("x")
    members = [d for d in platform if d.model == model and device_kind(d.kind).poolable]
    return members[0] if count.isdigit() and members and len(members) == int(count) else None


def _unknown_kernel(name: str, algorithm: Algorithm, kernels: Mapping[str, Kernel]) -> str:
    known = ", ".join(kernels)
    if name == PRIORITY_UPDATE:
        return (f"{algorithm.name} runs no {name} here: its prioritized_replay is off (turn it on, or remove this "
                f"placement); its kernels: {known}")
    declared = name in {str(k) for k in KernelKind}
    what = "runs no" if declared else "has no kernel"
    return f"{algorithm.name} {what} {name!r}; its kernels: {known}"


def _check_variant(kernel: Kernel, placement: Placement, kind: str, where: KeyPath, source: PlanSource,
                   runs_here: bool) -> None:
    """The variant exists for the kernel on the device kind, can run here (``runs_here``) and implements this
    kernel."""
    from pearl_py.estimate.estimator import family_of
    from pearl_py.kernels import registry_of

    variant_class = device_kind(kind).variant_class
    registry = registry_of(family_of(kernel))
    offered = {v.name: v for v in registry.variants(kernel.kind, variant_class)} if variant_class else {}
    valid = ["reference"] + [n for n in offered if n != "reference"]
    if placement.variant not in valid:
        raise source.error(where, f"no {kernel.name} variant {placement.variant!r} on a {kind} device; valid: "
                                  f"{', '.join(valid)}")
    chosen = offered.get(placement.variant)
    if chosen is None:  # the runtime's own implementation (a kernel kind without registered variants)
        return
    ok, why = chosen.available() if runs_here else (True, "")
    if not ok:
        raise source.error(where, f"{placement.variant!r} cannot run on this machine: {why}")
    unsupported = chosen.supports(kernel)
    if unsupported is not None:
        raise source.error(where, f"{placement.variant!r} cannot run this {kernel.name}: {unsupported}")


def _check_replicas(kernel: Kernel, placement: Placement, cores: int, where: KeyPath, source: PlanSource) -> None:
    """One replica for a kernel that neither replicates nor threads; at most ``cores`` as threads."""
    if kernel.kind.threaded:
        if placement.replicas > cores:
            raise source.error(where, f"{placement.replicas} threads for {kernel.name}, but {placement.device!r} "
                                      f"has {cores} usable cores; valid: 1 to {cores}")
    elif not kernel.kind.replicable and placement.replicas != 1:
        raise source.error(where, f"{kernel.name} does not replicate (one instance serves the run); must be 1, "
                                  f"got {placement.replicas}")
