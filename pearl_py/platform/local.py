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
import re
from pathlib import Path

from pearl_py.platform.catalogue import Catalogue, shipped_catalogue
from pearl_py.platform.counters import NvmlCounter, RaplCounter
from pearl_py.platform.platform import Device, Platform
from pearl_py.platform.runtimes import CUDA
from pearl_py.platform.spec import CpuSpec, GpuSpec
from pearl_py.platform.yamlsrc import CatalogueError

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
    return {key.strip(): value.strip() for key, _, value in (line.partition(":") for line in block.splitlines())}


def memory_gb(path: Path = Path("/proc/meminfo")) -> float:
    """Total memory in GB from ``/proc/meminfo`` (sysconf fallback)."""
    total = _meminfo_bytes("MemTotal", path)
    return total / 1e9 if total is not None else os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9


def available_memory_bytes(path: Path = Path("/proc/meminfo")) -> float:
    """Bytes that can be allocated now without swapping: ``MemAvailable`` (the kernel's estimate; free pages
    where the kernel is older than 3.14)."""
    available = _meminfo_bytes("MemAvailable", path)
    return float(available) if available is not None else \
        float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"))


def shared_memory_bytes(path: Path = Path("/dev/shm")) -> float:
    """Free bytes of the shared-memory filesystem, where the parallel runtime's segments live (inf: none there)."""
    try:
        stat = os.statvfs(path)
    except OSError:
        return float("inf")
    return float(stat.f_bavail * stat.f_frsize)


def usable_cores() -> int:
    """Cores this process may run on: its CPU affinity (a cpuset or ``taskset`` limits it), else every CPU."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _meminfo_bytes(field: str, path: Path) -> int | None:
    try:
        for line in path.read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


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


def local_cpu_spec(catalogue: Catalogue, info: dict[str, str] | None = None, cores: int | None = None,
                   memory: float | None = None) -> CpuSpec:
    """This CPU (or the one ``info`` describes): catalogue figures of the matching entry with ``cores`` and
    ``memory`` GB (default: this process's usable cores and this machine's memory)."""
    info = read_cpuinfo() if info is None else info
    cores = usable_cores() if cores is None else cores
    memory = round(memory_gb(), 2) if memory is None else memory
    model_name = info.get("model name") or _pyplatform.processor() or "unknown CPU"
    matched = match_cpu(info, catalogue)
    if matched is not None:
        share = cores / matched.cores  # a VM or a cpuset gets this share of the socket's power
        return dataclasses.replace(matched, cores=cores, memory_gb=memory,
                                   idle_w=matched.idle_w * share, peak_w=matched.peak_w * share,
                                   model_name=f"{model_name} (as {matched.name})")
    flags = set(info.get("flags", "").split())
    flops_per_cycle = 32 if "avx512f" in flags else 16 if "fma" in flags else 8
    ghz = float(info.get("cpu MHz", "2000")) / 1000
    return CpuSpec(
        vendor=info.get("vendor_id", "unknown"), model_name=model_name, cores=cores, base_ghz=ghz,
        flops_per_cycle=flops_per_cycle, mem_bandwidth_gbs=GENERIC_CPU["mem_bandwidth_gbs"],
        memory_gb=memory, dram_latency_ns=GENERIC_CPU["dram_latency_ns"],
        idle_w=GENERIC_CPU["idle_w_per_core"] * cores, peak_w=GENERIC_CPU["peak_w_per_core"] * cores,
        dispatch_overhead_us=GENERIC_CPU["dispatch_overhead_us"], name="generic-cpu",
    )


GENERIC_GPU = "generic-gpu"
"""Catalogue name of a CUDA device no entry matches: every figure of its spec is an assumption."""


def match_gpu(name: str, catalogue: Catalogue) -> GpuSpec | None:
    """The catalogue GPU whose ``name_match`` (a regular expression) matches the whole CUDA device ``name``,
    case-insensitive; None if none does. Two entries matching one name is a catalogue error naming both."""
    found = [s for s in catalogue.devices.values()
             if isinstance(s, GpuSpec) and s.name_match and re.fullmatch(s.name_match, name.strip(), re.IGNORECASE)]
    if len(found) > 1:
        raise CatalogueError(f"the CUDA device name {name!r} matches the name_match of several GPUs: "
                             f"{', '.join(s.name for s in found)}; make their name_match patterns exclusive")
    return found[0] if found else None


def generic_gpu_spec(name: str, multiprocessors: int, memory_bytes: float) -> GpuSpec:
    """A CUDA device that matches no catalogue entry: assumed figures (128 fp32 lanes per SM at 1.5 GHz, an
    Ampere/Ada SM; 500 GB/s; 30-300 W; PCIe Gen4), named ``generic-gpu`` so reports say they are assumed."""
    return GpuSpec(vendor="nvidia", model_name=f"{name} (no catalogue entry: generic, assumed figures)",
                   fp32_tflops=multiprocessors * 128 * 2 * 1.5e9 / 1e12, mem_bandwidth_gbs=500.0,
                   memory_gb=round(memory_bytes / 1e9, 2), idle_w=30.0, peak_w=300.0, launch_overhead_us=10.0,
                   host_link="pcie-gen4-x16", name=GENERIC_GPU)


def local_gpu_specs(catalogue: Catalogue) -> list[GpuSpec]:
    """CUDA devices visible to torch, each matched to the catalogue by ``name_match`` (:func:`match_gpu`); the
    spec's ``model_name`` starts with torch's name of the device."""
    try:
        import torch
    except ImportError:
        return []
    specs = []
    for index in range(CUDA.device_count()):
        props = torch.cuda.get_device_properties(index)
        matched = match_gpu(props.name, catalogue)
        if matched is None:
            specs.append(generic_gpu_spec(props.name, props.multi_processor_count, props.total_memory))
            continue
        specs.append(dataclasses.replace(matched, memory_gb=round(props.total_memory / 1e9, 2),
                                         model_name=f"{props.name} (as {matched.name})"))
    return specs


def detect_local_platform(catalogue: Catalogue | None = None) -> Platform:
    """The ``local`` platform: one CPU device ``cpu`` plus ``gpu0``..``gpuN`` on their host links."""
    catalogue = catalogue or shipped_catalogue()
    devices = {"cpu": Device("cpu", local_cpu_spec(catalogue), local=True)}
    links = []
    for i, spec in enumerate(local_gpu_specs(catalogue)):
        devices[f"gpu{i}"] = Device(f"gpu{i}", spec, local=True)
        links.append(("cpu", f"gpu{i}", catalogue.link_spec(spec.host_link)))
    counters = {"rapl": RaplCounter().available(), "nvml": NvmlCounter().available()}
    return Platform("local", devices, links, description=f"this machine ({_pyplatform.node()})", counters=counters)
