"""FPGA designs of pearl_py's kernels: MLP learner/inference, sum tree, parameter sync.

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
from dataclasses import dataclass
from pathlib import Path

from pearl_py.estimate.cost import Infeasible
from pearl_py.estimate.fpga_hls import (
    DenseOp,
    Resources,
    dataflow_cycles,
    pipelined_cycles,
    rec_mii,
)
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
    """Parameters of the kernel templates (``estimators/fpga.yaml``)."""

    budget_share: dict
    mlp: dict
    sum_tree: dict

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
        return FpgaTemplates(**merged)


@dataclass(frozen=True)
class Design:
    """A kernel's FPGA design: cycles per call, seconds (incl. off-chip), resources, per-phase cycles."""

    cycles: int
    seconds: float
    resources: dict[str, float]
    phases: dict[str, float]
    instance: str


def board_budget(board: FpgaSpec, share: dict[str, float]) -> dict[str, float]:
    """Resources an instance may use: its ``dsp``/``lut`` share, and its ``ram`` share of every RAM kind."""
    return {name: math.floor(amount * share.get(name, share["ram"])) for name, amount in board.capacity().items()}


def _check(resources: Resources, budget: dict[str, float], kernel: str, board: FpgaSpec) -> None:
    over = resources.overflow(budget)
    if over is not None:
        name, used, available = over
        raise Infeasible(kernel, board.name, name, used, available,
                         reason=f"its budget share of the board's {board.capacity()[name]:g}, estimators/fpga.yaml")


def _dense_ops(workload: NetworkWorkload, board: FpgaSpec, reuse: int, parallelism: str, train: bool) -> dict:
    """Forward, input-gradient and weight-gradient ops of the workload at target reuse ``reuse``."""
    def op(n_in, n_out, rows, cap, accumulate=False):
        r = min(max(reuse, math.ceil(n_in * n_out / cap)), n_in * n_out)
        return DenseOp(n_in, n_out, rows, r, board.fmul_latency, board.fadd_latency, accumulate)

    full = parallelism == "full"
    forward, backward = [], []
    for layer in workload.layers:
        forward.append(op(layer.n_in, layer.n_out, layer.batch, layer.n_in * layer.n_out if full else layer.n_out))
    if train:
        for layer in reversed([la for la in workload.layers if la.backward]):
            backward.append(op(layer.n_out, layer.n_in, layer.batch, layer.n_in * layer.n_out if full else layer.n_in))
            backward.append(op(layer.n_in, layer.n_out, layer.batch, layer.n_in * layer.n_out, accumulate=True))
    return {"forward": forward, "backward": backward}


def mlp_design(workload: NetworkWorkload, kernel: str, board: FpgaSpec, templates: FpgaTemplates) -> Design:
    """Learner update (forward, loss, backward, Adam) or inference (forward) as dataflow loop nests.

    Design-space exploration: from the smallest reuse factor R that fits every budget
    (DSP, LUT, RAM), each R with the most Adam lanes that still fit, until a larger R
    cannot win; the fastest pair is the exact optimum, so a bigger budget is never slower.
    """
    t = templates.mlp
    train = kernel == LEARNER_UPDATE
    share = templates.budget_share[kernel]
    budget = board_budget(board, share)
    max_lanes = 0
    if train and workload.trained_params:
        lane_dsp = t["adam_macs_per_lane"] * board.dsp_per_mac
        max_lanes = max(1, min(workload.trained_params, int(budget["dsp"] * t["adam_dsp_share"]) // lane_dsp))

    def resources_at(reuse: int, adam_lanes: int) -> Resources:
        ops = _dense_ops(workload, board, reuse, t["parallelism"], train)
        multipliers = sum(op.multipliers for group in ops.values() for op in group)
        res = Resources()
        res.add("dsp", multipliers * board.dsp_per_mac + adam_lanes * t["adam_macs_per_lane"] * board.dsp_per_mac)
        res.add("lut", t["lut_base"] + t["lut_per_multiplier"] * (multipliers + adam_lanes))
        for n_in, n_out in sorted({(la.n_in, la.n_out) for la in workload.layers}):
            banks = math.ceil(math.ceil(n_in * n_out / reuse) / 2)  # 2 ports feed 2 multipliers per cycle
            res.allocate_array(n_in * n_out + n_out, banks, board, t["lutram_max_bits"], budget)
        if train:
            state_words = 3 * workload.trained_params  # gradient, first and second moments
            res.allocate_array(state_words, max(1, adam_lanes), board, t["lutram_max_bits"], budget)
            activations = sum(la.batch * la.n_out for la in workload.layers if la.backward)
            res.allocate_array(activations, 2, board, t["lutram_max_bits"], budget)
        return res

    def phases_at(reuse: int, adam_lanes: int) -> dict[str, float]:
        ops = _dense_ops(workload, board, reuse, t["parallelism"], train)
        phases = {"forward": dataflow_cycles(ops["forward"])}
        if train:
            phases["loss"] = pipelined_cycles(workload.batch, 1, t["loss_depth"])
            phases["backward"] = dataflow_cycles(ops["backward"])
            phases["adam"] = pipelined_cycles(workload.trained_params, 1, t["adam_depth"], unroll=adam_lanes)
        return phases

    def fits(reuse: int, adam_lanes: int) -> bool:
        return resources_at(reuse, adam_lanes).overflow(budget) is None

    def first_true(low: int, high: int, predicate) -> int:
        while low < high:
            mid = (low + high) // 2
            low, high = (low, mid) if predicate(mid) else (mid + 1, high)
        return low

    largest = max(layer.n_in * layer.n_out for layer in workload.layers)
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
    return Design(cycles, cycles / board.clock_hz, dict(res.used), {**phases, "reuse_factor": low}, kernel)


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
