"""Ornstein-Uhlenbeck action noise (DDPG/TD3 ``noise_type: ornstein-uhlenbeck``): the sequence, the reset at
episode ends, the collector, the zoo's entries and bad values."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

import pearl_py as pearl
from pearl_py.algorithms.off_policy.action_noise import OrnsteinUhlenbeckNoise
from pearl_py.algorithms.on_policy.noise import env_uniforms
from pearl_py.errors import ConfigError
from pearl_py.kernels.inference import make_fused
from pearl_py.kernels.numba_blas import numba_available
from pearl_py.run_config.zoo import load_zoo
from pearl_py.runtime.collect import Collector

ZOO = Path(__file__).parents[1] / "data" / "zoo"


def _normals(seed: int, envs: range, draw: int, dim: int) -> np.ndarray:
    u = env_uniforms(seed, envs, draw, 2 * dim).astype(np.float64)
    return np.sqrt(-2 * np.log(u[:, :dim])) * np.cos(2 * math.pi * u[:, dim:])


def test_the_sequence_is_the_discretised_process_for_a_seed():
    sigma, envs = 0.5, range(2, 5)
    ou = OrnsteinUhlenbeckNoise(sigma, action_dim=2, seed=7, envs=envs)
    x = np.zeros((3, 2))
    for t in range(6):   # x_{t+1} = x_t + 0.15 (0 - x_t) 0.01 + sigma sqrt(0.01) n_t, x_0 = 0
        x = x + 0.15 * (0 - x) * 0.01 + sigma * math.sqrt(0.01) * _normals(7, envs, t, 2)
        assert np.allclose(ou(), x, atol=1e-6)
    split = OrnsteinUhlenbeckNoise(sigma, action_dim=2, seed=7, envs=range(3, 5))   # env 3 and 4 alone
    assert np.allclose([split() for _ in range(6)][-1], x[1:], atol=1e-6)


def test_reset_starts_the_ended_envs_again_from_zero():
    ou = OrnsteinUhlenbeckNoise(0.3, action_dim=1, seed=0, envs=range(2))
    for _ in range(4):
        before = ou().copy()
    ou.reset(np.array([True, False]))
    after = ou()
    n = _normals(0, range(2), 4, 1)
    assert after[0, 0] == pytest.approx(0.3 * 0.1 * n[0, 0], abs=1e-6)
    assert after[1, 0] == pytest.approx(before[1, 0] * (1 - 0.15 * 0.01) + 0.3 * 0.1 * n[1, 0], abs=1e-6)


def test_the_collector_adds_the_noise_and_resets_it_at_episode_end():
    algo = pearl.TD3("Pendulum-v1", noise_type="ornstein-uhlenbeck", noise_std=0.5, n_envs=2,
                     env_kwargs={"max_episode_steps": 3})
    reference = algo.action_noise(seed=0, envs=range(2))
    with Collector(algo, seed=0, record=lambda *_: None) as collector:
        for t in range(5):
            step = collector.step(lambda obs: np.zeros((2, 1), np.float32))
            assert np.allclose(step.actions, np.clip(reference(), -1, 1), atol=1e-6)
            if t == 2:   # every episode ended at its third step: the noise starts again from 0
                assert step.done.all()
                reference.reset(step.done)
                assert not collector.noise.state.any()


def test_acting_adds_no_gaussian_noise_with_ornstein_uhlenbeck():
    algo = pearl.DDPG("Pendulum-v1", noise_type="ornstein-uhlenbeck", noise_std=0.5)
    nets = algo.fresh_networks()
    obs = torch.zeros(3, 3)
    assert torch.equal(algo.act(nets, obs, explore=True, progress=0.0), nets.online.actor(obs))
    if numba_available()[0]:                        # the fused inference adds none either
        fused = make_fused(algo, nets)(obs.numpy(), explore=True, progress=0.0)
        assert np.allclose(fused, nets.online.actor(obs).detach().numpy(), atol=1e-5)
    assert pearl.DDPG("Pendulum-v1", noise_std=0.5).action_noise(0, range(1)) is None


@pytest.mark.parametrize("file", ["ddpg.yml", "td3.yml"])
def test_the_zoos_ornstein_uhlenbeck_entries_are_read(file):
    cfg = load_zoo(ZOO / file, "MountainCarContinuous-v0")
    assert (cfg.hyperparameters.noise_type, cfg.hyperparameters.noise_std) == ("ornstein-uhlenbeck", 0.5)


def test_a_bad_noise_type_is_refused_by_name():
    with pytest.raises(ConfigError) as error:
        pearl.TD3("Pendulum-v1", noise_type="brownian")
    assert str(error.value) == "noise_type: must be one of normal, ornstein-uhlenbeck; got str 'brownian'"
