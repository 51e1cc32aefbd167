"""Detect this machine as a :class:`Platform`: CPU (matched to the catalogue), memory, CUDA GPUs, counters.

Example::

    >>> p = detect_local_platform()
    >>> p.device("cpu").spec.cores == len(os.sched_getaffinity(0))
    True
    >>> p.counters
    {'rapl': False, 'nvml': False}
"""
from __future__ import annotations

import dataclasses
import os
import platform as _pyplatform
from pathlib import Path

from pearl_py.platform.catalogue import Catalogue
from pearl_py.platform.counters import NvmlCounter, RaplCounter
from pearl_py.platform.platform import Device, Platform
from pearl_py.platform.spec import CpuSpec, GpuSpec

GENERIC_CPU = {
    # Used only when the CPU matches no catalogue entry; every figure is an assumption.
    "mem_bandwidth_gbs": 20.0,     # one-core STREAM-class figure (see spec.SINGLE_CORE_BANDWIDTH_GBS)
    "dram_latency_ns": 100.0,      # typical server DRAM load latency
    "idle_w_per_core": 2.0,        # SPECpower-style idle share
    "peak_w_per_core": 8.0,        # ~TDP / cores of current server parts
    "dispatch_overhead_us": 8.0,   # eager PyTorch op dispatch
}


def read_cpuinfo(path: Path = Path("/proc/cpuinfo")) -> dict[str, str]:
    """Fields of the first processor block of ``/proc/cpuinfo`` (empty dict if unreadable)."""
    try:
        block = path.read_text().split("\n\n")[0]
    except OSError:
        return {}
    fields = {}
    for line in block.splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return fields


def memory_gb(path: Path = Path("/proc/meminfo"), field: str = "MemTotal") -> float:
    """Memory in GB from ``/proc/meminfo``: ``MemTotal`` (or ``MemAvailable``: what a new allocation may take
    without swapping); the sysconf total as the fallback."""
    try:
        for line in path.read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024 / 1e9
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9


def match_cpu(info: dict[str, str], catalogue: Catalogue) -> CpuSpec | None:
    """The catalogue CPU whose ``cpuinfo_match`` (vendor_id, family, model) equals this CPU's."""
    mine = {"vendor_id": info.get("vendor_id"), "family": _int(info.get("cpu family")), "model": _int(info.get("model"))}
    for spec in catalogue.devices.values():
        if isinstance(spec, CpuSpec) and spec.cpuinfo_match and all(
                mine.get(k) == v for k, v in spec.cpuinfo_match.items()):
            return spec
    return None


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def local_cpu_spec(catalogue: Catalogue, info: dict[str, str] | None = None) -> CpuSpec:
    """This CPU: catalogue figures of the matching entry with the detected cores and memory."""
    info = read_cpuinfo() if info is None else info
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    model_name = info.get("model name") or _pyplatform.processor() or "unknown CPU"
    matched = match_cpu(info, catalogue)
    if matched is not None:
        share = cores / matched.cores  # a VM or a cpuset gets this share of the socket's power
        return dataclasses.replace(matched, cores=cores, memory_gb=round(memory_gb(), 2),
                                   idle_w=matched.idle_w * share, peak_w=matched.peak_w * share,
                                   model_name=f"{model_name} (as {matched.name})")
    flags = set(info.get("flags", "").split())
    flops_per_cycle = 32 if "avx512f" in flags else 16 if "fma" in flags else 8
    ghz = float(info.get("cpu MHz", "2000")) / 1000
    return CpuSpec(
        vendor=info.get("vendor_id", "unknown"), model_name=model_name, cores=cores, base_ghz=ghz,
        flops_per_cycle=flops_per_cycle, mem_bandwidth_gbs=GENERIC_CPU["mem_bandwidth_gbs"],
        memory_gb=round(memory_gb(), 2), dram_latency_ns=GENERIC_CPU["dram_latency_ns"],
        idle_w=GENERIC_CPU["idle_w_per_core"] * cores, peak_w=GENERIC_CPU["peak_w_per_core"] * cores,
        dispatch_overhead_us=GENERIC_CPU["dispatch_overhead_us"], name="generic-cpu",
    )


def local_gpu_specs(catalogue: Catalogue) -> list[GpuSpec]:
    """CUDA devices visible to torch, each matched to the catalogue by ``name_match``."""
    try:
        import torch
    except ImportError:
        return []
    if not torch.cuda.is_available():
        return []
    specs = []
    for index in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(index)
        matched = next((s for s in catalogue.devices.values()
                        if isinstance(s, GpuSpec) and s.name_match and s.name_match in props.name), None)
        if matched is None:
            # Unknown card: 128 fp32 lanes per SM at 1.5 GHz (Ampere/Ada SM), PCIe Gen4; assumed.
            matched = GpuSpec(vendor="nvidia", model_name=props.name,
                              fp32_tflops=props.multi_processor_count * 128 * 2 * 1.5e9 / 1e12,
                              mem_bandwidth_gbs=500.0, memory_gb=props.total_memory / 1e9, idle_w=30.0,
                              peak_w=300.0, launch_overhead_us=10.0, host_link="pcie-gen4-x16", name="generic-gpu")
        specs.append(dataclasses.replace(matched, memory_gb=round(props.total_memory / 1e9, 2)))
    return specs


def detect_local_platform(catalogue: Catalogue | None = None) -> Platform:
    """The ``local`` platform: one CPU device ``cpu`` plus ``gpu0``..``gpuN`` on their host links."""
    catalogue = catalogue or Catalogue.load()
    devices = {"cpu": Device("cpu", local_cpu_spec(catalogue), local=True)}
    links = []
    for i, spec in enumerate(local_gpu_specs(catalogue)):
        devices[f"gpu{i}"] = Device(f"gpu{i}", spec, local=True)
        links.append(("cpu", f"gpu{i}", catalogue.link_spec(spec.host_link)))
    counters = {"rapl": RaplCounter().available(), "nvml": NvmlCounter().available()}
    return Platform("local", devices, links, description=f"this machine ({_pyplatform.node()})", counters=counters)
