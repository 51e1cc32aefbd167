"""The variant registry: listing, lookup by the names plans carry, availability, building."""
from __future__ import annotations

import pytest
import torch

import pearl_py as pearl
from pearl_py import kernels
from pearl_py.algorithms import Learner
from pearl_py.kernels import REGISTRY, KernelKind, KernelUnavailable, Registry, Variant


def test_shipped_variants_per_kind_and_device_class():
    names = {(v.kind.value, v.device_class): [] for v in REGISTRY.variants(KernelKind.LEARNER_UPDATE)}
    for v in REGISTRY.variants(KernelKind.LEARNER_UPDATE):
        names[(v.kind.value, v.device_class)].append(v.name)
    assert names == {("learner_update", "cpu"): ["reference", "compiled", "fused", "channels_last"],
                     ("learner_update", "gpu"): ["reference", "channels_last", "cuda_graph"]}
    assert [v.name for v in REGISTRY.variants("inference", "cpu")] == ["reference", "fused"]
    assert REGISTRY.variants(KernelKind.REPLAY_SAMPLE) == []


def test_cpu_variants_are_available_here():
    for variant in REGISTRY.variants(KernelKind.LEARNER_UPDATE, "cpu") + REGISTRY.variants("inference", "cpu"):
        assert variant.available() == (True, "")


def test_compiled_needs_a_cpp_compiler(monkeypatch):
    import shutil

    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    ok, reason = REGISTRY.get(KernelKind.LEARNER_UPDATE, "compiled", "cpu").available()
    assert not ok and "needs a C++ compiler" in reason


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the reason given where CUDA is absent")
def test_gpu_variant_says_why_it_is_unavailable():
    variant = REGISTRY.get(KernelKind.LEARNER_UPDATE, "cuda_graph", "gpu")
    ok, reason = variant.available()
    assert not ok and "CUDA is not available" in reason
    with pytest.raises(KernelUnavailable, match="cuda_graph.*CUDA is not available"):
        kernels.build("learner_update", "cuda_graph", None)


def test_build_by_plan_name_returns_the_reference_update():
    learner = Learner(pearl.DQN("CartPole-v1", net_arch=[8]))
    assert kernels.build(KernelKind.LEARNER_UPDATE, "reference", learner) == learner.update


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(KeyError, match=r"'warp'.*\['channels_last', 'compiled', 'fused', 'reference'\]"):
        REGISTRY.get("learner_update", "warp", "cpu")


def test_user_registry_rejects_duplicates_and_bad_device_classes():
    registry = Registry()
    variant = Variant("mine", KernelKind.INFERENCE, "cpu", lambda algo, nets: None, "a user variant")
    registry.register(variant)
    assert kernels.build("inference", "mine", "algo", "nets", registry=registry) is None
    with pytest.raises(ValueError, match="already registered"):
        registry.register(variant)
    with pytest.raises(ValueError, match="device class"):
        Variant("x", KernelKind.INFERENCE, "fpga", lambda: None, "")


def test_device_class_of_torch_devices():
    assert kernels.device_class("cpu") == "cpu"
    assert kernels.device_class(torch.device("cuda", 1)) == "gpu"
    with pytest.raises(ValueError, match="meta"):
        kernels.device_class("meta")
