"""Energy counters of this machine: RAPL (CPU packages and their DRAM) via powercap sysfs, NVIDIA GPUs via NVML.

Both are optional: where one cannot read, its reader says why (:class:`CounterStatus`) and energy stays
"modelled". Which zones are read, RAPL's wrap, NVML's update period and UUID matching, and why not Zeus:
docs/cost-models.md §6 ("Measured energy").

Example::

    >>> rapl = RaplCounter()                 # reads /sys/class/powercap (or $PEARL_POWERCAP_ROOT)
    >>> rapl.status()
    CounterStatus(measured=False, counter='RAPL', reason='no RAPL zone under /sys/class/powercap ...')
    >>> with EnergyMeter() as meter:         # measures only what is readable
    ...     work()
    >>> meter.joules, meter.source           # (None, "modelled") when nothing is readable
    (None, 'modelled')
"""
from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

POWERCAP_ROOT = Path("/sys/class/powercap")
POWERCAP_ENV = "PEARL_POWERCAP_ROOT"
"""Read RAPL zones under this folder instead (a container that mounts sysfs elsewhere; tests' fake trees)."""
POLL_S = 2.0
"""An :class:`EnergyMeter` reads its counters at least this often (RAPL wraps; NVML is 64-bit)."""


@dataclass(frozen=True)
class CounterStatus:
    """Whether a device's energy is measured: by which counter, or why not."""

    measured: bool
    counter: str
    reason: str = ""

    def describe(self) -> str:
        """One phrase: ``measured (RAPL package-0 + dram)`` or ``modelled (no RAPL zone ...)``."""
        return f"measured ({self.counter})" if self.measured else f"modelled ({self.reason})"


class RaplCounter:
    """RAPL energy of the CPU packages and their DRAM (the zones read: docs/cost-models.md §6)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root if root is not None else os.environ.get(POWERCAP_ENV) or POWERCAP_ROOT)

    def _candidates(self) -> list[Path]:
        if not self.root.is_dir():
            return []
        return [zone for zone, depth, name in ((z, z.name.count(":"), _zone_name(z))
                                               for z in sorted(self.root.glob("*rapl:*")))
                if (depth == 1 and (name is None or name.startswith("package"))) or (depth == 2 and name == "dram")]

    def zones(self) -> list[Path]:
        """Readable zones: packages and their DRAM."""
        return [zone for zone in self._candidates() if _readable(zone / "energy_uj")]

    def available(self) -> bool:
        return bool(self.zones())

    def status(self) -> CounterStatus:
        """What is read, or why nothing is (no zone; zones whose ``energy_uj`` this user cannot read)."""
        zones = self.zones()
        if zones:
            names = " + ".join(f"{_zone_name(z) or z.name} ({z.name})" for z in zones)
            return CounterStatus(True, f"RAPL {names}")
        candidates = self._candidates()
        if not candidates:
            return CounterStatus(False, "RAPL", f"no RAPL zone under {self.root} (no powercap driver: a VM or a "
                                                "container without it)")
        return CounterStatus(False, "RAPL", f"RAPL zones under {self.root} are not readable by this user "
                                            "(energy_uj is root-only since Linux 5.10)")

    def read_uj(self) -> dict[str, int]:
        """Current cumulative energy of every zone, microjoules."""
        return {zone.name: int((zone / "energy_uj").read_text()) for zone in self.zones()}

    def delta_j(self, before: Mapping[str, int], after: Mapping[str, int]) -> float:
        """Joules between two :meth:`read_uj` readings, correcting one wrap-around per zone."""
        total = 0
        for name, start in before.items():
            end = after.get(name, start)
            if end < start:
                end += int((self.root / name / "max_energy_range_uj").read_text())
            total += end - start
        return total / 1e6


def _readable(path: Path) -> bool:
    try:
        int(path.read_text())
    except (OSError, ValueError):
        return False
    return True


def _zone_name(zone: Path) -> str | None:
    try:
        return (zone / "name").read_text().strip()
    except OSError:
        return None


@dataclass(frozen=True)
class NvmlDevice:
    """One GPU as NVML sees it: its NVML index, UUID, name, and whether its energy counter answers."""

    index: int
    uuid: str
    name: str
    supported: bool
    reason: str = ""


class NvmlCounter:
    """Total GPU energy from NVML (mJ, Volta and newer). ``nvml``: the ``pynvml`` module (tests pass a fake)."""

    def __init__(self, nvml: ModuleType | None = None) -> None:
        if nvml is None:
            with contextlib.suppress(ImportError):
                import pynvml as nvml
        self._nvml = nvml
        self._handles: list[Any] = []
        self.devices: list[NvmlDevice] = []
        self.reason = ""
        if self._nvml is None:
            self.reason = "nvidia-ml-py is not installed (pip install \".[energy]\")"
            return
        try:
            self._nvml.nvmlInit()
            count = self._nvml.nvmlDeviceGetCount()
        except self._nvml.NVMLError as exc:  # no driver, no device
            self.reason = f"NVML cannot start: {exc}"
            self._nvml = None
            return
        for i in range(count):
            handle = self._nvml.nvmlDeviceGetHandleByIndex(i)
            uuid, name = _text(self._nvml.nvmlDeviceGetUUID(handle)), _text(self._nvml.nvmlDeviceGetName(handle))
            try:
                self._nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
                self.devices.append(NvmlDevice(i, uuid, name, True))
            except self._nvml.NVMLError as exc:  # NVML_ERROR_NOT_SUPPORTED before Volta
                self.devices.append(NvmlDevice(i, uuid, name, False, f"NVML has no energy counter for {name} "
                                                                     f"(Volta or newer needed): {exc}"))
            self._handles.append(handle)

    def available(self) -> bool:
        return any(d.supported for d in self.devices)

    def device_for(self, uuid: str | None, index: int) -> NvmlDevice | None:
        """The NVML device of a torch CUDA device: by UUID when torch gives one, else by index."""
        if uuid:
            wanted = _bare_uuid(uuid)
            return next((d for d in self.devices if _bare_uuid(d.uuid) == wanted), None)
        return next((d for d in self.devices if d.index == index), None)

    def status(self, device: NvmlDevice | None) -> CounterStatus:
        if self._nvml is None:
            return CounterStatus(False, "NVML", self.reason)
        if device is None:
            return CounterStatus(False, "NVML", "NVML lists no GPU with this device's UUID")
        if not device.supported:
            return CounterStatus(False, "NVML", device.reason)
        return CounterStatus(True, f"NVML total energy of {device.name} ({device.uuid})")

    def read_mj(self, device: NvmlDevice | None = None) -> int | list[int]:
        """Total energy in mJ of ``device``, or of every supported GPU as a list."""
        if device is not None:
            return int(self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handles[device.index]))
        return [int(self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handles[d.index]))
                for d in self.devices if d.supported]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _bare_uuid(uuid: str) -> str:
    """``GPU-1a2b...`` (NVML) and ``1a2b...`` (torch) name the same GPU."""
    return str(uuid).lower().removeprefix("gpu-")


@dataclass
class DeviceReader:
    """A device's cumulative energy in joules, and what reads it (one RAPL set or one NVML GPU)."""

    status: CounterStatus
    read_j: Callable[[], dict[str, float]]
    delta_j: Callable[[Mapping[str, float], Mapping[str, float]], float]


