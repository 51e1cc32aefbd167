"""Estimator: what a kernel costs on a device, in time, energy and resources, and how we know.

- local CPU with a calibration (``pearl profile``): the fitted model, ``source="calibrated"``;
- other CPUs and GPUs: roofline + per-op dispatch from the catalogue, ``"modelled"``;
- FPGAs: the HLS-style model of :mod:`pearl_py.estimate.fpga_kernels`, ``"modelled"``.

The learner update on the local calibrated CPU is also costed at more than one thread
(:meth:`Estimator.thread_counts`, ``cost(..., threads=n)``: its ``@<n>threads`` models);
everywhere else a call is one thread's.

Implementation variants (``pearl_py.kernels``: ``compiled`` learner update, ``fused``
inference on CPUs, ``cuda_graph`` on GPUs) are costed like the reference: the local CPU
from their own calibrated model, other devices from ``estimators/roofline.yaml``.
:meth:`Estimator.variants` says which are offered on a device; ``Cost.setup_s`` carries
a variant's one-off setup (the compile).

A kernel's cost excludes moving its inputs between devices: :meth:`Estimator.transfer`
charges the links a plan's crossing edges use.

Example::

    >>> est = Estimator()                                   # reads this machine's calibration if cached
    >>> graph = pearl.DQN("CartPole-v1").protocol()
    >>> local = Platform.local()
    >>> est.cost(graph.kernel("learner_update"), local.device("cpu")).source
    'calibrated'
    >>> fpga = Platform.load("pearl-cpu-gpu-fpga").device("fpga")
    >>> est.cost(graph.kernel("replay_sample"), fpga).resources["dsp"]
    >>> est.variants(graph.kernel("learner_update"), local.device("cpu"))
    ['reference', 'compiled']
"""
from __future__ import annotations

from pearl_py.estimate import roofline
from pearl_py.estimate.calibration import THREADED_VARIANTS, Calibration
from pearl_py.estimate.cost import Cost, Infeasible
from pearl_py.estimate.features import workload_features
from pearl_py.estimate.fpga_kernels import FpgaTemplates, mlp_design, sum_tree_design, sync_design
from pearl_py.estimate.power import dynamic_energy_j
from pearl_py.estimate.roofline import RooflineParams
from pearl_py.platform import Device, Platform
from pearl_py.protocol import REPLAY_KINDS, Kernel, KernelKind

_NETWORK_KINDS = {KernelKind.INFERENCE, KernelKind.LEARNER_UPDATE}
_DEVICE_CLASS = {"cpu": "cpu", "gpu": "gpu"}
"""Device kinds that have kernel variants, and the ``pearl_py.kernels`` device class of each."""


def registered_variants(kind: KernelKind, device_kind: str) -> list[tuple[str, object]]:
    """``[(name, Variant)]`` that ``pearl_py.kernels`` registers for ``kind`` on ``device_kind``."""
    if device_kind not in _DEVICE_CLASS:
        return []
    from pearl_py.kernels import REGISTRY

    return [(v.name, v) for v in REGISTRY.variants(kind, _DEVICE_CLASS[device_kind])]


def _registered_anywhere(name: str) -> bool:
    from pearl_py.kernels import REGISTRY

    return any(v.name == name for kind in KernelKind for v in REGISTRY.variants(kind))


