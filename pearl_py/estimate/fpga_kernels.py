"""FPGA designs of pearl_py's kernels: MLP and CNN learner/inference, sum tree, parameter sync.

A network's layers map through their matrix-product view (``layer.gemm``): a dense layer's ``batch``
rows, or a convolution's ``batch x out_h x out_w`` output pixels, each a dot product of a
``in_channels x kh x kw`` window with every filter, as hls4ml's streaming convolutions and FINN's
matrix-vector unit behind a sliding-window unit compute them; the sliding window keeps ``kh - 1``
input rows in a line buffer (its own RAM banks). Pooling streams at one output per cycle.

Each design picks its parallelism under the board budget of ``estimators/fpga.yaml``,
counts cycles with :mod:`pearl_py.estimate.fpga_hls`, and checks DSP, LUT and RAM blocks;
a design that does not fit raises :class:`Infeasible` naming the resource.

Example::

    >>> from pearl_py.platform import Platform
    >>> fpga = Platform.load("pearl-cpu-gpu-fpga").device("fpga").spec
    >>> design = sum_tree_design(ReplayWorkload(1 << 16, 128, 48, True, 16), REPLAY_SAMPLE, fpga, FpgaTemplates.load())
    >>> design.cycles, design.resources["dsp"]
"""
from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass, field
from pathlib import Path

from pearl_py.estimate.cost import Infeasible
from pearl_py.estimate.fpga_hls import (
    Arithmetic,
    DenseOp,
    Resources,
    StreamOp,
    arithmetic,
    dataflow_cycles,
    pipelined_cycles,
    rec_mii,
)
from pearl_py.estimate.fpga_network import load_params
from pearl_py.platform.spec import FpgaSpec, check_keys
from pearl_py.platform.yamlsrc import CatalogueYaml
from pearl_py.protocol import NetworkWorkload, ReplayWorkload, SyncWorkload
from pearl_py.protocol.kernel import (
    INFERENCE,
    LEARNER_UPDATE,
    PARAM_SYNC,
    REPLAY_INSERT,
    REPLAY_SAMPLE,
)
from pearl_py.protocol.layers import Conv2dLayer, PoolLayer
from pearl_py.protocol.workload import Layer
from pearl_py.resources import estimators_dir

_SHARE_KEYS = ("dsp", "lut", "ram")
_SCHEMA = {
    "budget_share": [LEARNER_UPDATE, INFERENCE, "sum_tree", PARAM_SYNC],
    "mlp": ["parallelism", "adam_dsp_share", "adam_macs_per_lane", "adam_depth", "loss_depth",
            "lut_per_multiplier", "lut_base", "lutram_max_bits"],
    "sum_tree": ["partition", "lut_per_level", "write_latency"],
}


@dataclass(frozen=True)
class FpgaTemplates:
    """Parameters of the kernel templates (``estimators/fpga.yaml``) and of the arithmetic by precision
    (``estimators/fpga_network.yaml``, shared with ``pearl fpga-design``)."""

    budget_share: dict
    mlp: dict
    sum_tree: dict
    arithmetic: dict = field(default_factory=load_params)

    @classmethod
    def load(cls, path: str | Path | None = None) -> FpgaTemplates:
        doc = CatalogueYaml.load(path or estimators_dir() / "fpga.yaml")
        check_keys(doc.data, list(_SCHEMA), list(_SCHEMA), (), doc.error)
        for section, keys in _SCHEMA.items():
            check_keys(doc.data[section], keys, keys, (section,), doc.error)
        if doc.data["mlp"]["parallelism"] not in ("full", "output"):
            raise doc.error(("mlp", "parallelism"), "must be 'full' or 'output'")
        if doc.data["sum_tree"]["partition"] not in ("fanout", 1):
            raise doc.error(("sum_tree", "partition"), "must be 'fanout' or 1")
        for instance, shares in doc.data["budget_share"].items():
            check_keys(shares, list(_SHARE_KEYS), list(_SHARE_KEYS), ("budget_share", instance), doc.error)
        for column in _SHARE_KEYS:
            if sum(s[column] for s in doc.data["budget_share"].values()) > 1.0 + 1e-9:
                raise doc.error(("budget_share",), f"{column} shares must sum to <= 1")
        return cls(doc.data["budget_share"], doc.data["mlp"], doc.data["sum_tree"])

    def with_overrides(self, **sections: dict) -> FpgaTemplates:
        """A copy with some template keys replaced, e.g. ``mlp={"parallelism": "output"}``."""
        merged = {name: {**getattr(self, name), **sections.get(name, {})} for name in _SCHEMA}
        return FpgaTemplates(**merged, arithmetic=self.arithmetic)


