"""Energy per device of this machine: what is measured (and by which counter), what is modelled (and why).

The local ``cpu`` is read by RAPL, each ``gpuN`` by NVML (:mod:`pearl_py.platform.counters`); where no counter
answers, a device's energy is the catalogue's power model (docs/cost-models.md §6) and :func:`energy_statuses`
says why. :func:`run_energy` gives ``result.json``'s ``energy``: joules per device, ``measured`` or ``modelled``.

Example::

    >>> statuses = energy_statuses(Platform.local())
    >>> statuses["cpu"].describe()
    'modelled (no RAPL zone under /sys/class/powercap (no powercap driver: a VM or a container without it))'
    >>> with EnergyMeter(readers=local_readers(Platform.local())) as meter:
    ...     result = executor.run(steps)
    >>> run_energy(meter, plan, result.kernel_times)["cpu"]["source"]
    'modelled'
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pearl_py.platform.counters import (
    CounterStatus,
    DeviceReader,
    EnergyCounters,
    EnergyMeter,
    NvmlCounter,
    RaplCounter,
    cuda_uuid,
)
from pearl_py.platform.kinds import device_kind


def local_readers(platform: Any, rapl: RaplCounter | None = None, nvml: NvmlCounter | None = None,
                  uuid_of: Any = cuda_uuid) -> dict[str, DeviceReader]:
    """A reader per local device whose runtime has one (RAPL for the CPU, the matching NVML GPU for each
    ``gpuN``), measured or not."""
    counters = EnergyCounters(rapl, nvml, uuid_of)
    return {device.name: reader(device.name, counters) for device in platform
            if device.local and (reader := device_kind(device.kind).device_runtime.energy_reader) is not None}


def energy_statuses(platform: Any, readers: Mapping[str, DeviceReader] | None = None) -> dict[str, CounterStatus]:
    """Per device of ``platform``: measured by which counter, or modelled and why (a catalogue device: modelled)."""
    readers = local_readers(platform) if readers is None else readers
    return {device.name: readers[device.name].status if device.name in readers else CounterStatus(
        False, "", "a simulated device: its power is the model's" if device_kind(device.kind).simulated
        else "not a device of this machine: its power is the catalogue's model") for device in platform}


def modelled_joules(idle_w: float, peak_w: float, units: int, busy_s: float, window_s: float) -> float:
    """The power model over ``window_s``: idle power all along, plus the above-idle power of the busy share
    (``busy_s`` kernel-seconds over ``units`` parallel units)."""
    if window_s <= 0:
        return 0.0
    utilization = min(busy_s / (max(units, 1) * window_s), 1.0)
    return window_s * (idle_w + (peak_w - idle_w) * utilization)


def run_energy(meter: EnergyMeter, devices: Mapping[str, Mapping[str, Any]],
               busy_s: Mapping[str, float]) -> dict[str, dict[str, Any]]:
    """``result.json``'s ``energy``: per device, joules over the meter's window, ``measured`` where its counter
    read, else ``modelled`` from ``devices[name]`` (``idle_w``, ``peak_w``, ``units``; ``reason`` when no counter
    was asked) and the run's busy seconds on it (``busy_s``: kernel time on the device), with the counter or the
    reason."""
    out: dict[str, dict[str, Any]] = {}
    for name, info in devices.items():
        status = meter.statuses.get(name)
        if name in meter.by_device:
            out[name] = {"joules": meter.by_device[name], "source": "measured", "counter": status.counter,
                         "window_s": meter.seconds}
            continue
        why = status.reason if status is not None else info.get("reason", "no counter of this machine reads it")
        joules = modelled_joules(info["idle_w"], info["peak_w"], int(info.get("units", 1)), busy_s.get(name, 0.0),
                                 meter.seconds)
        out[name] = {"joules": joules, "source": "modelled", "reason": why, "window_s": meter.seconds,
                     "busy_s": busy_s.get(name, 0.0)}
    return out
