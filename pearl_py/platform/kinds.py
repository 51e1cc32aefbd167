"""Device kinds, declared once: spec class, catalogue section, costing, kernel variants, run-time mapping.

A :class:`DeviceKind` says everything a stage needs to know about a kind of device (its fields); a new kind of
device is one :func:`register` call plus its catalogue YAML (docs/extending.md, "A new device kind").

Example::

    >>> device_kind("gpu").runtime, device_kind("fpga").runtime
    ('cuda', 'simulated')
    >>> register(DeviceKind("npu", NpuSpec, section="npus", costing="roofline", runtime="simulated",
    ...                     ray_resource="NPU"))
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pearl_py.platform import runtimes
from pearl_py.platform.registry import Registry
from pearl_py.platform.runtimes import DeviceRuntime
from pearl_py.platform.spec import CpuSpec, FpgaSpec, GpuSpec

COSTINGS = ("calibrated", "roofline", "hls")


@dataclass(frozen=True)
class DeviceKind:
    """One kind of device: its spec dataclass and catalogue section, how the estimator costs kernels on it
    (``calibrated`` where this machine was profiled, else the roofline; ``roofline``; ``hls``: the FPGA model), its
    registered :class:`~pearl_py.platform.runtimes.DeviceRuntime` and its Ray resource."""

    name: str
    spec: type
    section: str
    costing: str
    runtime: str
    ray_resource: str
    variant_class: str | None = None
    """The :mod:`pearl_py.kernels` device class whose variants run here (None: the reference only)."""
    units: Callable[[Any], int] = lambda spec: 1
    """Parallel units of one device: single-threaded replicas that run at once (a CPU's cores)."""
    capacity: Callable[[Any], dict[str, float]] = lambda spec: {}
    """Resources beyond memory that plans must fit in (an FPGA's DSP, LUT and RAM blocks)."""
    one_host: bool = False
    """Every device of this kind in a plan run on one machine is that machine (the CPU): kernels on two of
    them do not cross a link at run time."""
    poolable: bool = False
    """Identical devices of one model form a pool that replicable kernels (actors) may spread over."""
    roofline: str = "accelerator"
    """The roofline machine model of its ``roofline`` costing (pearl_py/estimate/roofline.py: ``core`` or
    ``accelerator``)."""

    def __post_init__(self) -> None:
        if self.costing not in COSTINGS:
            raise ValueError(f"device kind {self.name!r}: costing must be one of {COSTINGS}, got {self.costing!r}")
        try:
            runtimes.device_runtime(self.runtime)
        except KeyError as exc:
            raise ValueError(f"device kind {self.name!r}: {exc.args[0]}") from None
        if getattr(self.spec, "kind", None) != self.name:
            raise ValueError(f"device kind {self.name!r}: its spec class {self.spec.__name__} must set "
                             f"kind = {self.name!r}")

    @property
    def device_runtime(self) -> DeviceRuntime:
        """What it is at run time: the registered runtime its ``runtime`` names."""
        return runtimes.device_runtime(self.runtime)

    @property
    def simulated(self) -> bool:
        """Its kernels run on the host CPU at run time and are charged their modelled time."""
        return self.device_runtime.simulated


_KINDS: Registry[DeviceKind] = Registry("device kind")
device_kind = _KINDS.__getitem__
"""The registered kind ``name``; a clear error naming the known ones otherwise."""
device_kinds = _KINDS.__iter__


def register(kind: DeviceKind) -> DeviceKind:
    """Add a device kind (its name and catalogue section must be new)."""
    if any(k.section == kind.section and k.name != kind.name for k in _KINDS):
        raise ValueError(f"catalogue section {kind.section!r} already belongs to another device kind")
    return _KINDS.add(kind)


def spec_by_section() -> dict[str, type]:
    """Catalogue section -> spec class, for every registered kind."""
    return {k.section: k.spec for k in _KINDS}


CPU = register(DeviceKind("cpu", CpuSpec, section="cpus", costing="calibrated", runtime="cpu", ray_resource="CPU",
                          variant_class="cpu", units=lambda spec: spec.cores, one_host=True, poolable=True,
                          roofline="core"))
GPU = register(DeviceKind("gpu", GpuSpec, section="gpus", costing="calibrated", runtime="cuda", ray_resource="GPU",
                          variant_class="gpu"))
FPGA = register(DeviceKind("fpga", FpgaSpec, section="fpgas", costing="hls", runtime="simulated",
                           ray_resource="FPGA", capacity=lambda spec: {k: float(v) for k, v in spec.capacity().items()}))
