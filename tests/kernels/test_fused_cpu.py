"""The ``fused`` CPU learner update (numba over BLAS) equals the reference over 100 updates.

DQN (plain, double-Q, no clip, three layers, the zoo shapes), DDPG, TD3 (delays, clip, target interval), SAC
(learnt, fixed and 'auto_0.1' coefficients, clip, target interval); importance weights are non-uniform in the
batch stream; the zoo shapes of DDPG, TD3 and SAC from one state on one fixed batch (their Adam amplifies float32
summation-order differences over many steps: the DDPG zoo run drifts to 1e-3 after 80 updates, as before TD3 and
SAC were added). The first run compiles the numba kernels (~10-60 s), later runs load them from numba's on-disk
cache.
"""
from __future__ import annotations

import dataclasses

import pytest
import torch
from kernel_helpers import assert_same_run, batch_stream, twin_learners

import pearl_py as pearl
from pearl_py import kernels
from pearl_py.kernels.fused_cpu import make_fused_cpu, numba_available, supports

pytestmark = pytest.mark.skipif(not numba_available()[0], reason=numba_available()[1])
SMALL = {"batch_size": 32, "net_arch": [32, 32]}


def dqn(**overrides) -> pearl.DQN:
    return pearl.DQN("CartPole-v1", **(SMALL | {"learning_rate": 2.3e-3} | overrides), target_update_interval=10)


def ddpg(**overrides) -> pearl.DDPG:
    return pearl.DDPG("Pendulum-v1", **(SMALL | overrides))


def td3(**overrides) -> pearl.TD3:
    return pearl.TD3("Pendulum-v1", **(SMALL | overrides))


def sac(**overrides) -> pearl.SAC:
    return pearl.SAC("Pendulum-v1", **(SMALL | overrides))


ZOO = {"batch_size": 64, "net_arch": [256, 256]}
"""The DQN CartPole zoo shapes: the large GEMMs run through torch's sgemm (numba_blas.LARGE), the small ones scipy's."""


@pytest.mark.parametrize("make_algo", [dqn, lambda: dqn(double_q=True), lambda: dqn(max_grad_norm=None),
                                       lambda: dqn(net_arch=[64, 32, 16]), lambda: dqn(**ZOO),
                                       lambda: dqn(**ZOO, double_q=True), ddpg,
                                       lambda: ddpg(max_grad_norm=0.5, target_update_interval=3), td3,
                                       lambda: td3(max_grad_norm=0.5, policy_delay=3, target_update_interval=1),
                                       sac, lambda: sac(ent_coef=0.1), lambda: sac(ent_coef="auto_0.1", gamma=0.9),
                                       lambda: sac(max_grad_norm=0.5, target_update_interval=3, net_arch=[32, 16, 8])],
                         ids=["dqn", "double_dqn", "dqn_noclip", "dqn_3layers", "dqn_zoo", "double_dqn_zoo", "ddpg",
                              "ddpg_clip_interval3", "td3", "td3_clip_delay3_interval1", "sac", "sac_fixed_alpha",
                              "sac_auto_0.1", "sac_clip_interval3_3layers"])
def test_fused_equals_reference(make_algo):
    assert_same_run(make_algo(), lambda learner: kernels.build("learner_update", "fused", learner))


@pytest.mark.parametrize("make_algo", [lambda: pearl.DDPG("Pendulum-v1"), lambda: pearl.TD3("Pendulum-v1"),
                                       lambda: pearl.SAC("Pendulum-v1", learning_rate=1e-3)],
                         ids=["ddpg_zoo", "td3_zoo", "sac_zoo"])
def test_fused_equals_reference_at_the_zoo_shapes_on_a_fixed_batch(make_algo):
    """Batch 256, [400, 300] (DDPG, TD3) and [256, 256] (SAC): the GEMMs run through torch's MKL sgemm. Two steps
    (TD3's second one trains the actor) from one state on one batch."""
    assert_same_run(make_algo(), make_fused_cpu, updates=2, same_batch=True)


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


class CustomCritic(pearl.TD3):
    """TD3 with its own critic loss: the default form "custom" keeps the fused TD3 step away from it."""

    name = "custom-critic-test"

    def losses(self):
        critic, actor = super().losses()
        return [pearl.Loss("critic", trains="critic", fn=critic.fn), actor]


