"""`pearl fpga-design`'s model by hand (precision, reuse factor, strategy, io, conv2d); the published table's data."""
from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

from pearl_py.config.yaml_source import YamlDocument
from pearl_py.estimate.fpga_hls import Multiplier, Precision, multiplier
from pearl_py.estimate.fpga_network import load_params, network_design
from pearl_py.estimate.fpga_network_spec import network_spec

P = load_params()
JET = "[{input: [16]}, {dense: 64, activation: relu}, {dense: 5, activation: softmax}]"


def design(layers=JET, precision="ap_fixed<16,6>", reuse=1, strategy="latency", io="parallel", part="alveo-u250"):
    text = (f"part: {part}\nclock_ns: 5\nprecision: {precision}\nreuse_factor: {reuse}\nstrategy: {strategy}\n"
            f"io: {io}\nlayers: {layers}\n")
    return network_design(network_spec(YamlDocument.parse(text, "spec.yaml"))).as_dict()


def test_precision_picks_dsp_or_lut_multipliers():
    assert Precision.parse("ap_fixed< 8 , 3 >").width == 8 and Precision.parse("ap_fixd<8,3>") is None
    assert Precision.parse("ap_fixed<65,3>") is None and Precision.parse("float16").mantissa_bits == 11
    assert multiplier(Precision.parse("ap_fixed<8,3>"), 9, 27, 18, 5) == Multiplier(0, 32)    # 8 x 8 / 2 LUTs
    assert multiplier(Precision.parse("ap_fixed<9,3>"), 9, 27, 18, 5) == Multiplier(1, 0)
    assert multiplier(Precision.parse("ap_fixed<24,8>"), 9, 27, 18, 5) == Multiplier(2, 0)    # 27 x 18 tiles
    assert multiplier(Precision.parse("float16"), 9, 27, 18, 5) == Multiplier(1, 0)
    assert multiplier(Precision.parse("float32"), 9, 27, 18, 5) == Multiplier(5, 0)           # the part's MAC


def test_jet_tagger_by_hand():
    lut = P["activation_lut_per_bit"]
    assert design() == {
        "latency_cycles": (7 // 5) + (9 // 5 + 2),     # (3 ns mul + 4 adds) / 5 ns; (3 + 6 adds) / 5 + a table read
        "ii_cycles": 1,
        "dsp": 16 * 64 + 64 * 5,
        "lut": 15 * 64 * 16 + round(64 * 16 * lut["relu"]) + 63 * 5 * 16 + round(5 * 16 * lut["softmax"]),
        "ff": 16 * 64 * 1 + 16 * 5 * 3,                # outputs registered per cycle of each layer
        "bram18k": math.ceil(5 / 2) + 1,               # exp table per two outputs, one inverse table
    }


def test_narrow_fixed_point_moves_multipliers_to_luts():
    wide, narrow = design(precision="ap_fixed<16,6>"), design(precision="ap_fixed<8,3>")
    assert narrow["dsp"] == 0 and wide["dsp"] == 1344
    assert narrow["lut"] - wide["lut"] < 1344 * 32     # its multipliers' LUTs, less its narrower adders
    assert design(precision="float32")["dsp"] == 1344 * 5


def test_reuse_factor_sets_ii_and_multipliers():
    d = design(reuse=4)
    assert d["ii_cycles"] == 4 and d["dsp"] == 1024 // 4 + 320 // 4
    assert d["latency_cycles"] == design()["latency_cycles"] + 2 * 3          # R - 1 cycles per layer
    weights = math.ceil(256 * 16 / 36) + math.ceil(80 * 16 / 36)   # 256 and 80 weights read per cycle, 36-bit BRAMs
    assert design(reuse=4, strategy="resource")["bram18k"] == d["bram18k"] + weights
    assert d["bram18k"] == 4


def test_stream_io_and_conv2d():
    stream = design(io="stream")
    assert stream["latency_cycles"] == design()["latency_cycles"] + 4          # dense + activation processes x 2
    assert stream["ii_cycles"] == stream["latency_cycles"]
    conv = design("[{input: [28, 28, 3]}, {conv2d: 32, kernel: 4, stride: 4, padding: same}]", strategy="resource")
    assert conv["dsp"] == 4 * 4 * 3 * 32 and conv["ii_cycles"] == 7 * 7
    assert conv["latency_cycles"] == 48 + (3 + 6) // 5 + 1                   # last pixel's issue, row, loop exit
    valid = design("[{input: [28, 28, 3]}, {conv2d: 8, kernel: 3, padding: valid}, {dense: 10}]")
    assert valid["ii_cycles"] == 26 * 26 and valid["dsp"] == 27 * 8 + 26 * 26 * 8 * 10


_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "fpga_published.py"


@pytest.mark.skipif(not _PATH.exists(), reason="benchmarks/ is not shipped with an installed package")
def test_published_table_errors_come_from_the_cited_figures():
    spec = importlib.util.spec_from_file_location("fpga_published", _PATH)
    bench = sys.modules["fpga_published"] = importlib.util.module_from_spec(spec)   # dataclasses look it up
    spec.loader.exec_module(bench)
    table = bench.rows()
    assert len(table) >= 6 and len({r["report"] for r in table}) == len(table)
    for row, published in zip(table, bench.DESIGNS):
        assert row["report"].endswith(".json") and set(row["columns"]) == set(bench.COLUMNS)
        for column, (predicted, figure, err) in row["columns"].items():
            assert figure == published.figures[column]
            assert err == pytest.approx((predicted - figure) / max(figure, 1))
    stats = bench.summary(table)
    assert stats["dsp"][1] == max(abs(r["columns"]["dsp"][2]) for r in table)
    assert bench.part_capacity() == bench.AVAILABLE    # the reports' Available* fields are the catalogue's xcvu13p
    assert table[0]["shares"]["dsp"] == (table[0]["columns"]["dsp"][0] / 12288, table[0]["columns"]["dsp"][1] / 12288)
    lines = bench.markdown(table).splitlines()
    assert len(lines) == 2 + len(table) + 2 and lines[-1].startswith("| worst abs error |")
