"""Estimator: what a kernel costs on a device, in time, energy and resources, and how we know.

- local CPU with a calibration (``pearl profile``): the fitted model, ``source="calibrated"``;
- other CPUs and GPUs: roofline + per-op dispatch from the catalogue, ``"modelled"``;
- FPGAs: the HLS-style model of :mod:`pearl_py.estimate.fpga_kernels`, ``"modelled"``.

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
"""
from __future__ import annotations

from pearl_py.estimate import roofline
from pearl_py.estimate.calibration import Calibration
from pearl_py.estimate.cost import Cost, Infeasible
from pearl_py.estimate.features import workload_features
from pearl_py.estimate.fpga_kernels import FpgaTemplates, mlp_design, sum_tree_design, sync_design
from pearl_py.estimate.power import dynamic_energy_j
from pearl_py.estimate.roofline import RooflineParams
from pearl_py.platform import Device, Platform
from pearl_py.protocol import REPLAY_KINDS, Kernel, KernelKind

_NETWORK_KINDS = {KernelKind.INFERENCE, KernelKind.LEARNER_UPDATE}


class Estimator:
    """Costs per (kernel, variant, device). ``calibration=None`` reads the machine's cache."""

    def __init__(self, calibration: Calibration | None = None, *, use_cache: bool = True,
                 templates: FpgaTemplates | None = None, params: RooflineParams | None = None) -> None:
        self.calibration = calibration if calibration is not None else (
            Calibration.load_default() if use_cache else None)
        self.templates = templates or FpgaTemplates.load()
        self.params = params or RooflineParams.load()

    def cost(self, kernel: Kernel, device: Device, variant: str = "reference") -> Cost:
        """Cost of one call of ``kernel`` on ``device``; raises :class:`Infeasible` if it cannot run there."""
        if device.kind == "fpga":
            return self._fpga(kernel, device)
        if kernel.kind == KernelKind.ENV_STEP and device.kind != "cpu":
            raise Infeasible(kernel.name, device.name, "device kind", reason="gymnasium environments run on CPUs")
        if device.kind == "cpu" and device.local:
            calibrated = self._calibrated(kernel, device, variant)
            if calibrated is not None:
                return calibrated
        return self._roofline(kernel, device, variant)

    def transfer(self, platform: Platform, src: str, dst: str, nbytes: float) -> Cost:
        """Moving ``nbytes`` from device ``src`` to ``dst`` over the platform's links (modelled)."""
        return Cost(platform.transfer_s(src, dst, nbytes), 0.0, source="modelled")

    def _calibrated(self, kernel: Kernel, device: Device, variant: str) -> Cost | None:
        if self.calibration is None:
            return None
        env_id = getattr(kernel.workload, "env_id", None) if kernel.kind == KernelKind.ENV_STEP else None
        model = self.calibration.model(kernel.kind.value, variant, env_id)
        if model is None:
            return None
        latency = max(model.predict(workload_features(kernel.workload)), 0.0)
        return Cost(latency, dynamic_energy_j(device.spec, latency, 1 / device.spec.cores),
                    {"cores": 1}, "calibrated", kernel.kind.value, {"model": model.cv_mape})

    def _roofline(self, kernel: Kernel, device: Device, variant: str) -> Cost:
        spec, features, p = device.spec, workload_features(kernel.workload), self.params
        if kernel.kind in _NETWORK_KINDS:
            latency, detail = roofline.network_latency(features, spec, p, variant)
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
        return Cost(latency, dynamic_energy_j(spec, latency, share), resources, "modelled", kernel.kind.value, detail)

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