@dataclass(frozen=True)
class Design:
    """A kernel's FPGA design: cycles per call, seconds (incl. off-chip), resources, per-phase cycles."""

    cycles: int
    seconds: float
    resources: dict[str, float]
    phases: dict[str, float]
    instance: str
    layers: tuple[tuple[Layer, int, dict[str, float]], ...] = ()
    """Per recorded layer: its cycles (forward and backward loop nests) and the DSPs its multipliers use."""


def board_budget(board: FpgaSpec, share: dict[str, float]) -> dict[str, float]:
    """Resources an instance may use: its ``dsp``/``lut`` share, and its ``ram`` share of every RAM kind."""
    return {name: math.floor(amount * share.get(name, share["ram"])) for name, amount in board.capacity().items()}


def _check(resources: Resources, budget: dict[str, float], kernel: str, board: FpgaSpec) -> None:
    over = resources.overflow(budget)
    if over is not None:
        name, used, available = over
        raise Infeasible(kernel, board.name, name, used, available,
                         reason=f"its budget share of the board's {board.capacity()[name]:g}, estimators/fpga.yaml")


LayerOps = tuple[Layer, list, list]
"""A layer and its forward and backward ops (:class:`DenseOp` or :class:`StreamOp`)."""


def _layer_ops(workload: NetworkWorkload, ar: Arithmetic, reuse: int, parallelism: str, train: bool
               ) -> list[LayerOps]:
    """Each layer's forward, input-gradient and weight-gradient ops at target reuse ``reuse``.

    ``reuse`` is the reuse factor of the layers with the fewest rows (a dense layer's batch); a layer with more
    rows (a convolution's output pixels) gets proportionally fewer (``ceil(reuse x fewest / rows)``, hls4ml's
    per-layer reuse factors), so every layer of the dataflow region takes about as many cycles: for an MLP,
    every layer has the batch's rows and exactly ``reuse``.
    """
    fewest = _fewest_rows(workload)

    def op(n_in, n_out, rows, cap, accumulate=False):
        target = math.ceil(reuse * fewest / rows)
        r = min(max(target, math.ceil(n_in * n_out / cap)), n_in * n_out)
        return DenseOp(n_in, n_out, rows, r, ar.mul_cycles, ar.add_cycles, accumulate)

    full = parallelism == "full"
    out = []
    for layer in workload.layers:
        forward, backward = [], []
        if isinstance(layer, PoolLayer):
            window = layer.kernel[0] * layer.kernel[1]
            rows = layer.batch * layer.channels * layer.out_h * layer.out_w
            forward.append(StreamOp(rows, window + ar.add_cycles * math.ceil(math.log2(max(window, 2)))))
            if train and layer.backward:
                backward.append(StreamOp(rows, window + ar.add_cycles))
        elif layer.gemm is not None:
            rows, n_in, n_out = layer.gemm
            forward.append(op(n_in, n_out, rows, n_in * n_out if full else n_out))
            if train and layer.backward:
                if getattr(layer, "input_grad", True):
                    backward.append(op(n_out, n_in, rows, n_in * n_out if full else n_in))
                backward.append(op(n_in, n_out, rows, n_in * n_out, accumulate=True))
        out.append((layer, forward, backward))
    return out


def _fewest_rows(workload: NetworkWorkload) -> int:
    return min(layer.gemm[0] for layer in workload.layers if layer.gemm is not None)


