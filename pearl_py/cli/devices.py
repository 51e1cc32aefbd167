"""``pearl devices``: the hardware catalogue and this machine's devices.

Example::

    $ pearl devices
    CPUs (per socket; one pearl_py process uses one core)
      epyc-7742                64 cores ...
"""
from __future__ import annotations

from pearl_py.estimate.calibration import Calibration, default_path
from pearl_py.platform import Catalogue, CpuSpec, FpgaSpec, GpuSpec, Platform
from pearl_py.platform.platform import build_platform


def devices_main() -> int:
    """List the catalogue (CPUs, GPUs, FPGAs, links, platforms) and this machine's devices."""
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
              f"{s.offchip_bandwidth_gbs:g} GB/s off-chip  host {s.host_link}")
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
    print(f"  energy counters: RAPL {'readable' if local.counters['rapl'] else 'absent'}, "
          f"NVML {'readable' if local.counters['nvml'] else 'absent'} -> energy is "
          f"{'measured' if any(local.counters.values()) else 'modelled'}")
    path = default_path()
    status = f"calibrated ({path})" if Calibration.load_default() else "not calibrated: run `pearl profile`"
    print(f"  CPU costs: {status}")
    return 0
