"""Device runtimes, declared once: what a kind of device is when a run executes kernels on it.

``cpu`` (a host process), ``cuda`` (a numbered torch device) and ``simulated`` (runs on the host CPU, charged its
modelled time) are registered here; a real XPU is one :func:`register_runtime` call (docs/extending.md, "A new
device runtime").

Example::

    >>> CUDA.torch_device("node0.gpu3")
    device(type='cuda', index=3)
    >>> device_runtime("simulated").torch_device("fpga"), device_runtime("simulated").simulated
    (device(type='cpu'), True)
    >>> register_runtime(DeviceRuntime("xpu", torch_type="xpu", indexed=True))
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pearl_py.errors import UserError
from pearl_py.platform.counters import DeviceReader, EnergyCounters, nvml_reader, rapl_reader
from pearl_py.platform.registry import Registry

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class DeviceRuntime:
    """How the devices of a kind run kernels: the run-time side of a :class:`~pearl_py.platform.kinds.DeviceKind`."""

    name: str
    torch_type: str = "cpu"
    """The torch device type its kernels execute on (``cpu``: the host, where simulated kernels run too)."""
    indexed: bool = False
    """Its devices are numbered: a device name's trailing number is its torch index (``gpu1`` -> ``cuda:1``)."""
    simulated: bool = False
    """Its kernels run on the host CPU and are charged their modelled time."""
    variant_class: str = "cpu"
    """The :mod:`pearl_py.kernels` device class whose variants build for its torch devices."""
    calibrated_per_model: bool = False
    """``pearl profile`` calibrates each local device of it under its model's name (the calibration's ``gpus``):
    one it did not calibrate is modelled."""
    energy_reader: Callable[[str, EnergyCounters], DeviceReader] | None = None
    """The reader of a local device's energy counter, from the counters this machine has (None: modelled)."""

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

    def events(self, device: torch.device) -> Callable[[], TorchEvent]:
        """The timing-event factory of ``device``, one of its devices off the host (events on its current stream)."""
        return lambda: TorchEvent(device)

    def rng_states(self) -> list[torch.Tensor]:
        """Each of its devices' generator state, by index (empty where torch sees none; the host's is
        ``torch.get_rng_state``)."""
        import torch

        return list(getattr(torch, self.torch_type).get_rng_state_all()) if self.device_count() else []

    def restore_rng_states(self, states: list[torch.Tensor]) -> None:
        """Set its devices' generators from :meth:`rng_states`'s list; a list of more devices than this machine has
        cannot continue exactly (a UserError names both counts)."""
        import torch

        if not states:
            return
        present = self.device_count()
        if len(states) > present:
            raise UserError(f"resume: the checkpoint kept the random generators of {len(states)} "
                            f"{self.torch_type.upper()} device(s), this machine has {present}: the run cannot "
                            "continue exactly here")
        getattr(torch, self.torch_type).set_rng_state_all(states)


class TorchEvent:
    """A timing event of a torch device off the host, recorded on ``device``'s current stream (not the current
    device's): ``torch.cuda.Event(enable_timing=True)`` on a CUDA device."""

    def __init__(self, device: torch.device) -> None:
        import torch

        self.device, self.api = device, getattr(torch, device.type)
        self.event = self.api.Event(enable_timing=True)

    def record(self) -> None:
        self.event.record(self.api.current_stream(self.device))

    def query(self) -> bool:
        return self.event.query()

    def synchronize(self) -> None:
        self.event.synchronize()

    def seconds_until(self, end: TorchEvent) -> float:
        return self.event.elapsed_time(end.event) / 1e3  # milliseconds


def device_index(device: str) -> int:
    """The torch index of a numbered device's name: its trailing number (``gpu1`` -> 1, ``node0.gpu3`` -> 3;
    none -> 0)."""
    found = re.search(r"(\d+)$", device)
    return int(found.group(1)) if found else 0


_RUNTIMES: Registry[DeviceRuntime] = Registry("device runtime")
register_runtime = _RUNTIMES.add
"""Add a device runtime (its name must be new)."""
device_runtime = _RUNTIMES.__getitem__
"""The registered runtime ``name``; a clear error naming the known ones otherwise."""


def runtime_of(device: torch.device | str) -> DeviceRuntime:
    """The runtime that executes on torch device ``device`` (of type ``cpu``: the host's, not ``simulated``)."""
    import torch

    kind = torch.device(device).type
    try:
        return next(r for r in _RUNTIMES if r.torch_type == kind and not r.simulated)
    except StopIteration:
        raise ValueError(f"no device runtime executes on torch device type {kind!r}") from None


def _nvml_reader(device: str, counters: EnergyCounters) -> DeviceReader:
    """NVML's counter of the GPU whose UUID is that of torch device ``device``'s index (modelled where none)."""
    index = device_index(device)
    match = counters.nvml.device_for(counters.uuid_of(index), index)
    status = counters.nvml.status(match)
    return nvml_reader(counters.nvml, match) if status.measured else DeviceReader(status, dict, lambda a, b: 0.0)


CPU = register_runtime(DeviceRuntime("cpu", energy_reader=lambda device, counters: rapl_reader(counters.rapl)))
CUDA = register_runtime(DeviceRuntime("cuda", torch_type="cuda", indexed=True, variant_class="gpu",
                                      calibrated_per_model=True, energy_reader=_nvml_reader))
SIMULATED = register_runtime(DeviceRuntime("simulated", simulated=True))
