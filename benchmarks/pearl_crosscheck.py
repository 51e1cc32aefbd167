"""Cross-check of our FPGA model against PEARL's public one (HeteroRL, SysConfig/FPGA_perfmodel.py).

PEARL's formulas are restated here from the published model (not its code) for the
Agilex AGF014 parameters of its ``fpga_spec.json`` (250 MHz, 4510 DSPs, 77 GB/s DDR):

- sum-tree sample, ms: ``fanout x (batch + depth) x 2 / f x 1e3 + batch x 6 words x 4 B / DDR``
- sum-tree update, ms: ``depth x 2 / f x 1e3 + batch x 24 B / DDR``
- learner, cycles: per operation (FW, BW, WA of each layer) parallelism
  ``p = min(max data-parallel factor, floor_pow2(DSPs x ops / total ops))``; cycles =
  sum of FW ops/p + sum over layers of max(BW/p, WA/p) + the first layer's WA at full parallelism.

We compare twice: with our templates set to PEARL's micro-architecture (children scanned
serially, one processing element per output neuron) and with our defaults.

Usage::

    /work/venv/bin/python benchmarks/pearl_crosscheck.py
"""
from __future__ import annotations

from pearl_py.estimate.fpga_kernels import FpgaTemplates, mlp_design, sum_tree_design
from pearl_py.platform import Catalogue
from pearl_py.protocol import DenseLayer, NetworkWorkload, ReplayWorkload

FREQ_HZ, DSPS, DDR_GBS, WORD_BYTES = 250e6, 4510, 77, 4
LAYERS = (16, 64, 64, 4)   # PEARL's example: in_dim 16, hidden [64, 64], out_dim 4
BATCH, DEPTH, FANOUT = 128, 4, 16


def pearl_sum_tree_s(op: str, depth: int, fanout: int, batch: int) -> float:
    ddr = batch * 6 * WORD_BYTES / (DDR_GBS * 1e9)
    cycles = fanout * (batch + depth) * 2 if op == "sample" else depth * 2
    return cycles / FREQ_HZ + ddr


def pearl_learner_s(dims: tuple[int, ...], batch: int, dsp_bound: int) -> float:
    def floor_pow2(n: float) -> int:
        p = 1
        while p * 2 < n:
            p *= 2
        return p

    ops, dpf = {}, {}
    n = len(dims) - 1
    for i in range(n):
        ops[f"FW{i}"], dpf[f"FW{i}"] = batch * dims[i] * dims[i + 1], dims[i + 1]
    for i in range(n, 1, -1):
        ops[f"BW{i - 1}"], dpf[f"BW{i - 1}"] = batch * dims[i] * dims[i - 1], dims[i - 1]
        ops[f"WA{i - 1}"], dpf[f"WA{i - 1}"] = batch * dims[i] * dims[i - 1], dims[i - 1] * dims[i]
    ops["WA0"], dpf["WA0"] = batch * dims[1] * dims[0], dims[1] * dims[0]
    total = sum(ops.values())
    par = {k: min(dpf[k], floor_pow2(dsp_bound * v // total)) for k, v in ops.items()}
    cycles = sum(ops[f"FW{i}"] / par[f"FW{i}"] for i in range(n))
    cycles += sum(max(ops[f"BW{i - 1}"] / par[f"BW{i - 1}"], ops[f"WA{i - 1}"] / par[f"WA{i - 1}"])
                  for i in range(n, 1, -1))
    cycles += ops["WA0"] / dpf["WA0"]
    return cycles / FREQ_HZ


def pearl_like_templates() -> FpgaTemplates:
    """Our templates set to PEARL's micro-architecture and budget (learner gets all DSPs but the tree's)."""
    share = (DSPS - 2 * DEPTH) / DSPS
    base = FpgaTemplates.load()
    return FpgaTemplates(
        budget_share={**base.budget_share, "learner_update": {"dsp": share, "lut": 0.55, "ram": 0.35}},
        mlp={**base.mlp, "parallelism": "output"}, sum_tree={**base.sum_tree, "partition": 1})


def learner_workload() -> NetworkWorkload:
    layers = tuple(DenseLayer(i, o, BATCH, backward=True) for i, o in zip(LAYERS, LAYERS[1:]))
    return NetworkWorkload(layers, trained_params=sum(i * o + o for i, o in zip(LAYERS, LAYERS[1:])), batch=BATCH,
                           family="off_policy")


def comparisons() -> list[tuple[str, float, float, float]]:
    """``(case, PEARL s, ours PEARL-like s, ours default s)`` for the Agilex parameters."""
    board = Catalogue.load().device_spec("agilex-agf014")
    like, default = pearl_like_templates(), FpgaTemplates.load()
    rows = []
    for op, kind in (("sample", "replay_sample"), ("update", "priority_update")):
        for batch in (1, BATCH):
            w = ReplayWorkload(capacity=FANOUT ** DEPTH, batch=batch, item_bytes=6 * WORD_BYTES, prioritized=True,
                               fanout=FANOUT)
            rows.append((f"sum tree {op}, batch {batch}", pearl_sum_tree_s(op, DEPTH, FANOUT, batch),
                         sum_tree_design(w, kind, board, like).seconds, sum_tree_design(w, kind, board, default).seconds))
    w = learner_workload()
    rows.append((f"learner {list(LAYERS)}, batch {BATCH}", pearl_learner_s(LAYERS, BATCH, DSPS - 2 * DEPTH),
                 mlp_design(w, "learner_update", board, like).seconds,
                 mlp_design(w, "learner_update", board, default).seconds))
    return rows


def main() -> None:
    print(f"{'case':<36} {'PEARL':>10} {'ours (PEARL-like)':>18} {'ratio':>6} {'ours (default)':>15} {'ratio':>6}")
    for case, pearl, like, default in comparisons():
        print(f"{case:<36} {pearl * 1e6:>8.2f}us {like * 1e6:>16.2f}us {like / pearl:>6.2f} "
              f"{default * 1e6:>13.2f}us {default / pearl:>6.2f}")
    print("(all modelled; Agilex AGF014 at 250 MHz; ratio = ours / PEARL)")


if __name__ == "__main__":
    main()