def _dense_ops(workload: NetworkWorkload, ar: Arithmetic, reuse: int, parallelism: str, train: bool) -> dict:
    """Forward and backward (input-gradient, weight-gradient) ops of the workload at target reuse ``reuse``."""
    layers = _layer_ops(workload, ar, reuse, parallelism, train)
    return {"forward": [op for _, forward, _ in layers for op in forward],
            "backward": [op for _, _, backward in reversed(layers) for op in backward]}


def _op_cycles(ops: list) -> int:
    return sum(pipelined_cycles(op.rows, op.ii, op.depth) for op in ops)


def mlp_design(workload: NetworkWorkload, kernel: str, board: FpgaSpec, templates: FpgaTemplates) -> Design:
    """Learner update (forward, loss, backward, Adam) or inference (forward) as dataflow loop nests.

    Design-space exploration: from the smallest reuse factor R that fits every budget
    (DSP, LUT, RAM), each R with the most Adam lanes that still fit, until a larger R
    cannot win; the fastest pair is the exact optimum, so a bigger budget is never slower.
    Weights (and the learner's Adam state) live on chip when they fit; otherwise they stay in the
    board's off-chip memory and stream through double-buffered on-chip tiles (a NatureCNN learner's
    1.7M parameters: see :func:`_offchip_bytes`), or the kernel is infeasible naming the resource.
    """
    try:
        return _mlp_design(workload, kernel, board, templates, offchip=False)
    except Infeasible as on_chip:
        try:
            return _mlp_design(workload, kernel, board, templates, offchip=True)
        except Infeasible:
            raise on_chip from None


def training_arithmetic(board: FpgaSpec, templates: FpgaTemplates) -> Arithmetic:
    """The multiply-accumulate of ``board``'s network kernels: its ``training_precision`` at its clock, from the model
    ``pearl fpga-design`` uses (:func:`pearl_py.estimate.fpga_hls.arithmetic`)."""
    return arithmetic(board.training_precision, board, templates.arithmetic, 1e3 / board.clock_mhz)


def _offchip_bytes(workload: NetworkWorkload, train: bool, weight_bytes: float) -> float:
    """Bytes one call moves to and from off-chip memory when weights stay there: every layer call reads its weights
    once (weight-stationary tiles, every row streamed past them), a back-propagated call reads them again for the
    input gradient and writes its weight gradient; Adam reads weights, gradients and both moments and writes
    weights and moments (7 fp32 words per trained parameter); a layer's weights and gradients are ``weight_bytes`` each
    (its training precision)."""
    words = 0.0
    for layer in workload.layers:
        if layer.gemm is not None:
            words += layer.weights * (3 if train and layer.backward else 1)
    adam = 7 * workload.trained_params if train else 0
    return (weight_bytes * words + 4.0 * adam) / workload.period