def test_other_algorithms_are_refused_with_a_reason_and_build_falls_back():
    learner = twin_learners(CustomCritic("Pendulum-v1", **SMALL))[0]
    ok, why = supports(learner)
    assert not ok and why == (
        "the fused learner update implements the loss forms dqn_td | ddpg_critic+dpg_actor | td3_critic+td3_actor | "
        "sac_critic+sac_actor+sac_entropy | sac_critic+sac_actor; custom-critic-test declares critic (custom, trains "
        "critic), actor (td3_actor, trains actor) (use the reference or compiled variant)")
    kernel = learner.algorithm.protocol().kernel("learner_update")
    assert kernels.REGISTRY.get("learner_update", "fused", "cpu").supports(kernel).startswith("implements the forms")
    with pytest.raises(kernels.KernelUnavailable, match="implements the loss forms"):
        make_fused_cpu(learner)
    with pytest.warns(RuntimeWarning, match="running the 'reference' variant"):
        update = kernels.build("learner_update", "fused", learner)
    assert update == learner.update


def test_other_network_shapes_are_refused():
    learner = twin_learners(dqn())[0]
    learner.nets.online["q"][1] = torch.nn.Tanh()
    ok, why = supports(learner)
    assert not ok and "Linear(bias)/ReLU" in why


class TanhSAC(pearl.SAC):
    """Declares SAC's forms but builds a tanh-ended actor: the structure check refuses it."""

    name = "tanh-sac-test"

    def build_networks(self):
        nets = super().build_networks()
        nets["actor"] = pearl.mlp(self.spec.obs_dim, self.config.net_arch, 2 * self.spec.action_dim,
                                  output_activation=torch.nn.Tanh)
        return nets


class OneCriticTD3(pearl.TD3):
    name = "one-critic-td3-test"

    def build_networks(self):
        nets = super().build_networks()
        nets["critic"] = pearl.algorithms.StateActionValue(self.spec.obs_dim, self.spec.action_dim, (8,))
        return nets


def test_declared_forms_on_other_network_structures_are_refused():
    assert supports(twin_learners(TanhSAC("Pendulum-v1", **SMALL))[0]) == (
        False, "actor: only Linear(bias)/ReLU alternations (pearl_py's mlp) are supported")
    assert supports(twin_learners(OneCriticTD3("Pendulum-v1", **SMALL))[0]) == (
        False, "critic: StateActionValue is not a TwinStateActionValue")


def test_a_user_algorithm_declaring_a_recipe_gets_the_fused_step_whatever_its_class():
    """Supported by its declared forms and networks: a subclass that keeps DDPG's math (and a renamed SAC)."""
    class Renamed(pearl.DDPG):
        name = "renamed-ddpg-test"

    renamed_sac = type("RenamedSAC", (pearl.SAC,), {"name": "renamed-sac-test"})
    assert supports(twin_learners(Renamed("Pendulum-v1", **SMALL))[0]) == (True, "")
    assert supports(twin_learners(renamed_sac("Pendulum-v1", **SMALL))[0]) == (True, "")
    assert_same_run(Renamed("Pendulum-v1", **SMALL), make_fused_cpu, updates=5)


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


def test_a_delay_the_recipe_does_not_declare_is_refused():
    class DelayedCritic(pearl.TD3):
        name = "delayed-critic-test"

        def losses(self):
            critic, actor = super().losses()
            return [dataclasses.replace(critic, every=2), actor]

    assert supports(twin_learners(DelayedCritic("Pendulum-v1", **SMALL))[0]) == (
        False, "loss 'critic' (td3_critic) runs every 2 steps; the fused step runs it every step")


@pytest.mark.parametrize("make_algo", [lambda: dqn(learning_rate="lin_2.3e-3"), lambda: td3(learning_rate="lin_1e-3"),
                                       lambda: sac(learning_rate="lin_1e-3")], ids=["dqn", "td3", "sac"])
def test_a_lin_learning_rate_set_per_round_is_what_the_fused_step_uses(make_algo):
    assert_same_run(make_algo(), make_fused_cpu, rounds_of=10)
