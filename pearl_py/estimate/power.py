"""Power: ``P = idle + (peak - idle) x utilization`` from the catalogue; measured where counters exist.

A kernel call's dynamic energy is its latency times the above-idle power of the share
of the device it occupies; idle power is charged per second of wall time by whoever
sums a plan, for the devices the plan uses (the rule reports state: ``pearl_py.report.energy.IDLE_RULE``;
docs/cost-models.md, "Power").

Example::

    >>> from pearl_py.platform import Platform
    >>> gpu = Platform.load("dgx-a100-node").device("gpu0")
    >>> device_power_w(gpu.spec, utilization=0.5)       # 55 + (400 - 55) x 0.5
    227.5
    >>> dynamic_energy_j(gpu.spec, latency_s=1e-3, share=1.0)
    0.345
"""
from __future__ import annotations

from collections.abc import Callable

from pearl_py.platform.counters import EnergyMeter
from pearl_py.platform.spec import DeviceSpec


def device_power_w(spec: DeviceSpec, utilization: float) -> float:
    """Watts drawn by a device busy ``utilization`` (0..1) of the time."""
    u = min(max(utilization, 0.0), 1.0)
    return spec.idle_w + (spec.peak_w - spec.idle_w) * u


def dynamic_energy_j(spec: DeviceSpec, latency_s: float, share: float) -> float:
    """Above-idle joules of a call that occupies ``share`` of the device for ``latency_s``."""
    return latency_s * (spec.peak_w - spec.idle_w) * min(max(share, 0.0), 1.0)


def measure_call_energy(call: Callable[[], object], calls: int = 100,
                        meter: EnergyMeter | None = None) -> tuple[float | None, str]:
    """Joules per call from RAPL/NVML, or ``(None, "modelled")`` when no counter is readable.

    The counters measure the whole package or board: the figure includes whatever else
    runs on it, so measure on an otherwise idle machine.
    """
    meter = meter or EnergyMeter()
    with meter:
        for _ in range(calls):
            call()
    if meter.joules is None:
        return None, "modelled"
    return meter.joules / calls, "measured"
