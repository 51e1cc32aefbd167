"""Estimator: what a kernel costs on a device, in time, energy and resources, and how we know.

How a device is costed is its kind's (:mod:`pearl_py.platform.kinds`, ``costing``):

- ``calibrated`` (CPUs, GPUs): on this machine with a calibration (``pearl profile``, which times
  the CPU and every local GPU) the fitted model, ``source="calibrated"``; elsewhere (a catalogue
  device, a GPU not profiled) the roofline + per-op dispatch from the catalogue, ``"modelled"``;
- ``roofline``: the roofline everywhere, ``"modelled"``;
- ``hls`` (FPGAs): the HLS-style model of :mod:`pearl_py.estimate.fpga_kernels`, ``"modelled"``.

Energy and setup sources, the threaded learner update's expected cost beside a light neighbour
(``NEIGHBOUR_WEIGHT``), implementation variants and transfers (:meth:`Estimator.transfer`, never part of a
kernel's cost): docs/cost-models.md. Which model applies follows the workload type (``ROOFLINE`` and
``FPGA_DESIGNS`` below: a new workload type registers its models there).

Example::

    >>> est = Estimator()                                   # reads this machine's calibration if cached
    >>> graph = pearl.DQN("CartPole-v1").protocol()
    >>> local = Platform.local()
    >>> est.cost(graph.kernel(LEARNER_UPDATE), local.device("cpu")).source
    'calibrated'
    >>> fpga = Platform.load("pearl-cpu-gpu-fpga").device("fpga")
    >>> est.cost(graph.kernel(REPLAY_SAMPLE), fpga).resources["dsp"]
    >>> est.variants(graph.kernel(LEARNER_UPDATE), local.device("cpu"))
    ['reference', 'compiled']
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from pearl_py.estimate import roofline
from pearl_py.estimate.calibration import (
    DEFERRED_KEY,
    IN_LOOP_KEY,
    LOOP_KEY,
    NORMALIZE_KEY,
    PROCESS_START_KEY,
    ROUND_TRIP_KEY,
    THREADED_VARIANTS,
    Calibration,
    calibrated_gpu,
    measured_dynamic_w,
    model_key,
    network_family,
)
from pearl_py.estimate.cost import Cost, Infeasible
from pearl_py.estimate.features import model_group, workload_features
from pearl_py.estimate.fpga_kernels import (
    FpgaTemplates,
    mlp_design,
    sum_tree_design,
    sync_design,
)
from pearl_py.estimate.fpga_on_policy import advantage_design, minibatch_learner_design
from pearl_py.estimate.power import dynamic_energy_j
from pearl_py.estimate.roofline import RooflineParams
from pearl_py.plan import LayerCost
from pearl_py.platform import Device, Platform
from pearl_py.platform.kinds import device_kind
from pearl_py.protocol import ENV_STEP, LEARNER_UPDATE, PARAM_SYNC, Kernel, KernelKind
from pearl_py.protocol.layers import Conv2dLayer
from pearl_py.protocol.workload import (
    FLOAT_BYTES,
    AdvantageWorkload,
    EnvWorkload,
    NetworkWorkload,
    ReplayWorkload,
    RolloutWorkload,
    SyncWorkload,
)

RooflineModel = Callable[[Kernel, Any, RooflineParams, str, str], tuple[float, dict[str, float]]]
"""``model(kernel, spec, params, variant, machine) -> (seconds, terms)``; ``machine``: the device kind's
roofline machine model (``core``: one CPU core; ``accelerator``: a GPU-like device)."""


def _network(kernel: Kernel, spec: Any, params: RooflineParams, variant: str, machine: str):
    return roofline.network_latency(workload_features(kernel.workload), spec, params, variant, kernel.kind, machine)


def _replay(kernel: Kernel, spec: Any, params: RooflineParams, variant: str, machine: str):
    return roofline.replay_latency(kernel.kind, workload_features(kernel.workload), spec, params, variant, machine)


def _env(kernel: Kernel, spec: Any, params: RooflineParams, variant: str, machine: str):
    return roofline.env_latency(kernel.workload.env_id, kernel.workload.n_envs, spec, params)


def _copy(kernel: Kernel, spec: Any, params: RooflineParams, variant: str, machine: str):
    return roofline.copy_latency(workload_features(kernel.workload)["bytes"], spec, machine)


def _scan(kernel: Kernel, spec: Any, params: RooflineParams, variant: str, machine: str):
    return roofline.scan_latency(workload_features(kernel.workload), spec, params, machine)


NEIGHBOUR_WEIGHT = 0.5
"""The share of a run a machine that is not dedicated is taken to spend beside a light neighbour (an assumption,
not a measurement: docs/cost-models.md has why and the measurements behind it)."""


ROOFLINE: dict[type, RooflineModel] = {NetworkWorkload: _network, ReplayWorkload: _replay, EnvWorkload: _env,
                                        SyncWorkload: _copy, RolloutWorkload: _replay, AdvantageWorkload: _scan}
"""The roofline model of each workload type (docs/cost-models.md, Roofline; a rollout insert is a replay insert
without a tree)."""


def _network_design(kernel: Kernel, board: Any, templates: FpgaTemplates):
    """The MLP design; an on-policy learner (its rollout resident on the device) adds the rollout and the gather."""
    if kernel.workload.resident_bytes:
        return minibatch_learner_design(kernel.workload, board, templates)
    return mlp_design(kernel.workload, kernel.kind, board, templates)


FPGA_DESIGNS: dict[type, Callable[..., Any]] = {
    NetworkWorkload: _network_design,
    ReplayWorkload: lambda kernel, board, t: sum_tree_design(kernel.workload, kernel.kind, board, t),
    SyncWorkload: lambda kernel, board, t: sync_design(kernel.workload, board, t),
    AdvantageWorkload: lambda kernel, board, t: advantage_design(kernel.workload, board),
}
"""The HLS-style design of each workload type (docs/cost-models.md, FPGA)."""


def family_of(kernel: Kernel) -> str:
    """The algorithm family whose implementation of ``kernel`` runs (a network workload says; else off-policy's,
    whose registry holds the kinds both families share)."""
    return getattr(kernel.workload, "family", "off_policy")


def _loop_family(kernel: Kernel) -> str | None:
    """The algorithm family whose training loop runs ``kernel``, where its workload says (an env step's
    ``loop_family``, a network kernel's ``family``); None for the shared kinds (replay, rollout, sync)."""
    return getattr(kernel.workload, "loop_family", None) or getattr(kernel.workload, "family", None)


def registered_variants(kind: KernelKind, device_kind_name: str, family: str) -> list[tuple[str, Any]]:
    """``[(name, Variant)]`` that ``pearl_py.kernels`` registers for ``kind`` on the device kind's class, for
    algorithm family ``family``."""
    variant_class = device_kind(device_kind_name).variant_class
    if variant_class is None:
        return []
    from pearl_py.kernels import registry_of

    return [(v.name, v) for v in registry_of(family).variants(kind, variant_class)]


def _registered_anywhere(name: str) -> bool:
    from pearl_py.kernels import FAMILY_REGISTRIES

    return any(v.name == name for registry in FAMILY_REGISTRIES.values() for kind in KernelKind
               for v in registry.variants(kind))


class Estimator:
    """Costs per (kernel, variant, device). ``calibration=None`` reads the machine's cache.

    It implements :class:`pearl_py.optimize.builder.CostModel`, the optimizer's whole contract.
    """

    def __init__(self, calibration: Calibration | None = None, *, use_cache: bool = True,
                 templates: FpgaTemplates | None = None, params: RooflineParams | None = None,
                 dedicated: bool = False) -> None:
        self.calibration = calibration if calibration is not None else (
            Calibration.load_default() if use_cache else None)
        self.dedicated = dedicated
        """The machine runs nothing but the run: threaded costs are their calibrated figure alone."""
        self.templates = templates or FpgaTemplates.load()
        self.params = params or RooflineParams.load()

    def variants(self, kernel: Kernel, device: Device) -> list[str]:
        """Implementation variants offered for ``kernel`` on ``device``: "reference" first, then every
        variant ``pearl_py.kernels`` registers for the kind on the device's class that can run there
        and supports the kernel as its algorithm declared it (:meth:`Variant.supports`).

        On this machine's devices (``device.local``) the registry's ``available()`` decides (no
        ``cuda_graph`` without CUDA, no ``compiled`` where ``torch.compile`` cannot run); a
        catalogue device is taken to have what its kind implies (a GPU has CUDA). On a
        calibrated local CPU, a variant the calibration lacks while it has the reference
        (a cache older than the variant) is not offered: re-run ``pearl profile``.
        """
        status = self._variant_status(kernel, device)
        return ["reference"] + [name for name, reason in status.items() if name != "reference" and reason is None]

    def unavailable_variants(self, kernel: Kernel, device: Device) -> dict[str, str]:
        """Registered variants of ``kernel`` not offered on ``device``, with the reason."""
        return {name: reason for name, reason in self._variant_status(kernel, device).items()
                if reason is not None and name != "reference"}

    def _variant_status(self, kernel: Kernel, device: Device) -> dict[str, str | None]:
        status: dict[str, str | None] = {}
        for name, variant in registered_variants(kernel.kind, device.kind, family_of(kernel)):
            reason = variant.supports(kernel)
            if reason is None and device.local:
                ok, why = variant.available()
                reason = None if ok else why
            if reason is None and name != "reference" and self._calibration_lacks(kernel, device, name):
                reason = self._uncalibrated_reason(kernel, name)
            status[name] = reason
        return status

    def _uncalibrated_reason(self, kernel: Kernel, variant: str) -> str:
        """Why this machine's calibration has no model of ``variant``: a run's first calibration deferred it (the
        reason it recorded), or the calibration predates it."""
        key = model_key(kernel.kind, variant, family=network_family(kernel.kind, family_of(kernel)))
        why = self.calibration.meta.get(DEFERRED_KEY, {}).get(key)
        if why is not None:
            return (f"not calibrated on this machine yet: the first run's calibration deferred it ({why}); a run it "
                    "would pay back in calibrates it first, as `pearl profile` does")
        return "not calibrated on this machine (the cached calibration predates it: run `pearl profile`)"

    def _calibrated_here(self, device: Device) -> bool:
        """Whether ``device`` is costed from this machine's calibration: a local device of a calibrated kind, and
        for a GPU one that ``pearl profile`` calibrated (:func:`calibrated_gpu`)."""
        kind = device_kind(device.kind)
        if not (device.local and self.calibration is not None and kind.costing == "calibrated"):
            return False
        return not kind.device_runtime.calibrated_per_model or calibrated_gpu(self.calibration, device) is not None

    def _calibration_lacks(self, kernel: Kernel, device: Device, variant: str) -> bool:
        if not self._calibrated_here(device):
            return False
        prefix, family = calibrated_gpu(self.calibration, device), family_of(kernel)
        group = model_group(kernel.workload)
        return self.calibration.model(kernel.kind, "reference", group, device=prefix, family=family) is not None \
            and self.calibration.model(kernel.kind, variant, group, device=prefix, family=family) is None

    def thread_counts(self, kernel: Kernel, device: Device, variant: str = "reference") -> list[int]:
        """Thread counts ``variant`` of ``kernel`` is costed at on ``device``: 1, and on this machine's
        calibrated CPU every count up to its cores that has a model (the learner update's, ``pearl profile``)."""
        if not (kernel.kind.threaded and self._calibrated_here(device)
                and device_kind(device.kind).runtime == "cpu"):
            return [1]
        group = model_group(kernel.workload)
        return [1] + [n for n in range(2, device.parallel_units + 1)
                      if self.calibration.model(kernel.kind, variant, group, threads=n, family=family_of(kernel)) is not None]

    def thread_note(self, kernel: Kernel, device: Device) -> str | None:
        """Why ``kernel`` is offered one thread only on this machine's multi-core CPU, when another
        ``pearl profile`` would offer more: its threaded models were refused for load (``meta["load"]["refused"]``,
        the reason recorded there) or deferred by a run's first calibration (``meta["deferred"]``: they could not
        win that run), or the calibration predates threaded calibration (no ``meta["threaded"]``)."""
        kind = kernel.kind
        if not (self._calibrated_here(device) and device.parallel_units > 1 and kind in THREADED_VARIANTS
                and device_kind(device.kind).runtime == "cpu"):
            return None
        if family_of(kernel) != "off_policy" or \
                any(len(self.thread_counts(kernel, device, v)) > 1 for v in THREADED_VARIANTS[kind]):
            return None
        meta = self.calibration.meta
        for held, what, then in (((meta.get("load") or {}).get("refused", {}), "`pearl profile` refused its model",
                                  "for load ({}); profile again on an idle machine for threaded plans"),
                                 (meta.get(DEFERRED_KEY, {}), "the first run's calibration deferred its model",
                                  "({}); a run it could win in calibrates it first")):
            reasons = sorted((key, why) for key, why in held.items() if key.startswith(f"{kind}/") and "threads" in key)
            if reasons:
                return (f"{kernel.name}: one thread only on {device.name}: {what} at 2 or more threads "
                        + then.format(": ".join(reasons[0])))
        if "threaded" in meta:
            return (f"{kernel.name}: one thread only on {device.name}: the calibration holds no model at 2 or more "
                    "threads for it")
        return (f"{kernel.name}: one thread only on {device.name}: the cached calibration has no model at 2 or more "
                "threads (it predates threaded calibration: run `pearl profile`)")

    def process_start(self) -> tuple[float, str]:
        """``(seconds, source)`` until a child process of the runtime runs its loop on this host: timed by
        ``pearl profile`` (``calibrated``, :mod:`pearl_py.profile.process_start`), else the assumed figure of
        ``estimators/roofline.yaml`` (``modelled``)."""
        return self._timed_or_assumed(PROCESS_START_KEY, "process_start_s")

    def _timed_or_assumed(self, key: str, assumed: str, scale: float = 1.0) -> tuple[float, str]:
        """``(seconds, source)``: ``pearl profile``'s figure ``calibration.meta[key]`` (``calibrated``), else
        ``estimators/roofline.yaml``'s ``cpu.<assumed>`` times ``scale`` (``modelled``)."""
        timed = self.calibration.meta.get(key) if self.calibration is not None else None
        if timed is not None:
            return float(timed), "calibrated"
        return float(self.params.cpu[assumed]) * scale, "modelled"

    def cost(self, kernel: Kernel, device: Device, variant: str = "reference", threads: int = 1) -> Cost:
        """Cost of one call of ``kernel`` on ``device``; raises :class:`Infeasible` if it cannot run there.

        A variant of another kind or device class (``fused`` inference on a GPU) is
        :class:`Infeasible` (resource ``variant``); a name no estimator knows is a ``KeyError``.
        ``threads`` > 1: the call at that many threads, known only where calibrated
        (:meth:`thread_counts`); elsewhere :class:`Infeasible` (resource ``threads``).
        An ``env_step`` or ``learner_update`` call carries the training loop's own work with it (``Cost.loop_s``,
        :meth:`loop_work`): every loop that steps envs or updates (the serial executor's, the actors', the
        learner's) does that work; on this machine's calibrated CPU every call also takes its kind's excess in a
        loop over the back-to-back timing (:meth:`in_loop_excess`, ``Cost.detail["in_loop"]``).
        """
        cost = self.kernel_cost(kernel, device, variant, threads)
        loop_s, loop_source = self.loop_work(kernel)
        excess = self.in_loop_excess(kernel, device)
        if not (loop_s or excess):
            return cost
        latency = cost.latency_s + excess + loop_s
        scale = latency / cost.latency_s if cost.latency_s > 0 else 1.0
        return dataclasses.replace(cost, latency_s=latency, energy_j=cost.energy_j * scale,
                                   detail={**cost.detail, "in_loop": excess} if excess else cost.detail,
                                   loop_s=loop_s, loop_source=loop_source, normalize_s=self.normalize_work(kernel)[0])

    def _handshake(self, kernel: Kernel) -> tuple[float, str]:
        """``(seconds, source)`` of the turn a synchronous publication hands to the actors and back (a wake-up and
        its answer between processes, :mod:`process_start`); 0 for a publication without one."""
        if not getattr(kernel.workload, "handshake", False):
            return 0.0, "modelled"
        return self._timed_or_assumed(ROUND_TRIP_KEY, "round_trip_us", 1e-6)

    def in_loop_excess(self, kernel: Kernel, device: Device) -> float:
        """Seconds one call of ``kernel`` takes more inside a training loop than timed back to back, on this
        machine's calibrated CPU (``pearl profile``'s loop runs, :mod:`loop_overhead`; 0 elsewhere or untimed):
        the excess of the family whose loop runs the kernel, else of any family whose loop ran its kind."""
        if self.calibration is None or device_kind(device.kind).runtime != "cpu" or not self._calibrated_here(device):
            return 0.0
        timed = self.calibration.meta.get(IN_LOOP_KEY) or {}
        family = _loop_family(kernel)
        ordered = ([family] if family in timed else []) + [f for f in timed if f != family]
        return next((float(timed[f][kernel.kind]) for f in ordered if kernel.kind in timed[f]), 0.0)

    def loop_work(self, kernel: Kernel) -> tuple[float, str]:
        """``(seconds, source)`` of the training loop's own work that comes with one call of ``kernel``: per vector
        step with an ``env_step``, per update (and its share of the round's) with a ``learner_update``, the
        handshake with the actors with a synchronous ``param_sync``, none with the others. Timed by ``pearl
        profile`` for the algorithm family whose loop runs it (``calibrated``, :mod:`loop_overhead`), else the
        assumed figures of ``estimators/roofline.yaml`` (``modelled``)."""
        if kernel.kind == PARAM_SYNC:
            return self._handshake(kernel)
        if kernel.kind not in (ENV_STEP, LEARNER_UPDATE):
            return 0.0, "modelled"
        family = _loop_family(kernel) or family_of(kernel)
        timed = (self.calibration.meta.get(LOOP_KEY) or {}).get(family) if self.calibration is not None else None
        source = "calibrated" if timed is not None else "modelled"
        if timed is None:
            timed = {part: float(self.params.cpu[f"loop_{part}_us"]) * 1e-6
                     for part in ("per_step", "per_update", "per_round")}
        normalize_s, normalize_source = self.normalize_work(kernel)
        source = source if normalize_source in (None, source) else "modelled"  # calibrated only if every part is
        if kernel.kind == ENV_STEP:
            return float(timed["per_step"]) + normalize_s, source
        rounds = 1.0 / max(getattr(kernel.workload, "updates_per_round", 1), 1)  # a round's log row, per update
        return float(timed["per_update"]) + float(timed.get("per_round", 0.0)) * rounds + normalize_s, source

    def normalize_work(self, kernel: Kernel) -> tuple[float, str | None]:
        """``(seconds, source)`` of the ``normalize`` transform's work that comes with one call of ``kernel``, part of
        the loop's (:meth:`loop_work`): the statistics' update and the step's normalization with an ``env_step``,
        an off-policy sample's normalization with a ``learner_update``; ``(0, None)`` without normalize. Each is
        ``per_call + per_value * values`` (the observation values touched), timed by ``pearl profile``
        (``calibrated``, :mod:`pearl_py.profile.normalize_cost`), else ``estimators/roofline.yaml``'s
        ``normalize_*`` figures (``modelled``)."""
        workload = kernel.workload
        per_env = getattr(workload, "normalized_per_env", None)
        if kernel.kind == ENV_STEP and per_env is not None:
            part, values = "step", workload.n_envs * per_env
        elif kernel.kind == LEARNER_UPDATE and getattr(workload, "normalized", None) is not None:
            part, values = "sample", workload.normalized
        else:
            return 0.0, None
        timed = (self.calibration.meta.get(NORMALIZE_KEY) or {}).get(part) if self.calibration is not None else None
        if timed is not None:
            return float(timed["per_call"]) + float(timed["per_value"]) * values, "calibrated"
        cpu = self.params.cpu
        return (float(cpu[f"normalize_{part}_us"]) * 1e-6 + float(cpu[f"normalize_{part}_value_ns"]) * 1e-9 * values,
                "modelled")

    def kernel_cost(self, kernel: Kernel, device: Device, variant: str = "reference", threads: int = 1) -> Cost:
        """One call of the kernel alone, as calibrated or modelled: :meth:`cost` without the loop's work or the
        in-loop excess."""
        if threads != 1:
            if threads not in self.thread_counts(kernel, device, variant):
                raise Infeasible(kernel.name, device.name, "threads", reason=f"{variant!r} is not calibrated at "
                                 f"{threads} threads here (only {self.thread_counts(kernel, device, variant)})")
            return self._calibrated(kernel, device, variant, threads)
        if not kernel.kind.can_run_on(device.kind):
            raise Infeasible(kernel.name, device.name, "device kind", reason=kernel.kind.hosts_reason)
        costing = device_kind(device.kind).costing
        if costing == "hls":
            return self._fpga(kernel, device)
        if variant != "reference" and variant not in dict(registered_variants(kernel.kind, device.kind,
                                                                                family_of(kernel))):
            if variant not in self.params.variants and not _registered_anywhere(variant):
                raise KeyError(f"unknown kernel variant {variant!r}; estimators/roofline.yaml knows "
                               f"{sorted(self.params.variants)}")
            raise Infeasible(kernel.name, device.name, "variant",
                             reason=f"pearl_py.kernels has no {kernel.kind} variant {variant!r} "
                                    f"for {device.kind} devices")
        if self._calibrated_here(device):
            calibrated = self._calibrated(kernel, device, variant)
            if calibrated is not None:
                return calibrated
        try:
            self.params.variant(variant, kernel.kind)
        except KeyError as exc:  # a registered variant nobody has modelled yet: not offered where uncalibrated
            raise Infeasible(kernel.name, device.name, "variant", reason=str(exc.args[0])) from None
        return self._roofline(kernel, device, variant)

    def transfer(self, platform: Platform, src: str, dst: str, nbytes: float) -> Cost:
        """Moving ``nbytes`` from device ``src`` to ``dst`` over the platform's links (modelled)."""
        return Cost(platform.transfer_s(src, dst, nbytes), 0.0, source="modelled")

    def neighbour_slowdown(self, kernel: Kernel, variant: str, threads: int = 1) -> float | None:
        """How much slower a call of ``kernel`` as ``variant`` at ``threads`` threads ran beside a light neighbour than
        alone when this CPU was calibrated (None: not measured: a kind that runs one thread, an older calibration)."""
        if self.calibration is None or not kernel.kind.threaded:
            return None
        spread = self.calibration.spread(kernel.kind, variant, threads, family=family_of(kernel))
        return spread.light_neighbour if spread is not None else None

    def expected_factor(self, kernel: Kernel, variant: str, threads: int = 1) -> float:
        """What a calibrated call's figure alone is multiplied by to cost it on a machine that is not dedicated:
        ``1 + NEIGHBOUR_WEIGHT * (slowdown beside a light neighbour - 1)``; 1 on a dedicated machine or unmeasured."""
        slowdown = self.neighbour_slowdown(kernel, variant, threads)
        if self.dedicated or slowdown is None:
            return 1.0
        return 1.0 + NEIGHBOUR_WEIGHT * (slowdown - 1.0)

    def _calibrated(self, kernel: Kernel, device: Device, variant: str, threads: int = 1) -> Cost | None:
        if self.calibration is None:
            return None
        prefix = calibrated_gpu(self.calibration, device)  # None: the CPU's models (unprefixed keys)
        model = self.calibration.model(kernel.kind, variant, model_group(kernel.workload), threads, device=prefix,
                                       family=family_of(kernel))
        if model is None:
            return None
        features = workload_features(kernel.workload)
        latency = max(model.predict(features), 0.0) * (self.expected_factor(kernel, variant, threads) if prefix is None
                                                       else 1.0)
        setup = self.calibration.meta.get("setup", {}).get(model_key(kernel.kind, variant, device=prefix,
                                                                      family=family_of(kernel))) or {}
        setup_s, setup_source = setup.get("seconds"), "calibrated"
        if setup_s is None:  # no cold setup measured here (a warm cache served every compile): the modelled one
            setup_s = self.params.setup_s(variant, kernel.kind) if variant != "reference" else 0.0
            setup_source = "modelled"
        # a call holds its threads' cores, times the cores each holds (an env backend's worker threads)
        variant_of = dict(registered_variants(kernel.kind, device.kind, family_of(kernel))).get(variant)
        held = threads * (variant_of.cores if variant_of is not None else 1)
        share = held / device.parallel_units if prefix is None else 1.0
        watts = measured_dynamic_w(self.calibration, kernel.kind, variant, prefix or "cpu", threads)
        if watts is None:
            energy, energy_source = dynamic_energy_j(device.spec, latency, share), "modelled"
        else:
            energy, energy_source = latency * watts, "measured"
        resources = {"cores": held} if prefix is None else {}
        return Cost(latency, energy, resources, "calibrated", kernel.kind, {"model": model.cv_mape}, setup_s,
                    energy_source, setup_source, layers=self._roofline_layers(kernel, device))

    def _roofline(self, kernel: Kernel, device: Device, variant: str) -> Cost:
        model = ROOFLINE.get(type(kernel.workload))
        if model is None:
            raise Infeasible(kernel.name, device.name, "cost model",
                             reason=f"no roofline model for {type(kernel.workload).__name__} workloads")
        kind = device_kind(device.kind)
        latency, detail = model(kernel, device.spec, self.params, variant, kind.roofline)
        if kind.roofline == "core":
            share, resources = 1 / device.parallel_units, {"cores": 1}
        else:  # an accelerator draws dynamic power for the bound (compute or memory) part, not while launching
            share, resources = (latency - detail.get("dispatch", 0.0)) / latency if latency else 0.0, {}
        return Cost(latency, dynamic_energy_j(device.spec, latency, share), resources, "modelled", kernel.kind,
                    detail, self.params.setup_s(variant, kernel.kind), layers=self._roofline_layers(kernel, device))

    def _roofline_layers(self, kernel: Kernel, device: Device) -> tuple[LayerCost, ...]:
        """Each layer of a network kernel with convolutions on its own roofline (modelled; empty otherwise)."""
        workload = kernel.workload
        if not (isinstance(workload, NetworkWorkload) and workload.has_conv):
            return ()
        machine = device_kind(device.kind).roofline
        out = []
        for layer in workload.layers:
            flops = (layer.forward_flops + layer.backward_flops) / workload.period
            nbytes = FLOAT_BYTES * (layer.activation_elements + layer.weights) / workload.period
            seconds = roofline.layer_latency(flops, nbytes, layer.dispatches / workload.period,
                                             isinstance(layer, Conv2dLayer), device.spec, self.params, machine)
            out.append(LayerCost(layer.label, flops, seconds))
        return tuple(out)

    def _fpga(self, kernel: Kernel, device: Device) -> Cost:
        board = device.spec
        design_of = FPGA_DESIGNS.get(type(kernel.workload))
        if design_of is None:
            raise Infeasible(kernel.name, device.name, "cost model",
                             reason=f"no FPGA design for {type(kernel.workload).__name__} workloads")
        design = design_of(kernel, board, self.templates)
        capacity = board.capacity()
        share = max((used / capacity[name] for name, used in design.resources.items()), default=0.0)
        layers = tuple(LayerCost(layer.label, (layer.forward_flops + layer.backward_flops) / kernel.workload.period,
                                 cycles / board.clock_hz, resources) for layer, cycles, resources in design.layers)
        return Cost(design.seconds, dynamic_energy_j(board, design.seconds, share), design.resources,
                    "modelled", design.instance, dict(design.phases), layers=layers)