def _mlp_design(workload: NetworkWorkload, kernel: str, board: FpgaSpec, templates: FpgaTemplates,
                offchip: bool) -> Design:
    t = templates.mlp
    train = kernel == LEARNER_UPDATE
    ar = training_arithmetic(board, templates)
    bits = board.training_precision.width   # the layers' weights and activations; Adam's state stays fp32
    share = templates.budget_share[kernel]
    budget = board_budget(board, share)
    max_lanes = 0
    if train and workload.trained_params:
        lane_dsp = t["adam_macs_per_lane"] * board.dsp_per_mac
        max_lanes = max(1, min(workload.trained_params, int(budget["dsp"] * t["adam_dsp_share"]) // lane_dsp))

    def resources_at(reuse: int, adam_lanes: int) -> Resources:
        ops = _dense_ops(workload, ar, reuse, t["parallelism"], train)
        multipliers = sum(op.multipliers for group in ops.values() for op in group)
        res = Resources()
        # a layer's multiply-accumulate: the precision's multiplier and adder (fp32: dsp_per_mac DSPs, adder in them)
        res.add("dsp", multipliers * ar.multiplier.dsp + adam_lanes * t["adam_macs_per_lane"] * board.dsp_per_mac)
        res.add("lut", t["lut_base"] + t["lut_per_multiplier"] * (multipliers + adam_lanes)
                + multipliers * (ar.multiplier.lut + ar.add_lut))
        weighted = {la.weight_key: la for la in workload.layers if la.gemm is not None}
        for key in sorted(weighted):            # one weight array per distinct weight matrix
            _, n_in, n_out = weighted[key].gemm
            banks = math.ceil(math.ceil(n_in * n_out / reuse) / 2)  # 2 ports feed 2 multipliers per cycle
            # off chip: a double-buffered tile of one pass's operands (2 x the multipliers' weights) instead
            words = 2 * math.ceil(n_in * n_out / reuse) if offchip else weighted[key].weights
            res.allocate_array(words, banks, board, t["lutram_max_bits"], budget, bits)
        for la in workload.layers:              # a sliding-window unit per convolution call: kw banks (FINN's SWU)
            if isinstance(la, Conv2dLayer):
                res.allocate_array(la.line_buffer_words, la.kernel[1], board, t["lutram_max_bits"], budget, bits)
        if train and not offchip:
            state_words = 3 * workload.trained_params  # gradient, first and second moments
            res.allocate_array(state_words, max(1, adam_lanes), board, t["lutram_max_bits"], budget)
        if train:
            activations = sum(la.gemm[0] * la.gemm[2] for la in workload.layers if la.backward and la.gemm)
            res.allocate_array(activations, 2, board, t["lutram_max_bits"], budget, bits)
        return res

    def phases_at(reuse: int, adam_lanes: int) -> dict[str, float]:
        ops = _dense_ops(workload, ar, reuse, t["parallelism"], train)
        phases = {"forward": dataflow_cycles(ops["forward"])}
        if train:
            phases["loss"] = pipelined_cycles(workload.batch, 1, t["loss_depth"])
            phases["backward"] = dataflow_cycles(ops["backward"])
            phases["adam"] = pipelined_cycles(workload.trained_params, 1, t["adam_depth"], unroll=adam_lanes)
        return phases

    def fits(reuse: int, adam_lanes: int) -> bool:
        return resources_at(reuse, adam_lanes).overflow(budget) is None

    def first_true(low: int, high: int, predicate) -> int:
        """The least ``n`` in ``low..high`` with ``predicate(n)`` (``high`` if none below; ``predicate`` monotone)."""
        return low + bisect_left(range(low, high), True, key=predicate)

    fewest = _fewest_rows(workload)    # the reuse at which every layer is down to one multiplier
    largest = max(math.ceil(la.gemm[1] * la.gemm[2] * la.gemm[0] / fewest) for la in workload.layers
                  if la.gemm is not None)
    min_lanes = 1 if max_lanes else 0
    _check(resources_at(largest, min_lanes), budget, kernel, board)  # not even the smallest design fits
    reuse = first_true(1, largest, lambda r: fits(r, min_lanes))
    adam_floor = phases_at(largest, max_lanes).get("adam", 0)
    best = None
    while reuse <= largest:  # exact optimum over (R, most Adam lanes that fit with R)
        lanes = max_lanes - first_true(0, max_lanes - min_lanes, lambda d: fits(reuse, max_lanes - d))
        phases = phases_at(reuse, lanes)
        if best is None or sum(phases.values()) < sum(best[2].values()):
            best = (reuse, lanes, phases)
        reuse += 1
        if reuse > largest:
            break
        bound = phases_at(reuse, max_lanes)
        if sum(bound.values()) - bound.get("adam", 0) + adam_floor >= sum(best[2].values()):
            break  # a larger R cannot beat the best even with every Adam lane
    low, lanes, phases = best
    res = resources_at(low, lanes)
    phases = {**phases, "adam_lanes": lanes}
    cycles = int(sum(v for k, v in phases.items() if k != "adam_lanes"))
    layers = tuple((layer, _op_cycles(forward) + _op_cycles(backward),
                    {"dsp": sum(op.multipliers for op in forward + backward) * ar.multiplier.dsp})
                   for layer, forward, backward in _layer_ops(workload, ar, low, t["parallelism"], train))
    seconds = cycles / board.clock_hz
    if offchip:  # streamed through double-buffered tiles: transfers overlap the loop nests (HLS dataflow)
        stream_s = _offchip_s(board, _offchip_bytes(workload, train, bits / 8))
        phases = {**phases, "weights_offchip": 1, "offchip_s": stream_s}
        seconds = max(seconds, stream_s)
    return Design(cycles, seconds, dict(res.used), {**phases, "reuse_factor": low}, kernel,
                  layers if workload.has_conv else ())


def sum_tree_design(workload: ReplayWorkload, kernel: str, board: FpgaSpec, templates: FpgaTemplates) -> Design:
    """Sum tree as a pipeline with one stage per level; transitions live in off-chip memory.

    Sample: each stage reads a node's ``fanout`` children and prefix-sums them; update and
    insert: each stage read-modify-writes one node, a recurrence through RAM and adder.
    """
    if not workload.prioritized:
        return _uniform_replay(workload, kernel, board, templates)
    t = templates.sum_tree
    share = templates.budget_share["sum_tree"]
    budget = board_budget(board, share)
    k, depth = workload.fanout, workload.tree_depth
    banks = k if t["partition"] == "fanout" else 1
    res = Resources()
    for level in range(1, depth + 1):
        nodes = min(k ** level, workload.capacity if level == depth else k ** level)
        res.allocate_array(nodes, min(banks, nodes), board, templates.mlp["lutram_max_bits"], budget)
    res.add("dsp", depth * (k + 1) * board.dsp_per_add)
    res.add("lut", t["lut_per_level"] * depth)
    _check(res, budget, kernel, board)

    if kernel == REPLAY_SAMPLE:
        if banks == k:  # all children in one cycle, adder tree over them
            stage = board.mem_read_latency + board.fadd_latency * math.ceil(math.log2(k)) + 1
            ii = 1
        else:  # children read one by one through 2 ports, running sum carried across children
            stage = board.mem_read_latency + k * rec_mii(board.fadd_latency, 1)
            ii = max(math.ceil(k / 2), k * rec_mii(board.fadd_latency, 1))
        offchip_bytes = workload.batch * workload.item_bytes
    else:
        stage = board.mem_read_latency + board.fadd_latency + t["write_latency"]
        ii = rec_mii(stage, 1)  # consecutive updates meet at the root: read-add-write before the next
        offchip_bytes = workload.batch * workload.item_bytes if kernel == REPLAY_INSERT else 0
    cycles = pipelined_cycles(workload.batch, ii, depth * stage)
    offchip = _offchip_s(board, offchip_bytes)
    return Design(cycles, cycles / board.clock_hz + offchip, dict(res.used),
                  {"tree": cycles, "ii": ii, "offchip_s": offchip}, "sum_tree")


def _offchip_s(board: FpgaSpec, nbytes: float) -> float:
    if nbytes <= 0:
        return 0.0
    return board.offchip_latency_ns * 1e-9 + nbytes / (board.offchip_bandwidth_gbs * 1e9)


def _uniform_replay(workload: ReplayWorkload, kernel: str, board: FpgaSpec, templates: FpgaTemplates) -> Design:
    """Uniform replay: index generation at II 1, items streamed from off-chip memory."""
    cycles = pipelined_cycles(workload.batch, 1, board.mem_read_latency + 2)
    moves = kernel in (REPLAY_SAMPLE, REPLAY_INSERT)
    offchip = _offchip_s(board, workload.bytes_moved if moves else 0)
    res = {"lut": templates.sum_tree["lut_per_level"]}
    return Design(cycles, cycles / board.clock_hz + offchip, res, {"index": cycles, "offchip_s": offchip}, "sum_tree")


def sync_design(workload: SyncWorkload, board: FpgaSpec, templates: FpgaTemplates) -> Design:
    """Parameters streamed out of on-chip RAM to off-chip memory by a DMA engine."""
    seconds = _offchip_s(board, workload.param_bytes)
    return Design(0, seconds, {"lut": templates.mlp["lut_base"]},
                  {"offchip_s": seconds}, PARAM_SYNC)
