"""RAPL reading on a fake powercap tree (incl. wrap-around) and the absent-counter path."""
from __future__ import annotations

from pearl_py.estimate.power import measure_call_energy
from pearl_py.platform.counters import EnergyMeter, NvmlCounter, RaplCounter


def _zone(root, name, energy, max_range=1_000_000):
    zone = root / name
    zone.mkdir(parents=True)
    (zone / "energy_uj").write_text(f"{energy}\n")
    (zone / "max_energy_range_uj").write_text(f"{max_range}\n")
    return zone


def test_rapl_reads_packages_not_subzones(tmp_path):
    _zone(tmp_path, "intel-rapl:0", 100)
    _zone(tmp_path, "intel-rapl:0:0", 50)
    rapl = RaplCounter(tmp_path)
    assert rapl.available() and rapl.read_uj() == {"intel-rapl:0": 100}


def test_rapl_delta_corrects_wraparound(tmp_path):
    _zone(tmp_path, "intel-rapl:0", 999_000)
    rapl = RaplCounter(tmp_path)
    assert rapl.delta_j({"intel-rapl:0": 999_000}, {"intel-rapl:0": 1_000}) == 0.002


def test_meter_measures_with_rapl(tmp_path):
    zone = _zone(tmp_path, "intel-rapl:0", 0)
    meter = EnergyMeter(RaplCounter(tmp_path), NvmlCounter())

    def work():
        (zone / "energy_uj").write_text(str(int((zone / "energy_uj").read_text()) + 500_000))

    joules, source = measure_call_energy(work, calls=4, meter=meter)
    assert source == "measured" and joules == 0.5


def test_absent_counters_fall_back_to_modelled(tmp_path):
    meter = EnergyMeter(RaplCounter(tmp_path / "missing"), NvmlCounter())
    assert not meter.statuses["cpu"].measured and not meter.readers
    joules, source = measure_call_energy(lambda: None, calls=3, meter=meter)
    assert (joules, source) == (None, "modelled")


def test_unreadable_zone_is_skipped(tmp_path):
    zone = _zone(tmp_path, "intel-rapl:1", 0)
    (zone / "energy_uj").write_text("not a number")
    assert not RaplCounter(tmp_path).available()
