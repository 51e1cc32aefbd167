"""The planner's FPGA network kernels at a board's training precision: the arithmetic ``pearl fpga-design`` uses."""
from __future__ import annotations

from dataclasses import replace

from pearl_py.estimate.fpga_hls import Multiplier
from pearl_py.estimate.fpga_kernels import FpgaTemplates, _dense_ops, mlp_design, training_arithmetic
from pearl_py.platform import Catalogue
from pearl_py.platform.precision import Precision
from pearl_py.protocol import DenseLayer, NetworkWorkload
from pearl_py.protocol.kernel import LEARNER_UPDATE

U250 = Catalogue.load().device_spec("alveo-u250")
TEMPLATES = FpgaTemplates.load()
SIZES = (4, 256, 256, 2)
LEARNER = NetworkWorkload(tuple(DenseLayer(i, o, 64, backward=True) for i, o in zip(SIZES, SIZES[1:])),
                          trained_params=sum(i * o + o for i, o in zip(SIZES, SIZES[1:])), batch=64,
                          family="off_policy")


def at(precision: str):
    return replace(U250, training_precision=Precision.parse(precision))


def test_training_arithmetic_is_fpga_designs_by_precision():
    """float32: the part's 5-DSP MAC (its add inside) at UG1399's latencies; ap_fixed<16,6>: one DSP48E2, a 16-LUT
    carry-chain adder, one cycle each at 300 MHz; ap_fixed<8,3>: a 32-LUT multiplier and no DSP."""
    f32, fixed, narrow = (training_arithmetic(at(p), TEMPLATES) for p in ("float32", "ap_fixed<16,6>", "ap_fixed<8,3>"))
    assert (f32.multiplier, f32.add_lut, f32.mul_cycles, f32.add_cycles) == (Multiplier(5, 0), 0, 4, 5)
    assert (fixed.multiplier, fixed.add_lut, fixed.mul_cycles, fixed.add_cycles) == (Multiplier(1, 0), 16, 1, 1)
    assert (narrow.multiplier, narrow.add_lut) == (Multiplier(0, 32), 8)
    assert training_arithmetic(U250, TEMPLATES) == f32   # the catalogue's default


def test_fixed_point_learner_takes_fewer_dsps_per_multiplier_and_another_reuse_and_ii():
    f32, fixed = (mlp_design(LEARNER, LEARNER_UPDATE, at(p), TEMPLATES) for p in ("float32", "ap_fixed<16,6>"))
    assert fixed.phases["reuse_factor"] < f32.phases["reuse_factor"] and fixed.cycles < f32.cycles
    for design, board in ((f32, at("float32")), (fixed, at("ap_fixed<16,6>"))):
        ar = training_arithmetic(board, TEMPLATES)
        ops = _dense_ops(LEARNER, ar, design.phases["reuse_factor"], "full", True)
        multipliers = sum(op.multipliers for group in ops.values() for op in group)
        adam = design.phases["adam_lanes"] * TEMPLATES.mlp["adam_macs_per_lane"] * U250.dsp_per_mac   # fp32 Adam
        assert design.resources["dsp"] == multipliers * ar.multiplier.dsp + adam
        weight_grad = ops["backward"][-1]      # accumulates every row: II = max(R, the adder's recurrence)
        assert weight_grad.accumulate and weight_grad.ii == max(weight_grad.reuse, ar.add_cycles)
    assert training_arithmetic(at("ap_fixed<16,6>"), TEMPLATES).multiplier.dsp < U250.dsp_per_mac


def test_default_precision_is_float32_and_changes_nothing():
    assert mlp_design(LEARNER, LEARNER_UPDATE, U250, TEMPLATES) == mlp_design(LEARNER, LEARNER_UPDATE, at("float32"),
                                                                              TEMPLATES)


PLATFORM = """platforms:
  u250-host:
    devices:
      cpu: {type: xeon-gold-6326}
      fpga: {type: alveo-u250%s}
    links:
      - {between: [cpu, fpga], type: pcie-gen3-x16}
"""


def test_a_platforms_fpga_precision_changes_its_kernels_cost_and_the_report_says_it(tmp_path):
    import pearl_py as pearl
    from pearl_py.estimate import Estimator
    from pearl_py.optimize.api import plan
    from pearl_py.platform import Platform
    from pearl_py.report.markdown import render_markdown

    (tmp_path / "f32.yaml").write_text(PLATFORM % "")
    (tmp_path / "fixed.yaml").write_text(PLATFORM % ', training_precision: "ap_fixed<16,6>"')
    protocol, estimator = pearl.DQN("CartPole-v1").protocol(), Estimator(use_cache=False)
    learner = next(k for k in protocol.kernels() if k.name == "learner_update")
    costs = {name: estimator.cost(learner, Platform.load(tmp_path / f"{name}.yaml").device("fpga"))
             for name in ("f32", "fixed")}
    assert costs["fixed"].resources["dsp"] < costs["f32"].resources["dsp"]
    assert costs["fixed"].latency_s != costs["f32"].latency_s
    report = render_markdown(plan(protocol, str(tmp_path / "fixed.yaml"), estimator=estimator))
    assert "modelled at their device's training precision: fpga ap_fixed<16,6>" in report
