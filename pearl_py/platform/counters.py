"""Energy counters of this machine: Intel/AMD RAPL via powercap sysfs, NVIDIA GPUs via NVML.

Both are optional: on a VM without ``/sys/class/powercap`` and without ``pynvml``
the readers report themselves unavailable and energy stays "modelled".

Example::

    >>> rapl = RaplCounter()             # reads /sys/class/powercap/*/energy_uj
    >>> rapl.available()                 # False in most VMs and containers
    False
    >>> with EnergyMeter() as meter:     # measures only what is readable
    ...     work()
    >>> meter.joules, meter.source       # (None, "modelled") when nothing is readable
"""
from __future__ import annotations

import time
from pathlib import Path

POWERCAP_ROOT = Path("/sys/class/powercap")


class RaplCounter:
    """Package-level RAPL energy (``intel-rapl:N`` zones, also used by AMD's powercap driver).

    Sub-zones (``intel-rapl:N:M``: core, uncore, dram) are inside their package and
    are not added again. ``energy_uj`` wraps at ``max_energy_range_uj``.
    """

    def __init__(self, root: Path = POWERCAP_ROOT) -> None:
        self.root = Path(root)

    def zones(self) -> list[Path]:
        """Readable top-level zones (one per CPU package)."""
        if not self.root.is_dir():
            return []
        zones = []
        for zone in sorted(self.root.glob("*rapl:*")):
            if zone.name.count(":") != 1:
                continue
            try:
                int((zone / "energy_uj").read_text())
            except (OSError, ValueError):
                continue
            zones.append(zone)
        return zones

    def available(self) -> bool:
        return bool(self.zones())

    def read_uj(self) -> dict[str, int]:
        """Current cumulative energy of every zone, microjoules."""
        return {zone.name: int((zone / "energy_uj").read_text()) for zone in self.zones()}

    def delta_j(self, before: dict[str, int], after: dict[str, int]) -> float:
        """Joules between two :meth:`read_uj` readings, correcting counter wrap-around."""
        total = 0
        for name, start in before.items():
            end = after.get(name, start)
            if end < start:
                end += int((self.root / name / "max_energy_range_uj").read_text())
            total += end - start
        return total / 1e6


class NvmlCounter:
    """Total GPU energy from NVML (``nvmlDeviceGetTotalEnergyConsumption``, mJ, Volta and newer)."""

    def __init__(self) -> None:
        try:
            import pynvml
        except ImportError:
            self._nvml = None
            return
        try:
            pynvml.nvmlInit()
            self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
            for handle in self._handles:
                pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
            self._nvml = pynvml
        except Exception:  # pynvml.NVMLError and driver absence: counters unreadable
            self._nvml = None

    def available(self) -> bool:
        return self._nvml is not None and bool(self._handles)

    def read_mj(self) -> list[int]:
        return [self._nvml.nvmlDeviceGetTotalEnergyConsumption(h) for h in self._handles]


class EnergyMeter:
    """Context manager measuring joules of RAPL packages plus NVML GPUs over a block.

    ``joules`` is None and ``source`` is ``"modelled"`` when no counter is readable,
    so callers fall back to the power model.
    """

    def __init__(self, rapl: RaplCounter | None = None, nvml: NvmlCounter | None = None) -> None:
        self.rapl = rapl or RaplCounter()
        self.nvml = nvml or NvmlCounter()
        self.joules: float | None = None
        self.seconds = 0.0
        self.source = "modelled"

    def __enter__(self) -> EnergyMeter:
        self._rapl0 = self.rapl.read_uj() if self.rapl.available() else None
        self._nvml0 = self.nvml.read_mj() if self.nvml.available() else None
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self.seconds = time.perf_counter() - self._t0
        joules = None
        if self._rapl0 is not None:
            joules = self.rapl.delta_j(self._rapl0, self.rapl.read_uj())
        if self._nvml0 is not None:
            gpu = sum(b - a for a, b in zip(self._nvml0, self.nvml.read_mj())) / 1e3
            joules = gpu if joules is None else joules + gpu
        if joules is not None:
            self.joules, self.source = joules, "measured"
