"""Cost models of convolutions: roofline at the conv efficiency, HLS loop nests, calibrated CNN models, layers."""
from __future__ import annotations

import math

import pytest

import pearl_py as pearl
from pearl_py.estimate import Estimator
from pearl_py.estimate.calibration import Calibration
from pearl_py.estimate.features import model_group, workload_features
from pearl_py.estimate.fit import FittedModel
from pearl_py.estimate.fpga_hls import DenseOp, StreamOp, dataflow_cycles
from pearl_py.estimate.fpga_kernels import (
    FpgaTemplates,
    _dense_ops,
    _offchip_bytes,
    mlp_design,
    training_arithmetic,
)
from pearl_py.estimate.roofline import RooflineParams, network_latency
from pearl_py.platform import Catalogue, Platform
from pearl_py.protocol import (
    Conv2dLayer,
    DenseLayer,
    FlattenLayer,
    NetworkWorkload,
    PoolLayer,
)

AGILEX = Catalogue.load().device_spec("agilex-agf014")
FP32_AGILEX = training_arithmetic(AGILEX, FpgaTemplates.load())   # its catalogue precision, float32
TEMPLATES = FpgaTemplates.load()
PARAMS = RooflineParams.load()


def minatar_learner(batch: int = 32) -> NetworkWorkload:
    conv = Conv2dLayer(4, 16, 10, 10, (3, 3), (1, 1), (0, 0), batch, backward=True, input_grad=False)
    return NetworkWorkload((conv, FlattenLayer((16, 8, 8), batch, True), DenseLayer(1024, 3, batch, True)),
                           trained_params=conv.weights + 1024 * 3 + 3, batch=batch, family="off_policy")


def test_conv_flops_run_at_the_conv_efficiency():
    features = workload_features(minatar_learner())
    gpu = Platform.load("dgx-a100-node").device("gpu0").spec
    _, terms = network_latency(features, gpu, PARAMS, "reference", machine="accelerator")
    peak = gpu.fp32_tflops * 1e12
    dense = features["flops"] - features["conv_flops"]
    assert terms["compute"] == pytest.approx(dense / (peak * PARAMS.gpu["gemm_efficiency"])
                                             + features["conv_flops"] / (peak * PARAMS.gpu["conv_efficiency"]))


def test_hls_conv_reuse_is_scaled_by_rows_so_layers_balance():
    workload = minatar_learner()
    ops = _dense_ops(workload, FP32_AGILEX, reuse=64, parallelism="full", train=True)
    conv, dense = ops["forward"]
    assert (conv.rows, conv.n_in, conv.n_out) == (32 * 64, 36, 16)         # im2col: one row per output pixel
    assert conv.reuse == math.ceil(64 * 32 / (32 * 64)) == 1 and dense.reuse == 64
    assert conv.ii * (conv.rows - 1) == pytest.approx(dense.ii * (dense.rows - 1), rel=0.05)   # ~equal cycles
    assert len(ops["backward"]) == 3                 # dense: input and weight gradients; conv: weight gradient only


def test_stream_ops_have_no_multipliers_and_chain_in_the_dataflow():
    pool = StreamOp(rows=100, depth=7)
    op = DenseOp(8, 4, rows=100, reuse=2, fmul_latency=3, fadd_latency=3)
    assert pool.multipliers == 0 and dataflow_cycles([op, pool]) == op.depth + 7 + 2 * 99


def test_pooling_maps_to_a_stream():
    pool = PoolLayer("max", 16, 8, 8, (2, 2), (2, 2), (0, 0), 4)
    workload = NetworkWorkload((Conv2dLayer(4, 16, 10, 10, (3, 3), (1, 1), (0, 0), 4), pool,
                                FlattenLayer((16, 4, 4), 4), DenseLayer(256, 3, 4)), trained_params=0, batch=4,
                               family="off_policy")
    (conv, stream, dense) = _dense_ops(workload, FP32_AGILEX, 8, "full", False)["forward"]
    assert isinstance(stream, StreamOp) and stream.rows == 4 * 16 * 4 * 4


def test_small_cnn_learner_fits_on_chip_with_layers_and_resources():
    design = mlp_design(minatar_learner(), "learner_update", AGILEX, TEMPLATES)
    assert "weights_offchip" not in design.phases and design.resources["dsp"] <= AGILEX.dsp
    layers = {type(layer).__name__: (cycles, res) for layer, cycles, res in design.layers}
    assert set(layers) == {"Conv2dLayer", "FlattenLayer", "DenseLayer"} and layers["FlattenLayer"][0] == 0
    assert layers["Conv2dLayer"][1]["dsp"] > 0


def test_nature_cnn_learner_streams_its_weights_from_off_chip_memory():
    algo = pearl.DQN("pearl/Frames-4x84x84-v0", net_arch=[], batch_size=32)
    workload = algo.protocol().kernel("learner_update").workload
    design = mlp_design(workload, "learner_update", AGILEX, TEMPLATES)
    assert design.phases["weights_offchip"] == 1
    stream_s = AGILEX.offchip_latency_ns * 1e-9 + _offchip_bytes(workload, True, 4) / (
        AGILEX.offchip_bandwidth_gbs * 1e9)
    assert design.phases["offchip_s"] == pytest.approx(stream_s)
    assert design.seconds == pytest.approx(max(design.cycles / AGILEX.clock_hz, stream_s))
    assert _offchip_bytes(workload, True, 4) > 4 * 7 * workload.trained_params


def test_cnn_kernels_use_their_own_calibrated_model_or_the_roofline():
    workload = minatar_learner()
    assert model_group(workload) == "cnn"
    kernel = pearl.DQN("pearl/Frames-4x10x10-v0", net_arch=[]).protocol().kernel("learner_update")
    cpu = Platform.local().device("cpu")
    dense_only = FittedModel("linear", ("flops",), (1e-3, 0.0), "flops")
    calibration = Calibration("x", {"learner_update/reference": dense_only})
    assert Estimator(calibration).cost(kernel, cpu).source == "modelled"      # no CNN model: not the MLP one
    cnn = FittedModel("linear", ("flops",), (2e-3, 0.0), "flops")
    calibration.models["learner_update/reference/cnn"] = cnn
    cost = Estimator(calibration).kernel_cost(kernel, cpu)   # the update alone (cost() adds the loop's work)
    assert (cost.source, cost.latency_s) == ("calibrated", 2e-3)
    assert [layer.layer.split()[0] for layer in cost.layers] == ["conv2d", "flatten", "dense", "conv2d", "flatten",
                                                                 "dense"]


def test_fpga_costs_carry_per_layer_breakdown_for_cnn_kernels():
    algo = pearl.DQN("pearl/Frames-4x10x10-v0", net_arch=[128])
    fpga = Platform.load("pearl-cpu-gpu-fpga").device("fpga")
    cost = Estimator(use_cache=False).cost(algo.protocol().kernel("inference"), fpga)
    assert [layer.layer for layer in cost.layers][0] == "conv2d 4->16 3x3/1 10x10->8x8 (x1)"
    assert all(layer.latency_s <= cost.latency_s for layer in cost.layers)
    assert sum(layer.resources["dsp"] for layer in cost.layers) <= cost.resources["dsp"]
    mlp = pearl.DQN("CartPole-v1").protocol().kernel("inference")
    assert Estimator(use_cache=False).cost(mlp, fpga).layers == ()
