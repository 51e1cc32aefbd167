"""Energy counters per device on fake sysfs and a fake NVML: what is read, what is modelled and why, wraps, windows."""
from __future__ import annotations

import dataclasses
import os

import pytest
from fake_counters import FakeNvml, add_uj, rapl_zone

from pearl_py.platform.counters import (
    CounterStatus,
    EnergyMeter,
    NvmlCounter,
    RaplCounter,
    rapl_reader,
)
from pearl_py.platform.energy import (
    energy_statuses,
    local_readers,
    modelled_joules,
    run_energy,
)
from pearl_py.platform.platform import Device, Platform
from pearl_py.platform.spec import GpuSpec

GPU = GpuSpec(vendor="nvidia", model_name="NVIDIA L4 (as l4)", fp32_tflops=30.3, mem_bandwidth_gbs=300, memory_gb=24,
              idle_w=16, peak_w=72, launch_overhead_us=9, host_link="pcie-gen4-x16", name="l4")


def machine(gpus: int = 1) -> Platform:
    local = Platform.local()
    devices = {"cpu": local.devices["cpu"]}
    for i in range(gpus):
        devices[f"gpu{i}"] = Device(f"gpu{i}", GPU, local=True)
    return Platform("local", devices, [])


def test_rapl_reads_packages_and_their_dram_but_not_psys_or_cores(tmp_path):
    rapl_zone(tmp_path, "intel-rapl:0", 10, "package-0")
    rapl_zone(tmp_path, "intel-rapl:0:0", 5, "core")
    rapl_zone(tmp_path, "intel-rapl:0:1", 7, "dram")
    rapl_zone(tmp_path, "intel-rapl:1", 99, "psys")
    rapl = RaplCounter(tmp_path)
    assert rapl.read_uj() == {"intel-rapl:0": 10, "intel-rapl:0:1": 7}
    assert rapl.status() == CounterStatus(True, "RAPL package-0 (intel-rapl:0) + dram (intel-rapl:0:1)")


def test_rapl_says_why_it_cannot_read(tmp_path):
    assert "no RAPL zone under" in RaplCounter(tmp_path / "absent").status().reason
    zone = rapl_zone(tmp_path, "intel-rapl:0", 10, "package-0")
    os.chmod(zone / "energy_uj", 0)
    if os.access(zone / "energy_uj", os.R_OK):  # root reads anything: make the file unreadable another way
        (zone / "energy_uj").unlink()
        (zone / "energy_uj").mkdir()
    status = RaplCounter(tmp_path).status()
    assert not status.measured and "not readable by this user" in status.reason


def test_the_powercap_root_comes_from_the_environment(tmp_path, monkeypatch):
    rapl_zone(tmp_path, "intel-rapl:0", 10, "package-0")
    monkeypatch.setenv("PEARL_POWERCAP_ROOT", str(tmp_path))
    assert RaplCounter().status().measured


def test_a_meter_counts_every_wrap_by_polling(tmp_path):
    zone = rapl_zone(tmp_path, "intel-rapl:0", 900_000, "package-0", max_range=1_000_000)
    meter = EnergyMeter(readers={"cpu": rapl_reader(RaplCounter(tmp_path))}, poll_s=0)  # polled by hand below
    with meter:
        for _ in range(3):  # 3 x 0.6 J: the counter wraps twice; one reading per wrap catches both
            add_uj(zone, 600_000)
            meter.sample()
    assert meter.by_device["cpu"] == pytest.approx(1.8) and meter.source == "measured"


def test_nvml_matches_gpus_by_uuid_and_says_which_cannot_count():
    nvml = NvmlCounter(FakeNvml([("GPU-bbbb", "NVIDIA L4", 5_000), ("GPU-aaaa", "Tesla P100", None)]))
    assert nvml.available()
    newer, older = nvml.device_for("bbbb", 7), nvml.device_for("aaaa", 0)  # torch gives the UUID without "GPU-"
    assert (newer.index, older.index) == (0, 1)
    assert nvml.status(newer) == CounterStatus(True, "NVML total energy of NVIDIA L4 (GPU-bbbb)")
    assert not nvml.status(older).measured and "Volta or newer" in nvml.status(older).reason
    assert nvml.read_mj(newer) == 5_000


def test_without_nvidia_ml_py_the_gpu_is_modelled_and_says_how_to_measure(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pynvml", None)
    status = NvmlCounter().status(None)
    assert not status.measured and 'pip install ".[energy]"' in status.reason


def test_statuses_per_device_measured_with_fakes_modelled_without(tmp_path):
    rapl_zone(tmp_path, "intel-rapl:0", 0, "package-0")
    nvml = NvmlCounter(FakeNvml([("GPU-1234", "NVIDIA L4", 0)]))
    measured = energy_statuses(machine(), local_readers(machine(), RaplCounter(tmp_path), nvml, lambda i: "1234"))
    assert measured["cpu"].describe() == "measured (RAPL package-0 (intel-rapl:0))"
    assert measured["gpu0"].describe() == "measured (NVML total energy of NVIDIA L4 (GPU-1234))"
    none = energy_statuses(machine(), local_readers(machine(), RaplCounter(tmp_path / "absent"),
                                                    NvmlCounter(FakeNvml([])), lambda i: "1234"))
    assert none["cpu"].describe().startswith("modelled (no RAPL zone under")
    assert none["gpu0"].describe() == "modelled (NVML lists no GPU with this device's UUID)"


def test_run_energy_marks_each_device_measured_or_modelled(tmp_path):
    zone = rapl_zone(tmp_path, "intel-rapl:0", 0, "package-0")
    fake = FakeNvml([("GPU-1234", "NVIDIA L4", 1_000)])
    readers = local_readers(machine(), RaplCounter(tmp_path / "absent"), NvmlCounter(fake), lambda i: "1234")
    with EnergyMeter(readers=readers, poll_s=0) as meter:
        fake.add_mj(0, 30_000)   # 30 J on the GPU
        add_uj(zone, 123)        # an unread tree: the CPU is modelled
    record = run_energy(meter, {"cpu": {"idle_w": 10.0, "peak_w": 50.0, "units": 2},
                                "gpu0": {"idle_w": 16.0, "peak_w": 72.0, "units": 1}}, {"cpu": 3.0})
    assert record["gpu0"]["source"] == "measured" and record["gpu0"]["joules"] == pytest.approx(30.0)
    assert record["cpu"]["source"] == "modelled" and "no RAPL zone" in record["cpu"]["reason"]
    assert record["cpu"]["joules"] == pytest.approx(modelled_joules(10.0, 50.0, 2, 3.0, meter.seconds))


def test_modelled_joules_is_idle_plus_the_busy_share():
    assert modelled_joules(10.0, 50.0, units=2, busy_s=5.0, window_s=10.0) == pytest.approx(10 * (10 + 40 * 0.25))
    assert modelled_joules(10.0, 50.0, units=1, busy_s=50.0, window_s=10.0) == pytest.approx(500.0)  # capped at 1
    assert dataclasses.is_dataclass(CounterStatus)