class Estimator:
    """Costs per (kernel, variant, device). ``calibration=None`` reads the machine's cache."""

    def __init__(self, calibration: Calibration | None = None, *, use_cache: bool = True,
                 templates: FpgaTemplates | None = None, params: RooflineParams | None = None) -> None:
        self.calibration = calibration if calibration is not None else (
            Calibration.load_default() if use_cache else None)
        self.templates = templates or FpgaTemplates.load()
        self.params = params or RooflineParams.load()

    def variants(self, kernel: Kernel, device: Device) -> list[str]:
        """Implementation variants offered for ``kernel`` on ``device``: "reference" first, then every
        variant ``pearl_py.kernels`` registers for the kind on the device's class that can run there.

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
        for name, variant in registered_variants(kernel.kind, device.kind):
            reason = None
            if device.local:
                ok, why = variant.available()
                reason = None if ok else why
            if reason is None and name != "reference" and self._calibration_lacks(kernel, device, name):
                reason = "not calibrated on this machine (the cached calibration predates it: run `pearl profile`)"
            status[name] = reason
        return status

    def _calibration_lacks(self, kernel: Kernel, device: Device, variant: str) -> bool:
        if not (device.kind == "cpu" and device.local and self.calibration is not None):
            return False
        kind = kernel.kind.value
        return self.calibration.model(kind, "reference") is not None and self.calibration.model(kind, variant) is None

    def thread_counts(self, kernel: Kernel, device: Device, variant: str = "reference") -> list[int]:
        """Thread counts ``variant`` of ``kernel`` is costed at on ``device``: 1, and on this machine's
        calibrated CPU every count up to its cores that has a model (the learner update's, ``pearl profile``)."""
        if not (device.kind == "cpu" and device.local and self.calibration is not None):
            return [1]
        kind = kernel.kind.value
        return [1] + [n for n in range(2, device.parallel_units + 1)
                      if self.calibration.model(kind, variant, threads=n) is not None]

    def thread_note(self, kernel: Kernel, device: Device) -> str | None:
        """Why ``kernel`` is offered one thread only on this machine's multi-core CPU, when a newer
        ``pearl profile`` would offer more (a calibration cached before threaded calibration existed)."""
        kind = kernel.kind.value
        if not (device.kind == "cpu" and device.local and self.calibration is not None
                and device.parallel_units > 1 and kind in THREADED_VARIANTS):
            return None
        if any(len(self.thread_counts(kernel, device, v)) > 1 for v in THREADED_VARIANTS[kind]):
            return None
        return (f"{kernel.name}: one thread only on {device.name}: the cached calibration has no model at 2 or more "
                "threads (it predates threaded calibration: run `pearl profile`)")

    def cost(self, kernel: Kernel, device: Device, variant: str = "reference", threads: int = 1) -> Cost:
        """Cost of one call of ``kernel`` on ``device``; raises :class:`Infeasible` if it cannot run there.

        A variant of another kind or device class (``fused`` inference on a GPU) is
        :class:`Infeasible` (resource ``variant``); a name no estimator knows is a ``KeyError``.
        ``threads`` > 1: the call at that many threads, known only where calibrated
        (:meth:`thread_counts`); elsewhere :class:`Infeasible` (resource ``threads``).
        """
        if threads != 1:
            if threads not in self.thread_counts(kernel, device, variant):
                raise Infeasible(kernel.name, device.name, "threads", reason=f"{variant!r} is not calibrated at "
                                 f"{threads} threads here (only {self.thread_counts(kernel, device, variant)})")
            return self._calibrated(kernel, device, variant, threads)
        if device.kind == "fpga":
            return self._fpga(kernel, device)
        if kernel.kind == KernelKind.ENV_STEP and device.kind != "cpu":
            raise Infeasible(kernel.name, device.name, "device kind", reason="gymnasium environments run on CPUs")
        if variant != "reference" and variant not in dict(registered_variants(kernel.kind, device.kind)):
            if variant not in self.params.variants and not _registered_anywhere(variant):
                raise KeyError(f"unknown kernel variant {variant!r}; estimators/roofline.yaml knows "
                               f"{sorted(self.params.variants)}")
            raise Infeasible(kernel.name, device.name, "variant",
                             reason=f"pearl_py.kernels has no {kernel.kind.value} variant {variant!r} "
                                    f"for {device.kind} devices")
        if device.kind == "cpu" and device.local:
            calibrated = self._calibrated(kernel, device, variant)
            if calibrated is not None:
                return calibrated
        try:
            self.params.variant(variant, kernel.kind.value)
        except KeyError as exc:  # a registered variant nobody has modelled yet: not offered where uncalibrated
            raise Infeasible(kernel.name, device.name, "variant", reason=str(exc.args[0])) from None
        return self._roofline(kernel, device, variant)

    def transfer(self, platform: Platform, src: str, dst: str, nbytes: float) -> Cost:
        """Moving ``nbytes`` from device ``src`` to ``dst`` over the platform's links (modelled)."""
        return Cost(platform.transfer_s(src, dst, nbytes), 0.0, source="modelled")

    def _calibrated(self, kernel: Kernel, device: Device, variant: str, threads: int = 1) -> Cost | None:
        if self.calibration is None:
            return None
        env_id = getattr(kernel.workload, "env_id", None) if kernel.kind == KernelKind.ENV_STEP else None
        model = self.calibration.model(kernel.kind.value, variant, env_id, threads)
        if model is None:
            return None
        features = workload_features(kernel.workload)
        latency = max(model.predict(features), 0.0)
        setup = self.calibration.meta.get("setup", {}).get(f"{kernel.kind.value}/{variant}") or {}
        setup_s = setup.get("seconds")
        if setup_s is None:  # no cold setup measured here (a warm cache served every compile): the modelled one
            setup_s = self.params.setup_s(variant, kernel.kind.value) if variant != "reference" else 0.0
        return Cost(latency, dynamic_energy_j(device.spec, latency, threads / device.spec.cores),
                    {"cores": threads}, "calibrated", kernel.kind.value, {"model": model.cv_mape}, setup_s)

    def _roofline(self, kernel: Kernel, device: Device, variant: str) -> Cost:
        spec, features, p = device.spec, workload_features(kernel.workload), self.params
        if kernel.kind in _NETWORK_KINDS:
            latency, detail = roofline.network_latency(features, spec, p, variant, kernel.kind.value)
        elif kernel.kind in REPLAY_KINDS:
            latency, detail = roofline.replay_latency(kernel.kind.value, features, spec, p, variant)
        elif kernel.kind == KernelKind.ENV_STEP:
            latency, detail = roofline.env_latency(kernel.workload.env_id, kernel.workload.n_envs, spec, p)
        else:
            latency, detail = roofline.copy_latency(features["bytes"], spec)
        if device.kind == "cpu":
            share, resources = 1 / spec.cores, {"cores": 1}
        else:  # a GPU draws dynamic power for the bound (compute or memory) part, not while launching
            share, resources = (latency - detail.get("dispatch", 0.0)) / latency if latency else 0.0, {}
        return Cost(latency, dynamic_energy_j(spec, latency, share), resources, "modelled", kernel.kind.value, detail,
                    p.setup_s(variant, kernel.kind.value))

    def _fpga(self, kernel: Kernel, device: Device) -> Cost:
        board, t = device.spec, self.templates
        if kernel.kind in _NETWORK_KINDS:
            design = mlp_design(kernel.workload, kernel.kind.value, board, t)
        elif kernel.kind in REPLAY_KINDS:
            design = sum_tree_design(kernel.workload, kernel.kind.value, board, t)
        elif kernel.kind == KernelKind.PARAM_SYNC:
            design = sync_design(kernel.workload, board, t)
        else:
            raise Infeasible(kernel.name, device.name, "device kind", reason="gymnasium environments run on CPUs")
        capacity = board.capacity()
        share = max((used / capacity[name] for name, used in design.resources.items()), default=0.0)
        return Cost(design.seconds, dynamic_energy_j(board, design.seconds, share), design.resources,
                    "modelled", design.instance, dict(design.phases))
