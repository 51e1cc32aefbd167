"""What a report says about energy: a run's joules per device (measured or modelled, and why), and the plan's
energy figures' sources; devices whose figures are generic assumptions, in words.

Example::

    >>> energy_rows(result.to_dict())[0]
    ['cpu', '412 J', 'modelled', 'no RAPL zone under /sys/class/powercap (...)', '8.2 mJ', '121']
    >>> assumed_device_sentences(plan)
    ['gpu0 (NVIDIA H200 NVL) matched no catalogue entry: its figures are generic assumptions ...']
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any


if TYPE_CHECKING:
    from pearl_py.plan import Plan

IDLE_RULE = ("Idle power is counted for the devices a plan uses, for the whole run; devices it leaves unused are "
             "not counted (switched off or free for other work), so two plans on different numbers of devices "
             "differ by those devices' idle power.")
"""The rule by which a plan's idle power is summed (``Σ_{devices used} P_idle · T``, pearl_py/optimize/model.py)."""
ENERGY_HEADER = ["device", "energy", "source", "counter, or why modelled", "energy per sample", "samples per joule"]


def energy_rows(run: dict[str, Any]) -> list[list[str]]:
    """One row per device of a run's ``energy`` record (empty when the run was not metered)."""
    record = run.get("energy") or {}
    steps = max(run.get("env_steps", 0), 1)
    rows = []
    for name, entry in (record.get("devices") or {}).items():
        joules = float(entry["joules"])
        how = entry.get("counter") if entry["source"] == "measured" else entry.get("reason", "")
        rows.append([name, f"{joules:,.1f} J", entry["source"], how, f"{joules / steps * 1e3:.3g} mJ",
                     f"{steps / joules:,.1f}" if joules > 0 else "–"])
    return rows


def measured_any(run: dict[str, Any]) -> bool:
    """Whether a counter measured any device's energy over the run (else every figure is the power model's)."""
    return any(entry["source"] == "measured" for entry in ((run.get("energy") or {}).get("devices") or {}).values())


def energy_window(run: dict[str, Any]) -> str:
    """What the energy figures cover, in words."""
    record = run.get("energy") or {}
    return (f"Energy over {record.get('window_s', 0.0):.1f} s: {record.get('window', 'the run')}; measured where a "
            "counter reads the device (RAPL for CPU packages and their DRAM, NVML for GPUs: the whole package or "
            "board, whatever else ran on it), modelled elsewhere (idle + (peak - idle) x the run's measured "
            "utilization, docs/cost-models.md §6).")


def assumed_device_sentences(plan: Plan) -> list[str]:
    """A sentence per device of the plan's platform that matched no catalogue entry (its figures are assumed)."""
    info = plan.prediction.platform if plan.prediction is not None else None
    out = []
    for device in (info.devices if info is not None else ()):
        if str(device.get("model", "")).startswith("generic-"):
            out.append(f"{device['name']} matched no catalogue entry: its figures (speed, memory bandwidth, power) "
                       f"are generic assumptions ({device['model']}), not its datasheet's; add it to devices/ "
                       "(docs/catalogue.md) for figures that hold.")
    return out


def energy_source_sentence(plan: Plan) -> str:
    """Where the plan's energy figures come from, per source (measured per-kernel power, or the power model)."""
    measured = sorted({f"{k} on {p.device}" for k, p in plan.placements.items()
                       if (c := plan.prediction.cost(k, p.device, p.variant)) is not None
                       and c.energy_source == "measured"})
    if not measured:
        return ("Energy figures are modelled: the catalogue's idle and peak power with each call's latency "
                f"(no per-kernel power was measured on this machine's counters). {IDLE_RULE}")
    return (f"Energy of {', '.join(measured)} uses the dynamic power measured by `pearl profile` on this machine's "
            "counters (calibrated latency x measured watts); the rest is modelled from the catalogue's power. "
            + IDLE_RULE)
