"""The energy of a run, per device it ran on: measured where a counter reads it, modelled elsewhere, each marked.

:func:`run_meter` meters the host CPU and the GPUs over the whole run with their counters (RAPL, NVML);
:func:`run_energy_record` writes ``result.json``'s ``energy``: per device its joules, ``measured`` or ``modelled``
(the power model at the utilization the run's kernel times give; simulated devices always).

Example::

    >>> meter = run_meter(plan)
    >>> with meter:
    ...     result = executor.run(total_steps)
    >>> record = run_energy_record(meter, plan, result.kernel_times)
    >>> record["devices"]["cpu"]["source"], record["window_s"] > result.wall_seconds
    ('modelled', True)
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from pearl_py.plan import Plan
from pearl_py.platform import Platform
from pearl_py.platform.counters import EnergyMeter
from pearl_py.platform.energy import local_readers, run_energy
from pearl_py.platform.kinds import device_kind
from pearl_py.runtime.kernel_devices import execution_device

HOST = "cpu"
"""The local platform's name of this machine's CPU, where every host kernel's energy is counted."""


def runtime_device(plan: Plan, kernel: str) -> str:
    """The run-time device a kernel's energy lands on: ``cpu`` (the host), ``gpuN``, or its simulated device."""
    placement = plan.placements[kernel]
    if device_kind(plan.device_kind(placement.device)).simulated:
        return placement.device
    device = execution_device(plan, kernel)
    return HOST if device.type == "cpu" else f"gpu{device.index or 0}"


def run_meter(plan: Plan, local: Platform | None = None, **readers: Any) -> EnergyMeter:
    """A meter of the host CPU and the GPUs ``plan`` runs on (``readers``: counters for :func:`local_readers`)."""
    local = local or Platform.local()
    used = {runtime_device(plan, k) for k in plan.placements} | {HOST}
    return EnergyMeter(readers={name: r for name, r in local_readers(local, **readers).items() if name in used})


def _power(plan: Plan, local: Platform, device: str) -> dict[str, Any]:
    """``idle_w``, ``peak_w``, ``units`` of a run-time device: the local spec, or the plan's (a simulated device)."""
    if device in local.devices:
        d = local.devices[device]
        return {"idle_w": float(d.spec.idle_w), "peak_w": float(d.spec.peak_w), "units": d.parallel_units}
    info = plan.prediction.devices[device]
    return {"idle_w": info.idle_w, "peak_w": info.peak_w, "units": info.units,
            "reason": f"simulated {info.kind.upper()}: its power is the catalogue's model at its modelled busy time"}


def run_energy_record(meter: EnergyMeter, plan: Plan, kernel_times: Mapping[str, Mapping[str, Any]],
                      local: Platform | None = None) -> dict[str, Any]:
    """``result.json``'s ``energy``: the window and, per run-time device, joules with their source."""
    local = local or Platform.local()
    busy: dict[str, float] = defaultdict(float)
    for kernel, t in kernel_times.items():
        if kernel not in plan.placements:
            continue  # the runtime's own waits (replay_wait, actor_handoff): not a kernel's work
        where = runtime_device(plan, kernel)
        busy[where] += float(t["total_s"])
        if "cpu_total_s" in t:  # a simulated kernel also kept the host busy
            busy[HOST] += float(t["cpu_total_s"])
    devices = sorted({runtime_device(plan, k) for k in plan.placements} | {HOST})
    per_device = run_energy(meter, {d: _power(plan, local, d) for d in devices}, busy)
    return {"window_s": meter.seconds, "window": "the whole run: start-up, training and the final evaluation",
            "devices": per_device}
