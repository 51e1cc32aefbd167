"""The FPGA model against hand-computed cycle counts, monotonicity, and infeasible designs."""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pearl_py.estimate.cost import Infeasible
from pearl_py.estimate.fpga_hls import (
    DenseOp,
    dataflow_cycles,
    pipelined_cycles,
    rec_mii,
    res_mii,
)
from pearl_py.estimate.fpga_kernels import FpgaTemplates, mlp_design, sum_tree_design
from pearl_py.platform import Catalogue
from pearl_py.protocol import DenseLayer, NetworkWorkload, ReplayWorkload
from pearl_py.resources import estimators_dir

AGILEX = Catalogue.load().device_spec("agilex-agf014")   # fmul 3, fadd 3, RAM read 2 cycles
TEMPLATES = FpgaTemplates.load()


def test_pipelined_loop_and_initiation_intervals():
    assert pipelined_cycles(trip=100, ii=2, depth=10) == 10 + 2 * 99
    assert pipelined_cycles(trip=100, ii=1, depth=5, unroll=4) == 5 + 24
    assert pipelined_cycles(trip=0, ii=1, depth=5) == 0
    assert res_mii(accesses=4, banks=1, ports=2) == 2 and res_mii(accesses=4, banks=2, ports=2) == 1
    assert rec_mii(latency=5, distance=1) == 5 and rec_mii(latency=5, distance=2) == 3


def test_dense_op_by_hand():
    op = DenseOp(n_in=4, n_out=8, rows=16, reuse=4, fmul_latency=3, fadd_latency=3)
    assert op.multipliers == 8 and op.ii == 4
    assert op.depth == 4 + 3 + 3 * 2                      # R + fmul + fadd x log2(n_in)
    assert dataflow_cycles([op]) == 13 + 4 * 15
    acc = DenseOp(4, 8, 16, reuse=1, fmul_latency=3, fadd_latency=3, accumulate=True)
    assert acc.ii == 3                                    # RecMII of the accumulator, distance 1


def test_sum_tree_by_hand():
    w = ReplayWorkload(capacity=16, batch=8, item_bytes=0, prioritized=True, fanout=4)   # depth 2
    sample = sum_tree_design(w, "replay_sample", AGILEX, TEMPLATES)
    assert sample.cycles == 2 * (2 + 3 * 2 + 1) + 1 * 7   # stages: read + adder tree + compare; II 1
    update = sum_tree_design(w, "priority_update", AGILEX, TEMPLATES)
    assert update.cycles == 2 * 6 + 6 * 7                 # read 2 + fadd 3 + write 1 per level; II 6 (root RAW)
    serial = TEMPLATES.with_overrides(sum_tree={"partition": 1})
    assert sum_tree_design(w, "replay_sample", AGILEX, serial).cycles == 2 * (2 + 4 * 3) + 12 * 7


def test_mlp_by_hand():
    infer = NetworkWorkload((DenseLayer(4, 2, batch=3),), trained_params=0, batch=3, family="off_policy")
    assert mlp_design(infer, "inference", AGILEX, TEMPLATES).cycles == (1 + 3 + 3 * 2) + 1 * 2
    train = NetworkWorkload((DenseLayer(4, 2, batch=3, backward=True),), trained_params=10, batch=3,
                            family="off_policy")
    d = mlp_design(train, "learner_update", AGILEX, TEMPLATES)
    assert d.phases["forward"] == 12
    assert d.phases["loss"] == 12 + 2
    assert d.phases["backward"] == (1 + 3 + 3) + (1 + 3 + 6) + 3 * 2   # input grad + weight grad (II 3)
    assert d.phases["adam"] == 45                                       # 10 lanes, one pass
    assert d.cycles == 12 + 14 + 23 + 45


def _learner(width: int, batch: int) -> NetworkWorkload:
    dims = (8, width, width, 4)
    layers = tuple(DenseLayer(i, o, batch, backward=True) for i, o in zip(dims, dims[1:]))
    return NetworkWorkload(layers, sum(i * o + o for i, o in zip(dims, dims[1:])), batch, "off_policy")


@settings(max_examples=25, deadline=None)
@given(st.integers(400, 6000), st.integers(1, 3000), st.sampled_from([16, 64, 128]))
def test_more_dsps_never_slower(dsp, extra, width):
    w = _learner(width, 64)
    small = mlp_design(w, "learner_update", dataclasses.replace(AGILEX, dsp=dsp), TEMPLATES)
    large = mlp_design(w, "learner_update", dataclasses.replace(AGILEX, dsp=dsp + extra), TEMPLATES)
    assert large.cycles <= small.cycles


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 512), st.integers(1, 512), st.sampled_from(["replay_sample", "priority_update", "replay_insert"]))
def test_bigger_batch_never_faster_per_call(b1, b2, kind):
    small, large = sorted((b1, b2))
    assert (mlp_design(_learner(64, small), "learner_update", AGILEX, TEMPLATES).seconds
            <= mlp_design(_learner(64, large), "learner_update", AGILEX, TEMPLATES).seconds)
    tree = [sum_tree_design(ReplayWorkload(1 << 16, b, 48, True, 16), kind, AGILEX, TEMPLATES).seconds
            for b in (small, large)]
    assert tree[0] <= tree[1]


def test_design_that_does_not_fit_names_the_resource():
    with pytest.raises(Infeasible) as info:
        sum_tree_design(ReplayWorkload(100_000_000, 32, 48, True, 16), "replay_sample", AGILEX, TEMPLATES)
    assert info.value.resource == "m20k" and info.value.needed > info.value.available
    assert "m20k: needs" in str(info.value)
    tiny = dataclasses.replace(AGILEX, dsp=4)
    with pytest.raises(Infeasible, match="dsp"):
        mlp_design(_learner(64, 32), "learner_update", tiny, TEMPLATES)


def test_bad_template_file_is_located(tmp_path):
    path = tmp_path / "fpga.yaml"
    text = (estimators_dir() / "fpga.yaml").read_text()
    path.write_text(text.replace("parallelism: full", "parallelism: wide"))
    with pytest.raises(Exception, match="mlp.parallelism: must be 'full' or 'output'"):
        FpgaTemplates.load(path)

