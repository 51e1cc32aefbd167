"""``pearl fpga-design``: the table, exactly the --json keys, and a bad spec's one-line error with exit code 2."""
from __future__ import annotations

import json

import pytest

from pearl_py.cli import main

SPEC = """part: alveo-u250
clock_ns: 5
precision: ap_fixed<16,6>
reuse_factor: 1
strategy: latency
io: parallel
layers:
  - {input: [16]}
  - {dense: 64, activation: relu}
  - {dense: 5, activation: softmax}
"""


def test_json_has_exactly_the_report_keys(tmp_path, capsys):
    (tmp_path / "s.yaml").write_text(SPEC)
    assert main(["fpga-design", str(tmp_path / "s.yaml"), "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert list(figures) == ["latency_cycles", "ii_cycles", "dsp", "lut", "ff", "bram18k"]
    assert figures["dsp"] == 1344 and figures["ii_cycles"] == 1


def test_table(tmp_path, capsys):
    (tmp_path / "s.yaml").write_text(SPEC)
    assert main(["fpga-design", str(tmp_path / "s.yaml")]) == 0
    out = capsys.readouterr().out
    assert "(modelled)" in out and "1,344  10.94 % of 12,288" in out


def test_bare_parts_by_name_with_shares_of_their_own_fabric(tmp_path, capsys):
    """The designs of published reports were synthesized on bare parts: their shares are of that part's DS890 count."""
    for part, dsps in (("xcvu13p", 12288), ("xcvu9p", 6840)):
        (tmp_path / "s.yaml").write_text(SPEC.replace("alveo-u250", part))
        assert main(["fpga-design", str(tmp_path / "s.yaml")]) == 0
        out = capsys.readouterr().out
        assert f"{part}, 5 ns clock" in out and f"1,344  {100 * 1344 / dsps:.2f} % of {dsps:,}" in out


@pytest.mark.parametrize("edit, message", [
    (("part: alveo-u250\nclock_ns: 5", "part: xcvu9p\nclock_ns: 1"),
     "s.yaml:2: clock_ns: 1 ns is faster than xcvu9p's DSP limit of 1.29 ns (775 MHz, its catalogue entry)"),
    (("activation: relu", "activaton: relu"),
     "s.yaml:9: layers.1.activaton: unknown key 'activaton' (did you mean 'activation'?)"),
    (("ap_fixed<16,6>", "ap_fixd<16,6>"),
     "s.yaml:3: precision: must be float32, float16 or ap_fixed<W,I> (1 <= W <= 64), got 'ap_fixd<16,6>'"),
    (("reuse_factor: 1", "reuse_factor: 0"), "s.yaml:4: reuse_factor: must be a whole number > 0, got 0"),
    (("alveo-u250", "alveo-u999"), "s.yaml:1: part: unknown FPGA 'alveo-u999'; catalogue FPGAs: "),
    (("{dense: 5, activation: softmax}", "{conv2d: 5, kernel: 3}"),
     "s.yaml:10: layers.2: conv2d needs a [height, width, channels] input, got 1-D [64]"),
])
def test_bad_spec_exits_2_with_file_line_key(tmp_path, capsys, edit, message):
    (tmp_path / "s.yaml").write_text(SPEC.replace(*edit))
    assert main(["fpga-design", str(tmp_path / "s.yaml")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("pearl: error: ") and message in err and "\n" not in err


def test_pearl_devices_lists_the_parts_and_each_boards_training_precision(capsys):
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    assert "  alveo-u250 " in out and "trains float32" in out
    assert "FPGA parts (for pearl fpga-design; a platform needs a board)" in out
    assert "  xcvu9p                   6840 DSP   1182240 LUT  2160 bram36, 960 uram  DSP limit 775 MHz" in out
