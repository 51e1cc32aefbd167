"""gSDE (``use_sde``) for PPO and A2C: the distribution's numbers, the exploration matrix's schedule, the zoo's
entries, a run, and bad values."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

import pearl_py as pearl
from pearl_py.algorithms.networks import Networks
from pearl_py.algorithms.on_policy.distributions import StateDependentGaussian
from pearl_py.cli import main
from pearl_py.errors import ConfigError
from pearl_py.kernels.on_policy import build_acting
from pearl_py.run_config.zoo import load_zoo
from pearl_py.runtime.on_policy_collect import RolloutCollector

ZOO = Path(__file__).parents[1] / "data" / "zoo"


def test_log_prob_and_entropy_are_the_normal_of_the_state_dependent_variance():
    g = torch.Generator().manual_seed(0)
    mean, latent = torch.randn(5, 2, generator=g), torch.randn(5, 3, generator=g)
    log_std, actions = torch.randn(3, 2, generator=g), torch.randn(5, 2, generator=g)
    dist = StateDependentGaussian(mean, latent, log_std)
    for row in range(5):
        log_p, entropy = 0.0, 0.0
        for k in range(2):   # variance_k = sum_j z_j^2 sigma_jk^2 + 1e-6
            var = sum(latent[row, j].item() ** 2 * math.exp(2 * log_std[j, k].item()) for j in range(3)) + 1e-6
            error = actions[row, k].item() - mean[row, k].item()
            log_p += -error ** 2 / (2 * var) - 0.5 * math.log(2 * math.pi * var)
            entropy += 0.5 * math.log(2 * math.pi * math.e * var)
        assert dist.log_prob(actions)[row].item() == pytest.approx(log_p, rel=1e-5)
        assert dist.entropy()[row].item() == pytest.approx(entropy, rel=1e-5)


def test_a_sample_is_the_mean_plus_the_features_times_the_exploration_matrix():
    g = torch.Generator().manual_seed(1)
    mean, latent = torch.randn(4, 2, generator=g), torch.randn(4, 3, generator=g)
    log_std = torch.randn(3, 2, generator=g)
    dist = StateDependentGaussian(mean, latent, log_std)
    noise = torch.rand(4, StateDependentGaussian.noise_width(3, 2), generator=g)
    u1, u2 = noise[:, :6], noise[:, 6:]
    normals = (torch.sqrt(-2 * torch.log(u1)) * torch.cos(2 * math.pi * u2)).view(4, 3, 2)
    for row in range(4):
        matrix = log_std.exp() * normals[row]
        assert torch.allclose(dist.sample(noise)[row], mean[row] + latent[row] @ matrix, atol=1e-6)


def test_the_exploration_matrix_is_held_between_resamples_and_drawn_at_each_rollout_start():
    algo = pearl.PPO("Pendulum-v1", use_sde=True, sde_sample_freq=4, n_steps=6, n_envs=2, batch_size=12)
    assert [algo.noise_step(t) for t in range(14)] == [0, 0, 0, 0, 4, 4, 6, 6, 6, 6, 10, 10, 12, 12]
    assert [pearl.PPO("Pendulum-v1", use_sde=True, n_steps=6).noise_step(t) for t in (0, 5, 6, 11)] == [0, 0, 6, 6]
    acting = build_acting("reference", algo, Networks(algo.build_networks()))
    seen: list[np.ndarray] = []

    class Spy:
        noise_width = acting.noise_width

        def __call__(self, obs, noise):
            seen.append(noise)
            return acting(obs, noise)

        def values(self, obs):
            return acting.values(obs)

    collector = RolloutCollector(algo, seed=0, acting=Spy(), record=lambda *_: None)
    for t in range(14):
        collector.step(t)
    collector.close()
    draws = [0, 4, 6, 10, 12]   # every 4 steps from each rollout's start (6 steps a rollout)
    for t in range(14):
        drawn_at = max(d for d in draws if d <= t)
        assert np.array_equal(seen[t], seen[drawn_at]), t
    assert len({seen[d].tobytes() for d in draws}) == len(draws)
    assert not np.array_equal(seen[0][0], seen[0][1])           # each env its own matrix


def test_the_fused_kernels_decline_gsde_so_the_plan_takes_torch():
    from pearl_py.kernels.on_policy import ON_POLICY
    from pearl_py.protocol.kernel import INFERENCE, LEARNER_UPDATE

    graph = pearl.PPO("Pendulum-v1", use_sde=True, n_steps=64).protocol()
    for kind in (INFERENCE, LEARNER_UPDATE):
        assert "actor_critic_sde" in ON_POLICY.get(kind, "fused", "cpu").supports(graph.kernel(kind))
        assert ON_POLICY.get(kind, "reference", "cpu").supports(graph.kernel(kind)) is None


@pytest.mark.parametrize("file, env, freq", [("ppo.yml", "Pendulum-v1", 4), ("ppo.yml", "MountainCarContinuous-v0", -1),
                                             ("a2c.yml", "Pendulum-v1", -1)])
def test_the_zoos_use_sde_entries_are_read(file, env, freq):
    cfg = load_zoo(ZOO / file, env, sets=["normalize=false"])
    assert cfg.hyperparameters.use_sde and cfg.hyperparameters.sde_sample_freq == freq


def test_a_zoo_gsde_entry_runs_the_same_for_a_seed(tmp_path):
    results = []
    for name in ("a", "b"):
        out = tmp_path / name
        assert main(["run", "--zoo", str(ZOO / "ppo.yml"), "--env", "Pendulum-v1", "--steps", "256", "--plan",
                     "serial", "--set", "n_steps=64", "--set", "n_epochs=2", "--set", "eval_episodes=1",
                     "--out", str(out)]) == 0
        results.append(json.loads((out / "result.json").read_text()))
        saved = pearl.load(out)
        assert saved.algorithm.config.use_sde and saved.algorithm.config.sde_sample_freq == 4
    assert results[0]["env_steps"] == 256 and results[0]["eval_returns"] == results[1]["eval_returns"]


@pytest.mark.parametrize("env, values, message", [
    ("CartPole-v1", {"use_sde": True}, "use_sde: gSDE needs continuous (Box) actions; env 'CartPole-v1' has "
                                       "discrete ones"),
    ("Pendulum-v1", {"sde_sample_freq": 4}, "sde_sample_freq 4 needs use_sde: true"),
    ("Pendulum-v1", {"use_sde": True, "sde_sample_freq": -2}, "sde_sample_freq: must be >= -1, got -2"),
    ("Pendulum-v1", {"use_sde": "yes"}, "use_sde: expected true/false, got str 'yes'"),
])
def test_bad_gsde_values_are_refused_by_name(env, values, message):
    with pytest.raises(ConfigError) as error:
        pearl.A2C(env, **values)
    assert message in str(error.value)


def test_a_seeded_parallel_gsde_run_equals_the_serial_run():
    """The actor draws the serial run's exploration matrices (one actor: torch's GEMMs are not row-invariant)."""
    from pearl_py.plan import Placement, Plan
    from pearl_py.protocol.kernel import ADVANTAGE, ENV_STEP, INFERENCE, LEARNER_UPDATE, PARAM_SYNC, ROLLOUT_INSERT
    from pearl_py.runtime.on_policy_serial import OnPolicySerialExecutor
    from pearl_py.runtime.parallel.on_policy import OnPolicyParallelExecutor

    placements = {kind: Placement("cpu") for kind in (ENV_STEP, INFERENCE, ROLLOUT_INSERT, ADVANTAGE, LEARNER_UPDATE,
                                                      PARAM_SYNC)}
    plan = Plan(platform="local", objective="throughput", placements=placements, mode="synchronous",
                devices={"cpu": "cpu"}, solver="test")
    hyper = dict(n_envs=2, n_steps=16, batch_size=32, n_epochs=2, net_arch=[16], use_sde=True, sde_sample_freq=4)
    serial = OnPolicySerialExecutor(pearl.PPO("Pendulum-v1", **hyper), 3, plan=plan, eval_episodes=1, progress=False)
    expected = serial.run(64)
    parallel = OnPolicyParallelExecutor(pearl.PPO("Pendulum-v1", **hyper), plan, seed=3, eval_episodes=1,
                                        progress=False)
    got = parallel.run(64)
    assert got.backend == "local-parallel" and got.env_steps == expected.env_steps == 64
    assert np.array_equal(parallel.rollout.actions, serial.rollout.actions)
    for key, value in serial.learner.nets.online.state_dict().items():
        assert torch.equal(parallel.learner.nets.online.state_dict()[key], value), key