def rapl_reader(rapl: RaplCounter) -> DeviceReader:
    return DeviceReader(rapl.status(), lambda: {k: float(v) for k, v in rapl.read_uj().items()},
                        lambda a, b: rapl.delta_j({k: int(v) for k, v in a.items()}, {k: int(v) for k, v in b.items()}))


def nvml_reader(nvml: NvmlCounter, device: NvmlDevice) -> DeviceReader:
    return DeviceReader(nvml.status(device), lambda: {"mj": float(nvml.read_mj(device))},
                        lambda a, b: (b["mj"] - a["mj"]) / 1e3)


def cuda_uuid(index: int) -> str | None:
    """The UUID torch reports for CUDA device ``index`` (None where this torch does not report one)."""
    import torch

    uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
    return str(uuid) if uuid is not None else None


class EnergyCounters:
    """This machine's counters, for the device runtimes' energy readers: RAPL, and NVML opened when a GPU first
    asks; ``uuid_of(index)``: the UUID of CUDA device ``index`` (tests pass fakes of each)."""

    def __init__(self, rapl: RaplCounter | None = None, nvml: NvmlCounter | None = None,
                 uuid_of: Callable[[int], str | None] = cuda_uuid) -> None:
        self.rapl, self._nvml, self.uuid_of = rapl if rapl is not None else RaplCounter(), nvml, uuid_of

    @property
    def nvml(self) -> NvmlCounter:
        if self._nvml is None:
            self._nvml = NvmlCounter()
        return self._nvml


class EnergyMeter:
    """Context manager measuring joules per device over a block, from the readers that can read.

    ``readers``: device name -> :class:`DeviceReader` (:func:`pearl_py.platform.energy.local_readers`; default: the
    CPU packages plus every NVML GPU). A thread reads every ``poll_s`` so RAPL wraps inside the block are counted.
    ``by_device``: joules per measured device; ``joules`` their sum (None when nothing was readable); ``source``
    ``measured`` or ``modelled``.
    """

    def __init__(self, rapl: RaplCounter | None = None, nvml: NvmlCounter | None = None, *,
                 readers: Mapping[str, DeviceReader] | None = None, poll_s: float = POLL_S) -> None:
        if readers is None:
            nvml = nvml or NvmlCounter()
            readers = {"cpu": rapl_reader(rapl or RaplCounter()),
                       **{f"nvml{d.index}": nvml_reader(nvml, d) for d in nvml.devices if d.supported}}
        self.readers = {name: r for name, r in readers.items() if r.status.measured}
        self.statuses = {name: r.status for name, r in readers.items()}
        self.poll_s = poll_s
        self.by_device: dict[str, float] = {}
        self.joules: float | None = None
        self.seconds = 0.0
        self.source = "modelled"
        self._last: dict[str, dict[str, float]] = {}
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def sample(self) -> None:
        """Read every counter now and add what it moved since the last reading (wraps corrected)."""
        with self._lock:
            for name, reader in self.readers.items():
                now = reader.read_j()
                self.by_device[name] = self.by_device.get(name, 0.0) + reader.delta_j(self._last[name], now)
                self._last[name] = now

    def __enter__(self) -> EnergyMeter:
        self.by_device = {name: 0.0 for name in self.readers}
        self._last = {name: r.read_j() for name, r in self.readers.items()}
        self._t0 = time.perf_counter()
        if self.readers and self.poll_s > 0:
            self._stop.clear()
            self._thread = threading.Thread(target=self._poll, name="pearl-energy", daemon=True)
            self._thread.start()
        return self

    def elapsed_s(self) -> float:
        """Seconds since the block began (inside it)."""
        return time.perf_counter() - self._t0

    def _poll(self) -> None:
        while not self._stop.wait(self.poll_s):
            self.sample()

    def __exit__(self, *exc: object) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
        self.seconds = time.perf_counter() - self._t0
        if self.readers:
            self.sample()
            self.joules, self.source = sum(self.by_device.values()), "measured"
