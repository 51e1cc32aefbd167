"""``pearl devices``: the hardware catalogue and this machine's devices.

Example::

    $ pearl devices
    CPUs (per socket; one pearl_py process uses one core)
      epyc-7742                64 cores ...
    ...
    This machine (local)
      cpu                    AMD EPYC 9B14 (as epyc-9b14) (2 cores, 25.3 GB)
      energy, per device:
        cpu                  modelled (no RAPL zone under /sys/class/powercap (...))
      costs, per device:
        cpu                  calibrated (~/.cache/pearl_py/calibration-1a2b3c4d5e6f.json)
"""
from __future__ import annotations

from pearl_py.estimate.calibration import Calibration, default_path
from pearl_py.estimate.calibration import calibrated_gpu
from pearl_py.platform import Catalogue, CpuSpec, FpgaSpec, GpuSpec, Platform
from pearl_py.platform.energy import energy_statuses
from pearl_py.platform.kinds import device_kind
from pearl_py.platform.platform import Device, build_platform


def devices_main() -> int:
    """List the catalogue (CPUs, GPUs, FPGAs, FPGA parts, links, platforms) and this machine's devices."""
    catalogue = Catalogue.load()
    specs = catalogue.devices.values()
    print("CPUs (per socket; one pearl_py process uses one core)")
    for s in (s for s in specs if isinstance(s, CpuSpec)):
        print(f"  {s.name:<22} {s.cores:>4} cores  {s.core_peak_flops / 1e9:6.1f} GFLOP/s/core  "
              f"{s.mem_bandwidth_gbs:6.1f} GB/s  {s.idle_w:g}-{s.peak_w:g} W  {s.model_name}")
    print("GPUs")
    for s in (s for s in specs if isinstance(s, GpuSpec)):
        print(f"  {s.name:<22} {s.fp32_tflops:6.1f} TFLOP/s fp32  {s.mem_bandwidth_gbs:6.0f} GB/s  "
              f"{s.memory_gb:g} GB  {s.idle_w:g}-{s.peak_w:g} W  host {s.host_link}")
    print("FPGAs")
    for s in (s for s in specs if isinstance(s, FpgaSpec)):
        rams = ", ".join(f"{m.count} {k}" for k, m in s.memories.items())
        print(f"  {s.name:<22} {s.dsp:>6} DSP  {s.lut:>8} LUT  {rams}  {s.clock_mhz:g} MHz  "
              f"{s.offchip_bandwidth_gbs:g} GB/s off-chip  host {s.host_link}  trains {s.training_precision.text}")
    print("FPGA parts (for pearl fpga-design; a platform needs a board)")
    for s in catalogue.parts.values():
        rams = ", ".join(f"{m.count} {k}" for k, m in s.memories.items())
        print(f"  {s.name:<22} {s.dsp:>6} DSP  {s.lut:>8} LUT  {rams}  DSP limit {s.fmax_mhz:g} MHz  {s.model_name}")
    print("Links")
    for name, link in catalogue.links.items():
        print(f"  {name:<22} {link.bandwidth_gbs:8.1f} GB/s  {link.latency_us:6.1f} us")
    print("Platforms")
    for name, entry in catalogue.platforms.items():
        platform = build_platform(entry, catalogue)
        kinds = ", ".join(f"{len(platform.by_kind(k))} {k}" for k in ("cpu", "gpu", "fpga") if platform.by_kind(k))
        print(f"  {name:<22} {kinds:<24} {platform.description}")
    local = Platform.local()
    print("This machine (local)")
    for device in local:
        extra = f"{device.spec.cores} cores, {device.spec.memory_gb:g} GB" if device.kind == "cpu" else \
            f"{device.spec.memory_gb:g} GB"
        print(f"  {device.name:<22} {device.spec.model_name} ({extra})")
    print("  energy, per device:")
    for name, status in energy_statuses(local).items():
        print(f"    {name:<20} {status.describe()}")
    calibration = Calibration.load_default()
    print("  costs, per device:")
    for device in local:
        print(f"    {device.name:<20} {cost_status(calibration, device)}")
    return 0


def cost_status(calibration: Calibration | None, device: Device) -> str:
    """How this machine's ``device`` is costed: from ``pearl profile``'s calibration, or modelled and why."""
    path = default_path()
    if calibration is None:
        return "modelled (roofline): not calibrated: run `pearl profile`"
    if device_kind(device.kind).device_runtime.calibrated_per_model:
        prefix = calibrated_gpu(calibration, device)
        if prefix is None:
            return f"modelled (roofline): the calibration ({path}) has no model of this GPU; run `pearl profile`"
        return f"calibrated ({path}, {prefix}'s models)"
    return f"calibrated ({path})"
