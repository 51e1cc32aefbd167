"""The ``fused`` CPU learner update (numba over BLAS) equals the reference over 100 updates.

DQN (plain, double-Q, no clip, three layers, the zoo shapes), DDPG; importance weights are non-uniform in the batch
stream. The first run compiles the numba kernel (~10-20 s), later runs load it from
numba's on-disk cache.
"""
from __future__ import annotations

import dataclasses

import pytest
import torch

import pearl_py as pearl
from pearl_py import kernels
from pearl_py.kernels.fused_cpu import make_fused_cpu, numba_available, supports

from kernel_helpers import assert_same_run, batch_stream, twin_learners

pytestmark = pytest.mark.skipif(not numba_available()[0], reason=numba_available()[1])
SMALL = {"batch_size": 32, "net_arch": [32, 32]}


def dqn(**overrides) -> pearl.DQN:
    return pearl.DQN("CartPole-v1", **(SMALL | overrides), learning_rate=2.3e-3, target_update_interval=10)


def ddpg(**overrides) -> pearl.DDPG:
    return pearl.DDPG("Pendulum-v1", **(SMALL | overrides))


ZOO = {"batch_size": 64, "net_arch": [256, 256]}
"""The DQN CartPole zoo shapes: the large GEMMs run through torch's sgemm (numba_blas.LARGE), the small ones scipy's."""


@pytest.mark.parametrize("make_algo", [dqn, lambda: dqn(double_q=True), lambda: dqn(max_grad_norm=None),
                                       lambda: dqn(net_arch=[64, 32, 16]), lambda: dqn(**ZOO),
                                       lambda: dqn(**ZOO, double_q=True), ddpg,
                                       lambda: ddpg(max_grad_norm=0.5, target_update_interval=3)],
                         ids=["dqn", "double_dqn", "dqn_noclip", "dqn_3layers", "dqn_zoo", "double_dqn_zoo", "ddpg",
                              "ddpg_clip_interval3"])
def test_fused_equals_reference(make_algo):
    assert_same_run(make_algo(), lambda learner: kernels.build("learner_update", "fused", learner))


def test_memory_is_shared_with_the_torch_modules_and_optimizers():
    """Alternating fused and reference steps, a checkpoint round trip and a reloaded optimizer state."""
    algo = ddpg()
    ref, mixed = twin_learners(algo)
    fast = make_fused_cpu(mixed)
    batches = batch_stream(algo, n=20)
    for i, batch in enumerate(batches[:10]):
        ref.update(batch)
        (fast if i % 2 else mixed.update)(batch)
    mixed.load_state_dict(mixed.state_dict() | {})   # new optimizer state tensors: the fused step re-adopts
    for batch in batches[10:]:
        ref.update(batch)
        fast(batch)
    for got, expected in zip(mixed.nets.parameters(), ref.nets.parameters()):
        torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-4)
    restored = twin_learners(algo)[0]
    restored.load_state_dict(mixed.state_dict())
    assert restored.gradient_steps == 20
    for got, expected in zip(restored.nets.parameters(), ref.nets.parameters()):
        torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-4)


def test_dqn_hard_target_copy_reaches_the_fused_target():
    algo = dqn()
    learner = twin_learners(algo)[0]
    fast = make_fused_cpu(learner)
    for batch in batch_stream(algo, n=3):
        fast(batch)
    learner.nets.update_targets(1.0)
    assert fast.T.tobytes() == fast.P.tobytes()


def test_other_algorithms_are_refused_with_a_reason_and_build_falls_back():
    learner = twin_learners(pearl.TD3("Pendulum-v1", **SMALL))[0]
    ok, why = supports(learner)
    assert not ok and "DQN and DDPG only" in why
    with pytest.raises(kernels.KernelUnavailable, match="DQN and DDPG only"):
        make_fused_cpu(learner)
    with pytest.warns(RuntimeWarning, match="running the 'reference' variant"):
        update = kernels.build("learner_update", "fused", learner)
    assert update == learner.update


def test_other_network_shapes_are_refused():
    learner = twin_learners(dqn())[0]
    learner.nets.online["q"][1] = torch.nn.Tanh()
    ok, why = supports(learner)
    assert not ok and "Linear(bias)/ReLU" in why


def test_batch_fields_are_checked_and_converted():
    """The kernel reads the batch tensors' memory: a wrong size is an error naming it; int32 actions, float64
    rewards and a non-contiguous obs are converted and give the same step."""
    algo = dqn()
    a, b = twin_learners(algo)
    fast_a, fast_b = make_fused_cpu(a), make_fused_cpu(b)
    batch = batch_stream(algo, n=1)[0]
    with pytest.raises(ValueError, match=r"a batch field has shape \(31,\) \(31 elements\), expected 32 elements"):
        fast_a(dataclasses.replace(batch, rewards=batch.rewards[:31]))
    odd = dataclasses.replace(batch, actions=batch.actions.int(), rewards=batch.rewards.double(),
                              obs=batch.obs.t().contiguous().t())
    assert not odd.obs.is_contiguous()
    expected, got = fast_a(batch), fast_b(odd)
    torch.testing.assert_close(got.losses["q"], expected.losses["q"], rtol=0, atol=0)
    torch.testing.assert_close(got.td_abs, expected.td_abs, rtol=0, atol=0)
