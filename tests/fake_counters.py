"""Fakes of the energy counters: a powercap tree on disk and an NVML module (the ``pynvml`` API pearl_py calls)."""
from __future__ import annotations

from pathlib import Path


def rapl_zone(root: Path, zone: str, energy_uj: int, name: str | None = None, max_range: int = 1_000_000) -> Path:
    """A powercap zone folder: ``energy_uj``, ``max_energy_range_uj`` and (if given) ``name``."""
    folder = root / zone
    folder.mkdir(parents=True)
    (folder / "energy_uj").write_text(f"{energy_uj}\n")
    (folder / "max_energy_range_uj").write_text(f"{max_range}\n")
    if name is not None:
        (folder / "name").write_text(f"{name}\n")
    return folder


def add_uj(zone: Path, microjoules: int) -> None:
    """The counter moves by ``microjoules`` (wrapping at its range, as the hardware does)."""
    limit = int((zone / "max_energy_range_uj").read_text())
    (zone / "energy_uj").write_text(str((int((zone / "energy_uj").read_text()) + microjoules) % limit))


class NVMLError(Exception):
    pass


class FakeNvml:
    """``pynvml`` as pearl_py uses it: GPUs with UUIDs, names and a total-energy counter in mJ (None: not supported,
    as before Volta)."""

    NVMLError = NVMLError

    def __init__(self, gpus: list[tuple[str, str, int | None]]) -> None:
        self.gpus = [list(g) for g in gpus]  # (uuid, name, millijoules or None)
        self.calls: list[str] = []

    def nvmlInit(self) -> None:
        self.calls.append("init")

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetUUID(self, handle: int) -> bytes:
        return self.gpus[handle][0].encode()

    def nvmlDeviceGetName(self, handle: int) -> str:
        return self.gpus[handle][1]

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: int) -> int:
        mj = self.gpus[handle][2]
        if mj is None:
            raise NVMLError("Not Supported")
        return mj

    def add_mj(self, handle: int, millijoules: int) -> None:
        self.gpus[handle][2] += millijoules
