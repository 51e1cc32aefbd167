"""What a network costs as an hls4ml-style FPGA inference design: latency, II, DSP, LUT, FF, BRAM18K.

Each dense or conv2d layer is a matrix-vector product of its ``n_in`` inputs (a convolution: its
``kernel x kernel x channels`` window) with ``n_out`` weights columns, spread over
``ceil(n_in x n_out / R)`` multipliers at reuse factor R, as hls4ml lays it out (Duarte et al., JINST 2018);
a convolution computes its output pixels one after another. Multipliers map to DSPs or LUTs by operand
width (:func:`pearl_py.estimate.fpga_hls.arithmetic`, which the planner's FPGA kernels share); parameters in
``estimators/fpga_network.yaml``;
formulas and their sources in docs/cost-models.md, "FPGA designs".

Example::

    >>> spec = load_network_spec("examples/fpga/jet_tagger.yaml")
    >>> network_design(spec).as_dict()["dsp"]
    1344
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

from pearl_py.estimate.fpga_hls import arithmetic
from pearl_py.estimate.fpga_network_spec import Conv2dSpec, NetworkSpec, load_network_spec, output_shape
from pearl_py.platform.spec import check_keys
from pearl_py.platform.yamlsrc import CatalogueYaml
from pearl_py.resources import estimators_dir

_KEYS = ["dsp_min_bits", "dsp_a_bits", "dsp_b_bits", "mul_ns", "add_ns", "adder_lut_per_bit", "float_add_lut",
         "activation_lut_per_bit", "table_activations", "table_entries", "bram18k_bits", "bram18k_width"]

__all__ = ["NetworkDesign", "network_design", "load_network_spec"]


def load_params(path: str | Path | None = None) -> dict:
    """``estimators/fpga_network.yaml``, its keys checked."""
    doc = CatalogueYaml.load(path or estimators_dir() / "fpga_network.yaml")
    check_keys(doc.data, _KEYS, _KEYS, (), doc.error)
    return doc.data


@dataclass(frozen=True)
class NetworkDesign:
    """The figures an HLS synthesis report gives for a design (cycles at the spec's clock, resources used)."""

    latency_cycles: int
    ii_cycles: int
    dsp: int
    lut: int
    ff: int
    bram18k: int

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class _Gemm:
    """A layer as ``rows`` products of an ``n_in`` vector with an ``n_in x n_out`` matrix."""

    rows: int
    n_in: int
    n_out: int
    activation: str


def _gemms(spec: NetworkSpec) -> list[_Gemm]:
    shape, out = spec.input_shape, []
    for layer in spec.layers:
        nxt = output_shape(shape, layer)
        if isinstance(layer, Conv2dSpec):
            out.append(_Gemm(nxt[0] * nxt[1], layer.kernel ** 2 * shape[2], layer.filters, layer.activation))
        else:
            out.append(_Gemm(1, math.prod(shape), layer.units, layer.activation))
        shape = nxt
    return out


def network_design(spec: NetworkSpec, params: dict | None = None) -> NetworkDesign:
    """The design's figures under the formulas of docs/cost-models.md, "FPGA designs"."""
    p = params or load_params()
    board, prec, r, width = spec.board, spec.precision, spec.reuse_factor, spec.precision.width
    ar = arithmetic(prec, board, p, spec.clock_ns)
    mul, add_lut = ar.multiplier, ar.add_lut
    latency = ii = dsp = lut = ff = bram = 0
    for g in _gemms(spec):
        mults = math.ceil(g.n_in * g.n_out / r)
        adds = math.ceil((g.n_in - 1) * g.n_out / r)
        table = g.activation in p["table_activations"]
        if prec.is_float:
            row = ar.mul_cycles + ar.add_cycles * math.ceil(math.log2(max(g.n_in, 1))) if g.n_in > 1 \
                else ar.mul_cycles
        else:
            row = math.floor((p["mul_ns"] + p["add_ns"] * math.ceil(math.log2(max(g.n_in, 1)))) / spec.clock_ns)
        row += (r - 1) + (board.mem_read_latency if table else 0)
        steps = g.rows * r                              # pixels one after another, R cycles each
        latency += (g.rows - 1) * r + row + 1 if g.rows > 1 else row   # + the pixel loop's exit cycle
        ii = max(ii, steps)
        dsp += mults * mul.dsp                         # an fp32 multiplier's DSPs include its add
        lut += mults * mul.lut + adds * add_lut + round(g.n_out * width * p["activation_lut_per_bit"][g.activation])
        ff += width * g.n_out * row + (width * g.n_out * g.rows if g.rows > 1 else 0)
        if table:   # one table copy per two outputs read in the same cycle (dual-port BRAM), + softmax's inverse
            copies = math.ceil(g.n_out / 2) + (g.activation == "softmax")
            bram += copies * math.ceil(p["table_entries"] * width / p["bram18k_bits"])
        if spec.strategy == "resource" and r > 1:       # weights in BRAM: mults words of width bits, R deep
            depth = p["bram18k_bits"] // p["bram18k_width"]
            bram += math.ceil(mults * width / p["bram18k_width"]) * math.ceil(r / depth)
        if spec.io == "stream":                         # a dataflow process per layer and per activation layer
            processes = 1 + (g.activation != "linear")
            latency += processes
            ff += processes * width * g.n_out
    if spec.io == "stream":
        ii = max(ii, latency)
    return NetworkDesign(latency, ii, dsp, lut, ff, bram)
