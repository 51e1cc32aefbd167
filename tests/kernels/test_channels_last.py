"""The channels_last learner update: the reference step's results, offered only where there are convolutions."""
from __future__ import annotations

import torch

import pearl_py as pearl
from pearl_py.algorithms.off_policy.derive import _random_batch
from pearl_py.algorithms.off_policy.learner import Learner
from pearl_py.kernels import REGISTRY


def test_channels_last_takes_the_reference_steps():
    algo = pearl.DQN("pearl/Frames-4x10x10-v0", net_arch=[16], batch_size=16)
    torch.manual_seed(0)
    reference = Learner(algo)
    torch.manual_seed(0)
    learner = Learner(algo)
    update = REGISTRY.get("learner_update", "channels_last", "cpu").build(learner)
    conv = learner.nets.online.q[0][1]
    assert conv.weight.is_contiguous(memory_format=torch.channels_last)
    batch = _random_batch(algo, 16)
    for _ in range(3):
        expected, got = reference.update(batch), update(batch)
    assert torch.allclose(expected.losses["q"], got.losses["q"], atol=1e-6)
    for a, b in zip(reference.nets.parameters(), learner.nets.parameters()):
        assert torch.allclose(a, b, atol=1e-6)
    assert learner.gradient_steps == 3


def test_channels_last_is_offered_for_cnns_only_and_fused_is_declared_unsupported():
    variant = REGISTRY.get("learner_update", "channels_last", "cpu")
    cnn = pearl.DQN("pearl/Frames-4x10x10-v0", net_arch=[16]).protocol().kernel("learner_update")
    mlp = pearl.DQN("CartPole-v1").protocol().kernel("learner_update")
    assert variant.supports(cnn) is None
    assert variant.supports(mlp) == "changes only Conv2dLayer layers; this kernel has none"
    fused = REGISTRY.get("learner_update", "fused", "cpu")
    assert fused.supports(cnn) == "handles DenseLayer layers, not Conv2dLayer, FlattenLayer"
