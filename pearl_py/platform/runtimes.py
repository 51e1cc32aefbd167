"""Device runtimes, declared once: what a kind of device is when a run executes kernels on it.

A :class:`DeviceRuntime` is the run-time side of a :class:`~pearl_py.platform.kinds.DeviceKind` (its ``runtime``
names one): the torch device a planned device executes on, whether torch can reach such a device here, and
whether its kernels are only charged their modelled time. ``cpu`` (a host process), ``cuda`` (a numbered torch
device) and ``simulated`` (runs on the host CPU, charged its modelled time) are registered here; a real XPU is one
:func:`register_runtime` call (docs/extending.md, "A new device runtime").

Example::

    >>> device_runtime("cuda").torch_device("node0.gpu3")
    device(type='cuda', index=3)
    >>> device_runtime("simulated").torch_device("fpga"), device_runtime("simulated").simulated
    (device(type='cpu'), True)
    >>> register_runtime(DeviceRuntime("xpu", torch_type="xpu", indexed=True))
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class DeviceRuntime:
    """How the devices of a kind run kernels (see the module docstring)."""

    name: str
    torch_type: str = "cpu"
    """The torch device type its kernels execute on (``cpu``: the host, where simulated kernels run too)."""
    indexed: bool = False
    """Its devices are numbered: a device name's trailing number is its torch index (``gpu1`` -> ``cuda:1``)."""
    simulated: bool = False
    """Its kernels run on the host CPU and are charged their modelled time."""

    @property
    def on_host(self) -> bool:
        """Its kernels execute in host memory, on the host's cores."""
        return self.torch_type == "cpu"

    def torch_device(self, device: str) -> torch.device:
        """The torch device that executes kernels planned on ``device`` (a device name of this runtime's kind)."""
        import torch

        return torch.device(self.torch_type, device_index(device)) if self.indexed else torch.device(self.torch_type)

    def available(self) -> bool:
        """Whether torch sees a device of this runtime in this process (the host always)."""
        import torch

        return self.on_host or getattr(torch, self.torch_type).is_available()

    def device_count(self) -> int:
        """How many devices of this runtime torch sees in this process (the host: one)."""
        import torch

        if not self.indexed:
            return int(self.on_host)
        return getattr(torch, self.torch_type).device_count() if self.available() else 0


def device_index(device: str) -> int:
    """The torch index of a numbered device's name: its trailing number (``gpu1`` -> 1, ``node0.gpu3`` -> 3;
    none -> 0)."""
    found = re.search(r"(\d+)$", device)
    return int(found.group(1)) if found else 0


_RUNTIMES: dict[str, DeviceRuntime] = {}


def register_runtime(runtime: DeviceRuntime) -> DeviceRuntime:
    """Add a device runtime (its name must be new)."""
    if runtime.name in _RUNTIMES:
        raise ValueError(f"device runtime {runtime.name!r} is already registered")
    _RUNTIMES[runtime.name] = runtime
    return runtime


def device_runtime(name: str) -> DeviceRuntime:
    """The registered runtime ``name``; a clear error naming the known ones otherwise."""
    try:
        return _RUNTIMES[name]
    except KeyError:
        raise KeyError(f"unknown device runtime {name!r}; registered: {', '.join(_RUNTIMES)}") from None


CPU = register_runtime(DeviceRuntime("cpu"))
CUDA = register_runtime(DeviceRuntime("cuda", torch_type="cuda", indexed=True))
SIMULATED = register_runtime(DeviceRuntime("simulated", simulated=True))
