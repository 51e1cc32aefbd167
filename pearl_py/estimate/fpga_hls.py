"""HLS-style primitives: pipelined loops, initiation intervals, dense-layer mapping, RAM allocation.

The formulas are those of Vitis HLS (UG1399) and COMBA (Zhao et al., ICCAD 2017);
dense layers map like hls4ml (Duarte et al., JINST 2018). See docs/cost-models.md.

Example::

    >>> pipelined_cycles(trip=100, ii=2, depth=10)         # 10 + 2 x 99
    208
    >>> res_mii(accesses=4, banks=1, ports=2), rec_mii(latency=5, distance=1)
    (2, 5)
    >>> DenseOp(n_in=4, n_out=8, rows=16, reuse=4, fmul_latency=3, fadd_latency=3).multipliers
    8
    >>> Precision.parse("ap_fixed<8,3>").width, Precision.parse("float16").mantissa_bits
    (8, 11)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from pearl_py.platform.precision import Precision
from pearl_py.platform.spec import FpgaPartSpec, FpgaSpec


def pipelined_cycles(trip: int, ii: int, depth: int, unroll: int = 1) -> int:
    """``depth + II x (ceil(trip / unroll) - 1)`` cycles for a pipelined loop (UG1399)."""
    if trip <= 0:
        return 0
    return depth + ii * (math.ceil(trip / unroll) - 1)


def res_mii(accesses: int, banks: int, ports: int) -> int:
    """Resource-constrained II: accesses per iteration to one array over its banks x ports."""
    return max(1, math.ceil(accesses / (banks * ports)))


def rec_mii(latency: int, distance: int) -> int:
    """Recurrence-constrained II: a loop-carried dependence of ``latency`` cycles over ``distance`` iterations."""
    return max(1, math.ceil(latency / distance))


def initiation_interval(*bounds: int) -> int:
    """``II = max(ResMII, RecMII, ...)`` (COMBA, ICCAD 2017)."""
    return max(1, *bounds)


@dataclass(frozen=True)
class Multiplier:
    """Fabric of one multiply: DSP blocks, or LUTs when the HLS tool maps it to logic."""

    dsp: int
    lut: int


def multiplier(precision: Precision, dsp_min_bits: int, dsp_a_bits: int, dsp_b_bits: int,
               fp32_mac_dsp: int) -> Multiplier:
    """How Vivado/Vitis HLS maps a ``precision x precision`` multiply (docs/cost-models.md, "FPGA designs").

    Fixed point narrower than ``dsp_min_bits`` goes to LUTs (``ceil(W^2 / 2)``: one LUT6 per two
    partial-product bits); wider products tile the DSP's ``dsp_a_bits x dsp_b_bits`` multiplier. A float16
    multiply tiles its significands the same way; an fp32 multiply-accumulate takes the part's ``fp32_mac_dsp``.

    >>> fixed = [Precision.parse(f"ap_fixed<{w},4>") for w in (6, 16, 32)]
    >>> [multiplier(p, 9, 27, 18, 5) for p in fixed]
    [Multiplier(dsp=0, lut=18), Multiplier(dsp=1, lut=0), Multiplier(dsp=4, lut=0)]
    """
    if precision.is_float and precision.width == 32:
        return Multiplier(fp32_mac_dsp, 0)
    w = precision.mantissa_bits
    if not precision.is_float and w < dsp_min_bits:
        return Multiplier(0, math.ceil(w * w / 2))
    return Multiplier(math.ceil(w / dsp_a_bits) * math.ceil(w / dsp_b_bits), 0)


@dataclass(frozen=True)
class Arithmetic:
    """A precision's multiply and add on a part, as the HLS tools build them: the multiplier's fabric
    (:func:`multiplier`), the LUTs of an add kept out of the DSPs, and the cycles of a pipelined multiply and add.

    One model for both users: ``pearl fpga-design``'s networks (:mod:`pearl_py.estimate.fpga_network`) and the
    planner's training kernels (:mod:`pearl_py.estimate.fpga_kernels`) take their multipliers, adders and operator
    latencies from here.
    """

    precision: Precision
    multiplier: Multiplier
    add_lut: int
    mul_cycles: int
    add_cycles: int


def arithmetic(precision: Precision, part: FpgaPartSpec, params: dict, clock_ns: float) -> Arithmetic:
    """``precision``'s arithmetic on ``part`` at ``clock_ns`` (``params``: ``estimators/fpga_network.yaml``).

    Floats take the part's floating-point operator latencies (UG1399; float16's taken as float32's) and an adder
    of ``float_add_lut`` LUTs (0 for float32, whose add is in ``dsp_per_mac``); fixed point takes a carry-chain
    adder of ``adder_lut_per_bit`` LUTs per bit, and ``ceil(mul_ns / clock)`` and ``ceil(add_ns / clock)`` cycles.

    >>> from pearl_py.platform import Catalogue
    >>> from pearl_py.estimate.fpga_network import load_params
    >>> u250, p = Catalogue.load().device_spec("alveo-u250"), load_params()
    >>> [(a.multiplier.dsp, a.add_lut, a.mul_cycles, a.add_cycles) for a in
    ...  (arithmetic(Precision.parse(t), u250, p, 10 / 3) for t in ("float32", "ap_fixed<16,6>"))]
    [(5, 0, 4, 5), (1, 16, 1, 1)]
    """
    mul = multiplier(precision, params["dsp_min_bits"], params["dsp_a_bits"], params["dsp_b_bits"], part.dsp_per_mac)
    if precision.is_float:
        return Arithmetic(precision, mul, params["float_add_lut"][precision.text], part.fmul_latency,
                          part.fadd_latency)
    return Arithmetic(precision, mul, params["adder_lut_per_bit"] * precision.width,
                      max(1, math.ceil(params["mul_ns"] / clock_ns)), max(1, math.ceil(params["add_ns"] / clock_ns)))


@dataclass(frozen=True)
class DenseOp:
    """``rows`` products of an ``n_in`` vector with an ``n_in x n_out`` matrix, hls4ml-style.

    ``reuse`` (R) is how many products each multiplier computes per row: multipliers =
    ceil(n_in*n_out / R), II = max(R, RecMII). ``accumulate`` marks a weight-gradient op,
    which adds every row into the same accumulators (RecMII = fadd latency, distance 1).
    """

    n_in: int
    n_out: int
    rows: int
    reuse: int
    fmul_latency: int
    fadd_latency: int
    accumulate: bool = False

    @property
    def products(self) -> int:
        return self.n_in * self.n_out

    @property
    def multipliers(self) -> int:
        return math.ceil(self.products / self.reuse)

    @property
    def ii(self) -> int:
        return initiation_interval(self.reuse, rec_mii(self.fadd_latency, 1) if self.accumulate else 1)

    @property
    def depth(self) -> int:
        """Latency of one row: R issue cycles, a multiply, and an adder tree over n_in (hls4ml)."""
        return self.reuse + self.fmul_latency + self.fadd_latency * math.ceil(math.log2(max(self.n_in, 2)))


@dataclass(frozen=True)
class StreamOp:
    """A multiplier-free pass over ``rows`` stream elements at II 1 (pooling: a compare or add tree over the window).

    hls4ml and FINN stream pooling this way: one output per cycle once the window is full.
    """

    rows: int
    depth: int
    ii: int = 1
    multipliers: int = 0


def dataflow_cycles(ops: list[DenseOp | StreamOp]) -> int:
    """Ops chained in a dataflow region: every op's fill plus the slowest op's steady state."""
    if not ops:
        return 0
    return sum(op.depth for op in ops) + max(op.ii * (op.rows - 1) for op in ops)


@dataclass
class Resources:
    """DSP, LUT and RAM blocks by kind, summed over a design and checked against a budget."""

    used: dict[str, float] = field(default_factory=dict)

    def add(self, resource: str, amount: float) -> None:
        self.used[resource] = self.used.get(resource, 0) + amount

    def allocate_array(self, words: int, banks: int, board: FpgaSpec, lutram_max_bits: int,
                       budget: dict[str, float], word_bits: int = 32) -> None:
        """Place an array of ``word_bits``-bit words split into ``banks`` banks in RAM blocks (or LUTRAM when tiny).

        Each bank goes to the smallest RAM kind that holds it and still has blocks in
        ``budget``; a bank larger than any block takes several blocks of the largest kind.
        """
        banks = max(1, min(banks, words))
        bank_bits = math.ceil(words / banks) * word_bits
        kinds = sorted(board.memories.items(), key=lambda kv: kv[1].bits)
        if bank_bits <= lutram_max_bits and kinds[0][1].bits > lutram_max_bits:
            self.add("lut", banks * math.ceil(bank_bits / 64))
            return
        for name, memory in kinds:
            blocks = banks * math.ceil(bank_bits / memory.bits)
            fits_one = memory.bits >= bank_bits or name == kinds[-1][0]
            if fits_one and self.used.get(name, 0) + blocks <= budget.get(name, 0):
                self.add(name, blocks)
                return
        name, memory = kinds[-1]
        self.add(name, banks * math.ceil(bank_bits / memory.bits))

    def overflow(self, budget: dict[str, float]) -> tuple[str, float, float] | None:
        """The first resource over budget as ``(name, used, budget)``, or None if all fit."""
        for name, amount in self.used.items():
            if amount > budget.get(name, 0):
                return name, amount, budget.get(name, 0)
        return None
