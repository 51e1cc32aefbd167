"""`pearl fpga-design`'s model against published HLS synthesis reports: predicted vs published, per column.

Every published figure is a C-synthesis report of hls4ml's CI, as the repository keeps it
(github.com/fastmachinelearning/hls4ml, commit ef92ebdf2, test/pytest/baselines/<tool>/<version>/<test>.json;
the networks are those of test/pytest/test_keras_api.py): hls4ml's default precision ap_fixed<16,6>, reuse
factor 1, a 5 ns clock and hls4ml's default part xcvu13p-flga2577-2-e, the catalogue's bare part ``xcvu13p``
(devices/fpgas.yaml, DS890; :data:`AVAILABLE` holds the reports' Available* fields, which equal its capacity).
Latency and II are in cycles (the report's WorstLatency and IntervalMax). The error of a column is
``(predicted - published) / max(published, 1)``; the DSP and LUT shares are of that part.

Fitted vs checked: the activation LUTs per output bit (estimators/fpga_network.yaml) were calibrated on the
LUT column of designs C, E and F; the io_stream rule (one cycle per dataflow process, II = latency) was read
off the reports of B and D (their latency and II columns). Every other figure of every design only checks the
model.

Usage::

    /work/venv/bin/python benchmarks/fpga_published.py          # deterministic: no timing, ~1 s
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

from pearl_py.config.yaml_source import YamlDocument
from pearl_py.estimate.fpga_network import network_design
from pearl_py.estimate.fpga_network_spec import network_spec
from pearl_py.platform import Catalogue

COLUMNS = ("latency_cycles", "ii_cycles", "dsp", "lut", "ff", "bram18k")
SOURCE = "hls4ml@ef92ebdf2 test/pytest/baselines/"
PART = "xcvu13p"
AVAILABLE = {"dsp": 12288, "lut": 1728000, "ff": 3456000, "bram18k": 5376}
"""The Available* fields of every report: what the part holds (AvailableBRAM_18K is 2 per BRAM36)."""
SHARES = ("dsp", "lut")


@dataclass(frozen=True)
class Published:
    """A published design: its id, network (a `pearl fpga-design` spec's layers), directives, report file, figures."""

    id: str
    name: str
    layers: str
    io: str
    strategy: str
    report: str
    figures: dict[str, int]
    fitted: tuple[str, ...] = ()
    """Columns whose published figure a model parameter was fitted on."""


def _figures(latency, ii, dsp, lut, ff, bram):
    return dict(zip(COLUMNS, (latency, ii, dsp, lut, ff, bram)))


DENSE2_ELU = "[{input: [1]}, {dense: 2, activation: elu}]"
DENSE64 = "[{input: [1]}, {dense: 64, activation: %s}]"
CONV = "[{input: [28, 28, 3]}, {conv2d: 32, kernel: 4, stride: 4, padding: same}]"

DESIGNS = (
    Published("A", "Dense(2)+ELU, Vitis 2024.1", DENSE2_ELU, "parallel", "latency",
              "Vitis/2024.1/test_keras_api_test_dense_io_parallel-Vitis.json", _figures(3, 1, 2, 354, 145, 1)),
    Published("B", "Dense(2)+ELU, Vitis 2024.1", DENSE2_ELU, "stream", "latency",
              "Vitis/2024.1/test_keras_api_test_dense_io_stream-Vitis.json", _figures(4, 4, 2, 279, 110, 1),
              fitted=("latency_cycles", "ii_cycles")),
    Published("C", "Dense(64)+relu, Vitis 2024.1", DENSE64 % "relu", "parallel", "latency",
              "Vitis/2024.1/test_keras_api_test_activations_io_parallel-Vitis-relu.json",
              _figures(0, 1, 58, 2983, 18, 0), fitted=("lut",)),
    Published("D", "Dense(64)+relu, Vitis 2024.1", DENSE64 % "relu", "stream", "latency",
              "Vitis/2024.1/test_keras_api_test_activations_io_stream-Vitis-relu.json",
              _figures(2, 2, 59, 4043, 2064, 0), fitted=("latency_cycles", "ii_cycles")),
    Published("E", "Dense(64)+sigmoid, Vitis 2024.1", DENSE64 % "sigmoid", "parallel", "latency",
              "Vitis/2024.1/test_keras_api_test_activations_io_parallel-Vitis-sigmoid.json",
              _figures(3, 1, 56, 7825, 1689, 32), fitted=("lut",)),
    Published("F", "Dense(64)+elu, Vitis 2024.1", DENSE64 % "elu", "parallel", "latency",
              "Vitis/2024.1/test_keras_api_test_activations_io_parallel-Vitis-elu.json",
              _figures(3, 1, 59, 10082, 3865, 32), fitted=("lut",)),
    Published("G", "Conv2D(32, 4x4, /4) 28x28x3, Vitis 2024.1", CONV, "parallel", "resource",
              "Vitis/2024.1/test_keras_api_test_conv2d_io_parallel-Vitis-Resource-same-channels_last.json",
              _figures(52, 53, 792, 75413, 33150, 0)),
    Published("H", "Conv2D(32, 4x4, /4) 28x28x3, Vivado 2020.1", CONV, "parallel", "resource",
              "Vivado/2020.1/test_keras_api_test_conv2d_io_parallel-Vivado-Resource-same-channels_last.json",
              _figures(52, 49, 740, 86819, 52870, 0)),
    Published("I", "Dense(64)+sigmoid, Vitis 2024.1", DENSE64 % "sigmoid", "stream", "latency",
              "Vitis/2024.1/test_keras_api_test_activations_io_stream-Vitis-sigmoid.json",
              _figures(4, 4, 61, 8518, 3026, 32)),
)


def spec_text(design: Published) -> str:
    """The design as a `pearl fpga-design` spec."""
    return (f"part: {PART}\nclock_ns: 5\nprecision: ap_fixed<16,6>\nreuse_factor: 1\n"
            f"strategy: {design.strategy}\nio: {design.io}\nlayers: {design.layers}\n")


def error(predicted: int, published: int) -> float:
    """Relative error against the published figure (against 1 where it is 0: a count, not a ratio)."""
    return (predicted - published) / max(published, 1)


def part_capacity() -> dict[str, int]:
    """The catalogue part's DSP, LUT, FF and BRAM18K, as the reports' Available* fields count them."""
    part = Catalogue.load().parts[PART]
    return {"dsp": part.dsp, "lut": part.lut, "ff": part.ff, "bram18k": 2 * part.memories["bram36"].count}


def rows() -> list[dict]:
    """Per design: id, name, report, fitted columns, per column ``(predicted, published, error)``, and per
    :data:`SHARES` column ``(predicted, published)`` as a share of the part."""
    out, capacity = [], part_capacity()
    for d in DESIGNS:
        predicted = network_design(network_spec(YamlDocument.parse(spec_text(d), f"<design {d.id}>"))).as_dict()
        out.append({"id": d.id, "name": f"{d.name}, io_{d.io}, {d.strategy}", "report": SOURCE + d.report,
                    "fitted": d.fitted,
                    "columns": {c: (predicted[c], d.figures[c], error(predicted[c], d.figures[c])) for c in COLUMNS},
                    "shares": {c: (predicted[c] / capacity[c], d.figures[c] / capacity[c]) for c in SHARES}})
    return out


def summary(table: list[dict]) -> dict[str, tuple[float, float]]:
    """Per column: median and worst absolute error over the designs."""
    return {c: (statistics.median(abs(r["columns"][c][2]) for r in table),
                max(abs(r["columns"][c][2]) for r in table)) for c in COLUMNS}


def markdown(table: list[dict]) -> str:
    shares = [f"{c} % of {PART}" for c in SHARES]
    head = "| design | " + " | ".join([*COLUMNS, *shares]) + " |\n|---|" + "---|" * (len(COLUMNS) + len(SHARES)) + "\n"
    body = ""
    for r in table:
        cells = [f"{p} / {q} ({e:+.0%}){' *' if c in r['fitted'] else ''}" for c, (p, q, e) in r["columns"].items()]
        cells += [f"{p:.2%} / {q:.2%}" for p, q in r["shares"].values()]
        body += f"| {r['id']}: {r['name']} | " + " | ".join(cells) + " |\n"
    stats = summary(table)
    blank = " |" * len(SHARES)
    body += "| median abs error | " + " | ".join(f"{stats[c][0]:.0%}" for c in COLUMNS) + f" |{blank}\n"
    body += "| worst abs error | " + " | ".join(f"{stats[c][1]:.0%}" for c in COLUMNS) + f" |{blank}\n"
    return head + body


def main() -> None:
    if part_capacity() != AVAILABLE:
        raise SystemExit(f"the catalogue's {PART} {part_capacity()} differs from the reports' Available* {AVAILABLE}")
    table = rows()
    print(f"on {PART} (its capacity = the reports' Available* fields); modelled / published (error); "
          f"* = a parameter was fitted on this published figure\n")
    print(markdown(table))
    for r in table:
        print(f"{r['id']}: {r['report']}")


if __name__ == "__main__":
    main()
