"""gSDE (``use_sde``) for SAC: the squashed state-dependent Gaussian's log-probability and variance against their
closed forms, gradients, the held exploration matrices' schedule, the kernels' choice, the zoo's entry and a run,
and bad values."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.stats import norm

import pearl_py as pearl
from pearl_py.algorithms.sac import HeldExploration, StateDependentActor, squashed, squashed_sample
from pearl_py.cli import main
from pearl_py.errors import ConfigError
from pearl_py.optimize.whole_run import modelled_calls
from pearl_py.run_config.zoo import load_zoo

ZOO = Path(__file__).parents[1] / "data" / "zoo"


def _actor(seed: int = 0) -> StateDependentActor:
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    actor = StateDependentActor(net, action_dim=2, log_std_init=-1.0)
    with torch.no_grad():
        actor.log_std.copy_(torch.randn(4, 2) * 0.5 - 1.0)
        net[-1].weight.mul_(5.0)        # some means beyond [-2, 2]: the clip is exercised
    return actor


def test_the_squashed_log_prob_is_the_closed_form():
    """``log pi(a|s) = sum_k log N(u_k; clip(mu_k, -2, 2), s_k^2) - sum_k log(1 - tanh(u_k)^2 + 1e-6)``,
    ``s_k^2 = sum_j z_j^2 exp(2 log_std_jk) + 1e-6``, computed in float64 with scipy from the layers' weights."""
    actor = _actor()
    obs = 3 * torch.randn(6, 3, generator=torch.Generator().manual_seed(1))
    dist = actor(obs)
    u = dist.actions(dist.draw_matrices())
    action, log_prob = squashed(u, dist.log_prob(u))

    W1, b1 = (p.detach().double().numpy() for p in (actor.latent[0].weight, actor.latent[0].bias))
    W2, b2 = (p.detach().double().numpy() for p in (actor.mu.weight, actor.mu.bias))
    sigma2 = np.exp(2 * actor.log_std.detach().double().numpy())
    z = np.maximum(obs.double().numpy() @ W1.T + b1, 0.0)
    mean = np.clip(z @ W2.T + b2, -2.0, 2.0)
    assert (np.abs(z @ W2.T + b2) > 2.0).any()
    scale = np.sqrt(z ** 2 @ sigma2 + 1e-6)
    un = u.detach().double().numpy()
    expected = norm.logpdf(un, mean, scale).sum(-1) - np.log(1.0 - np.tanh(un) ** 2 + 1e-6).sum(-1)
    np.testing.assert_allclose(log_prob.detach().numpy(), expected, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(action.detach().numpy(), np.tanh(un), atol=1e-6)


def test_the_pre_tanh_variance_over_exploration_matrices_is_the_state_dependent_one():
    """For one state, ``u = mu + z E`` over many independent ``E`` has mean ``mu`` and variance
    ``sum_j z_j^2 sigma_jk^2`` (Monte Carlo, 200k matrices: relative error of a variance about 0.3%)."""
    actor = _actor(2)
    torch.manual_seed(3)
    with torch.no_grad():
        dist = actor(torch.randn(1, 3).expand(200_000, 3))
        u = dist.actions(dist.draw_matrices(200_000)).double()
        expected_var = (dist.latent[0].double() ** 2) @ dist.std.double() ** 2
    np.testing.assert_allclose(u.var(0).numpy(), expected_var.numpy(), rtol=0.02)
    np.testing.assert_allclose(u.mean(0).numpy(), dist.mean[0].double().numpy(), atol=4 * expected_var.sqrt().max() / 400)


def test_a_loss_sample_shares_one_matrix_and_its_gradient_reaches_log_std_and_the_mean():
    actor = _actor(4)
    obs = torch.randn(5, 3)
    torch.manual_seed(5)
    action, log_prob = squashed_sample(actor, obs)
    torch.manual_seed(5)
    dist = actor(obs)
    matrix = dist.draw_matrices()
    assert matrix.shape == (4, 2)
    assert torch.allclose(action, torch.tanh(dist.mean + dist.latent @ matrix), atol=1e-6)
    (action.sum() + log_prob.sum()).backward()
    assert actor.log_std.grad.abs().sum() > 0 and actor.mu.weight.grad.abs().sum() > 0


def test_acting_holds_one_matrix_per_env_drawn_at_round_starts_and_every_sample_freq_steps():
    actor = _actor(6)
    held = HeldExploration(train_freq=8, sample_freq=3, first_step=0)
    with torch.no_grad():
        dist = actor(torch.randn(2, 3))
        matrices = [held(dist) for _ in range(18)]
    drawn = [t for t in range(18) if t == 0 or matrices[t] is not matrices[t - 1]]
    assert drawn == [0, 3, 6, 8, 11, 14, 16]     # each round of 8: its start, then every 3 steps within it
    assert matrices[0].shape == (2, 4, 2) and not torch.equal(matrices[0][0], matrices[0][1])
    late = HeldExploration(train_freq=8, sample_freq=-1, first_step=5)  # after 5 warm-up steps: next round at 8
    with torch.no_grad():
        seen = [late(dist) for _ in range(6)]
    assert [t for t in range(1, 6) if seen[t] is not seen[t - 1]] == [3]


def test_sac_acts_with_held_matrices_and_greedily_with_the_clipped_mean():
    algo = pearl.SAC("Pendulum-v1", use_sde=True, learning_starts=0, train_freq=4, net_arch=(16, 16))
    nets = algo.fresh_networks()
    obs = torch.randn(3, 3)
    with torch.no_grad():
        first = [algo.act(nets, obs, explore=True, progress=0.0) for _ in range(5)]
        greedy = algo.act(nets, obs, explore=False, progress=0.0)
        mean = nets.online.actor(obs).mean
    assert all(torch.equal(first[0], a) for a in first[1:4]) and not torch.equal(first[3], first[4])
    assert torch.equal(greedy, torch.tanh(mean))


def test_the_fused_kernels_decline_sac_gsde_so_the_plan_takes_torch():
    from pearl_py.kernels import REGISTRY
    from pearl_py.protocol.kernel import INFERENCE, LEARNER_UPDATE

    graph = pearl.SAC("Pendulum-v1", use_sde=True, net_arch=(16, 16)).protocol()
    for kind, form in ((INFERENCE, "squashed_gaussian_sde"), (LEARNER_UPDATE, "sac_sde_critic")):
        assert form in REGISTRY.get(kind, "fused", "cpu").supports(graph.kernel(kind))
        assert REGISTRY.get(kind, "reference", "cpu").supports(graph.kernel(kind)) is None
    plain = pearl.SAC("Pendulum-v1", net_arch=(16, 16)).protocol()
    assert REGISTRY.get(INFERENCE, "fused", "cpu").supports(plain.kernel(INFERENCE)) is None


def test_the_zoos_sac_use_sde_entry_is_read_and_runs(tmp_path):
    cfg = load_zoo(ZOO / "sac.yml", "MountainCarContinuous-v0")
    h = cfg.hyperparameters
    assert h.use_sde and h.sde_sample_freq == -1 and h.log_std_init == -3.67 and h.net_arch == (64, 64)
    out = tmp_path / "run"
    assert main(["run", "--zoo", str(ZOO / "sac.yml"), "--env", "MountainCarContinuous-v0", "--steps", "320",
                 "--plan", "serial", "--set", "eval_episodes=1", "--set", "batch_size=64", "--out", str(out)]) == 0
    result = json.loads((out / "result.json").read_text())
    assert result["env_steps"] == 320 and result["gradient_steps"] == 320
    saved = pearl.load(out)
    assert saved.algorithm.config.use_sde
    assert saved.predict(np.zeros((1, 2), np.float32))[0].shape == (1, 1)


@pytest.mark.parametrize("values, message", [
    ({"sde_sample_freq": 4}, "sde_sample_freq 4 needs use_sde: true"),
    ({"log_std_init": -2.0}, "log_std_init -2.0 needs use_sde: true (without gSDE the log std is an output of the "
                             "actor)"),
    ({"use_sde": True, "sde_sample_freq": -2}, "sde_sample_freq: must be >= -1, got -2"),
])
def test_bad_sac_gsde_values_are_refused_by_name(values, message):
    with pytest.raises(ConfigError) as error:
        pearl.SAC("Pendulum-v1", **values)
    assert message in str(error.value)


def test_use_sde_at_warmup_is_read_from_the_zoo_for_sac_and_refused_by_name_elsewhere(tmp_path):
    path = tmp_path / "sac.yml"
    path.write_text("Pendulum-v1:\n  use_sde: True\n  use_sde_at_warmup: True\n")
    assert load_zoo(path, "Pendulum-v1").hyperparameters.use_sde_at_warmup
    path.write_text("Pendulum-v1:\n  use_sde_at_warmup: True\n")
    with pytest.raises(ConfigError) as error:
        load_zoo(path, "Pendulum-v1")
    assert str(error.value).endswith("sac.yml:2: Pendulum-v1.use_sde_at_warmup: use_sde_at_warmup needs use_sde: true "
                                     "(the warm-up acts with the gSDE policy)")
    td3 = tmp_path / "td3.yml"
    td3.write_text("Pendulum-v1:\n  use_sde_at_warmup: True\n")
    with pytest.raises(ConfigError) as error:
        load_zoo(td3, "Pendulum-v1")
    assert str(error.value).endswith("td3.yml:2: Pendulum-v1.use_sde_at_warmup: the warm-up with the gSDE policy is "
                                     "implemented for sac only (with use_sde): remove the key to run without it")


@pytest.mark.parametrize("at_warmup", [False, True])
def test_use_sde_at_warmup_acts_with_the_gsde_policy_in_the_warm_up(tmp_path, at_warmup):
    """SB3's meaning: with use_sde_at_warmup the warm-up's actions are the gSDE policy's (its inference runs, as the
    protocol's whole-run model counts it), without it uniform random actions (no inference)."""
    algo = pearl.SAC("Pendulum-v1", use_sde=True, use_sde_at_warmup=at_warmup, learning_starts=64, net_arch=(8,))
    result = pearl.train(algo, total_steps=64, seed=0, plan="serial", out=tmp_path, eval_episodes=1,
                         log=lambda line: None)
    times = result.kernel_times
    assert times.get("inference", {}).get("calls", 0) == (64 if at_warmup else 0)
    assert times.get("warmup_actions", {}).get("calls", 0) == (0 if at_warmup else 64)
    assert result.gradient_steps == 0
    calls = modelled_calls(algo.protocol(serialized=True), horizon=1000)
    assert calls["inference"] == (1000 if at_warmup else 1000 - 64)