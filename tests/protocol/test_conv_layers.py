"""Convolution, pooling and flatten layers: recorded by observing the networks, with exact FLOPs and shapes."""
from __future__ import annotations

import pytest
import torch
from torch import nn

import pearl_py as pearl
from pearl_py.algorithms.recording import record_layers
from pearl_py.protocol import (
    Conv2dLayer,
    DenseLayer,
    FlattenLayer,
    NetworkWorkload,
    PoolLayer,
)


def test_conv_layer_shapes_flops_and_gemm_view():
    conv = Conv2dLayer(4, 32, 84, 84, (8, 8), (4, 4), (0, 0), batch=32, backward=True, input_grad=False)
    assert (conv.out_h, conv.out_w, conv.patch) == (20, 20, 256)
    assert conv.weights == 32 * 256 + 32
    assert conv.forward_flops == 2 * 32 * 400 * 32 * 256
    assert conv.backward_flops == conv.forward_flops            # weight gradient only: its input is data
    assert Conv2dLayer(4, 32, 84, 84, (8, 8), (4, 4), (0, 0), 32, backward=True).backward_flops == \
        2 * conv.forward_flops
    assert conv.gemm == (32 * 400, 256, 32)
    assert conv.activation_elements == 32 * (4 * 84 * 84 + 32 * 400)
    assert conv.line_buffer_words == (7 * 84 + 8) * 4
    assert conv.label == "conv2d 4->32 8x8/4 84x84->20x20 (x32)"


def test_recording_a_cnn_gives_its_layers_in_call_order():
    net = nn.Sequential(nn.Conv2d(3, 8, 3, stride=1, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 4, 2, 2),
                        nn.AvgPool2d(2, stride=1), nn.Flatten(), nn.Linear(16, 5))
    x = torch.zeros(6, 3, 12, 12)
    layers = record_layers(net, lambda: net(x))
    assert [type(layer) for layer in layers] == [Conv2dLayer, PoolLayer, Conv2dLayer, PoolLayer, FlattenLayer,
                                                 DenseLayer]
    first, pool, second, avg, flat, dense = layers
    assert (first.out_h, first.padding, first.batch, first.input_grad) == (12, (1, 1), 6, False)
    assert (pool.mode, pool.out_h, pool.forward_flops) == ("max", 6, 6 * 8 * 6 * 6 * 4)
    assert (second.in_channels, second.in_h, second.out_h) == (8, 6, 3)
    assert (avg.mode, avg.out_h) == ("avg", 2)
    assert (flat.shape, flat.forward_flops, flat.dispatches) == ((4, 2, 2), 0, 0)
    assert (dense.n_in, dense.n_out, dense.batch) == (16, 5, 6)


def test_recording_refuses_what_it_cannot_model():
    net = nn.Conv2d(3, 4, 3, dilation=2)
    with pytest.raises(ValueError, match="dilated"):
        record_layers(net, lambda: net(torch.zeros(1, 3, 9, 9)))


def test_workload_of_a_cnn_counts_conv_flops_and_ops_like_dense_for_an_mlp():
    mlp = NetworkWorkload((DenseLayer(4, 64, 32, True), DenseLayer(64, 2, 32, True)), trained_params=450,
                          batch=32, family="off_policy")
    assert mlp.n_ops == (3 + 3 + 4 * 2) and mlp.conv_flops == 0 and not mlp.has_conv
    conv = Conv2dLayer(4, 16, 10, 10, (3, 3), (1, 1), (0, 0), 32, backward=True, input_grad=False)
    flat = FlattenLayer((16, 8, 8), 32, backward=True)
    cnn = NetworkWorkload((conv, flat, DenseLayer(1024, 3, 32, True)), trained_params=3667,
                          batch=32, family="off_policy")
    assert cnn.has_conv and cnn.conv_flops == conv.forward_flops + conv.backward_flops
    assert cnn.n_ops == 2 + 0 + 3 + 4 * 2                        # flatten: a view, no op and no Adam step
    assert cnn.weight_bytes == 4 * (conv.weights + 1024 * 3 + 3)


@pytest.mark.parametrize("cls, env", [(pearl.DQN, "pearl/Frames-4x10x10-v0"),
                                      (pearl.TD3, "pearl/FramesBox-4x10x10-v0")])
def test_derived_protocol_records_the_convolutions_of_acting_and_learning(cls, env):
    graph = cls(env, net_arch=[128], batch_size=32).protocol()
    acting = graph.kernel("inference").workload.layers
    assert type(acting[0]) is Conv2dLayer and acting[0].batch == 1 and not acting[0].backward
    learning = graph.kernel("learner_update").workload
    convs = [la for la in learning.layers if isinstance(la, Conv2dLayer)]
    assert all(c.batch == 32 and (c.in_h, c.out_h, c.out_channels) == (10, 8, 16) for c in convs)
    assert any(c.backward for c in convs) and any(not c.backward for c in convs)   # online and target networks
    assert graph.kernel("env_step").workload.obs_bytes == 400                      # uint8 frames
