"""Measured power per kernel, from this machine's energy counters while ``pearl profile`` times each kernel's grid.

Where a device's counter reads, its idle power is measured first (``IDLE_S`` asleep), then the energy over each
variant's timed grid (at least ``MIN_WINDOW_S``): its **dynamic power** is the window's average minus the idle
power, never below 0 (docs/cost-models.md §6). ``calibration.meta["energy"][device]``: ``{"source": "measured",
"counter", "idle_w", "kernels": {model key: {"dynamic_w", "window_s"}}, "profile_j"}`` or ``{"source":
"modelled", "reason"}``.

Example::

    >>> power = PowerProfile(readers)             # pearl_py.platform.energy.local_readers(Platform.local())
    >>> power.start()                             # idle power of every measured device
    >>> with power.window("cpu", "learner_update/reference"):
    ...     measure(...)
    >>> power.meta()["cpu"]["kernels"]["learner_update/reference"]["dynamic_w"]
    11.7
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from pearl_py.platform.counters import DeviceReader, EnergyMeter

IDLE_S = 2.0
"""Seconds the profile sleeps to measure each device's idle power."""
MIN_WINDOW_S = 0.5
"""A kernel's power is measured over at least this long (longer than NVML's update period)."""


class PowerProfile:
    """Idle and per-kernel dynamic power of the devices whose counters read (see the module docstring)."""

    def __init__(self, readers: Mapping[str, DeviceReader], sleep: Callable[[float], None] = time.sleep,
                 idle_s: float = IDLE_S) -> None:
        self.readers = dict(readers)
        self.sleep, self.idle_s = sleep, idle_s
        self.idle_w: dict[str, float] = {}
        self.kernels: dict[str, dict[str, dict[str, float]]] = {name: {} for name in self.readers}
        self._whole: EnergyMeter | None = None

    def measured(self, device: str) -> bool:
        return device in self.readers and self.readers[device].status.measured

    def _meter(self, device: str) -> EnergyMeter:
        return EnergyMeter(readers={device: self.readers[device]}, poll_s=0.0)

    def start(self) -> None:
        """Measure every counted device's idle power, and start metering the whole profile."""
        for device in self.readers:
            if not self.measured(device):
                continue
            with self._meter(device) as meter:
                self.sleep(self.idle_s)
            self.idle_w[device] = meter.by_device[device] / max(meter.seconds, 1e-9)
        self._whole = EnergyMeter(readers={d: r for d, r in self.readers.items() if self.measured(d)})
        self._whole.__enter__()

    @contextlib.contextmanager
    def window(self, device: str, key: str, repeat: Callable[[], object] | None = None) -> Iterator[None]:
        """Meter the block (a kernel variant's timed grid) on ``device`` as ``key``'s power; ``repeat`` runs the
        grid again while the window is shorter than ``MIN_WINDOW_S``. Nothing is metered on a device without a
        counter."""
        if not self.measured(device):
            yield
            return
        with self._meter(device) as meter:
            yield
            while repeat is not None and meter.elapsed_s() < MIN_WINDOW_S:
                repeat()
        average = meter.by_device[device] / max(meter.seconds, 1e-9)
        self.kernels[device][key] = {"dynamic_w": max(average - self.idle_w[device], 0.0),
                                     "window_s": round(meter.seconds, 3)}

    def meta(self) -> dict[str, dict[str, Any]]:
        """``calibration.meta["energy"]`` (stops metering the whole profile)."""
        if self._whole is not None:
            self._whole.__exit__(None, None, None)
        out: dict[str, dict[str, Any]] = {}
        for device, reader in self.readers.items():
            status = reader.status
            if not status.measured:
                out[device] = {"source": "modelled", "reason": status.reason}
                continue
            out[device] = {"source": "measured", "counter": status.counter, "idle_w": self.idle_w.get(device),
                           "kernels": self.kernels[device],
                           "profile_j": self._whole.by_device.get(device) if self._whole is not None else None}
        return out

