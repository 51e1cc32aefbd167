"""The fused CPU inference path acts exactly like the reference (same networks, same random draws)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import pearl_py as pearl
from pearl_py import kernels
from pearl_py.algorithms import Learner
from pearl_py.kernels.inference import FusedMLP, fused_networks


@pytest.mark.parametrize("algo", [pearl.DQN("CartPole-v1", net_arch=[64, 64]), pearl.DDPG("Pendulum-v1")],
                         ids=["dqn", "ddpg"])
@pytest.mark.parametrize("n_envs", [1, 16])
def test_fused_actions_equal_reference(algo, n_envs):
    nets = Learner(algo).nets
    reference = kernels.build("inference", "reference", algo, nets, device_class="cpu")
    fused = kernels.build("inference", "fused", algo, nets)
    obs = np.random.default_rng(0).standard_normal((n_envs, algo.spec.obs_dim)).astype(np.float32)
    for explore, progress in [(True, 0.01), (True, 0.5), (False, 1.0)]:
        torch.manual_seed(3)
        expected = reference(obs, explore=explore, progress=progress)
        torch.manual_seed(3)
        got = fused(obs, explore=explore, progress=progress)
        np.testing.assert_allclose(got, expected, atol=1e-6)


def test_fused_networks_share_parameters_and_keep_other_modules():
    algo = pearl.DDPG("Pendulum-v1", net_arch=[8])
    nets = Learner(algo).nets
    view = fused_networks(nets, algo.acting_networks)
    assert isinstance(view.online.actor, FusedMLP)
    assert view.online.critic is nets.online.critic    # a StateActionValue is not a plain MLP
    obs = torch.randn(4, algo.spec.obs_dim)
    with torch.no_grad():
        nets.online.actor[0].bias.add_(1.0)           # a param_sync or learner step, seen at once
        with torch.inference_mode():
            torch.testing.assert_close(view.online.actor(obs), nets.online.actor(obs))


def test_results_do_not_alias_the_workspace():
    algo = pearl.DDPG("Pendulum-v1", net_arch=[8])
    fused = kernels.build("inference", "fused", algo, Learner(algo).nets)
    first = fused(np.zeros((2, 3), np.float32), explore=False, progress=1.0)
    kept = first.copy()
    fused(np.ones((2, 3), np.float32), explore=False, progress=1.0)
    np.testing.assert_array_equal(first, kept)


def test_only_plain_mlps_fuse():
    assert FusedMLP.fusable(pearl.mlp(3, (4,), 2, output_activation=torch.nn.Tanh))
    assert not FusedMLP.fusable(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Sigmoid()))
    assert not FusedMLP.fusable(torch.nn.Sequential(torch.nn.ReLU()))
