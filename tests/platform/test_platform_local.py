"""Platform.local(): detected cores and memory, catalogue matching, counters absent in this VM."""
from __future__ import annotations

import os

from pearl_py.platform import Catalogue, Platform
from pearl_py.platform.local import local_cpu_spec, match_cpu


def test_local_platform_detects_cores_and_counters():
    p = Platform.load("local")
    cpu = p.device("cpu")
    assert cpu.local and cpu.spec.cores == len(os.sched_getaffinity(0))
    assert cpu.spec.memory_gb > 0
    assert set(p.counters) == {"rapl", "nvml"}


def test_cpu_matching_by_family_and_model():
    cat = Catalogue.load()
    genoa = {"vendor_id": "AuthenticAMD", "cpu family": "25", "model": "17", "model name": "AMD EPYC"}
    assert match_cpu(genoa, cat).name == "epyc-9654"
    clx = {"vendor_id": "GenuineIntel", "cpu family": "6", "model": "85", "model name": "Intel Xeon"}
    assert match_cpu(clx, cat).name == "xeon-cascadelake-vm"


def test_matched_spec_takes_the_core_share_of_power():
    cat = Catalogue.load()
    info = {"vendor_id": "AuthenticAMD", "cpu family": "25", "model": "17", "model name": "AMD EPYC"}
    spec = local_cpu_spec(cat, info)
    share = spec.cores / 96
    assert abs(spec.peak_w - 360 * share) < 1e-9 and spec.name == "epyc-9654"


def test_unknown_cpu_gets_a_generic_spec_from_its_flags():
    info = {"vendor_id": "Other", "cpu family": "1", "model": "1", "model name": "Mystery", "cpu MHz": "3000",
            "flags": "fpu fma avx2"}
    spec = local_cpu_spec(Catalogue.load(), info)
    assert spec.name == "generic-cpu" and spec.flops_per_cycle == 16 and spec.base_ghz == 3.0
