"""The algorithm pieces: losses, target updates, exploration, action scaling."""
from __future__ import annotations

import io

import numpy as np
import pytest
import torch

import pearl_py as pearl
from pearl_py.algorithms import Learner, TensorBatch
from pearl_py.envs import EnvSpec
from pearl_py.algorithms.schedules import linear_schedule


def batch_for(algo, n=8, seed=0, weights=None):
    g = torch.Generator().manual_seed(seed)
    spec = algo.spec
    obs = torch.randn(n, spec.obs_dim, generator=g)
    actions = (torch.randint(0, spec.action_dim, (n,), generator=g) if spec.discrete
               else torch.rand(n, spec.action_dim, generator=g) * 2 - 1)
    w = torch.ones(n) if weights is None else weights
    return TensorBatch(obs, actions, torch.randn(n, generator=g), torch.randn(n, spec.obs_dim, generator=g),
                       (torch.rand(n, generator=g) < 0.3).float(), w)


def test_dqn_loss_is_huber_on_the_bellman_target():
    algo = pearl.DQN("CartPole-v1", net_arch=[16], gamma=0.9)
    torch.manual_seed(0)
    learner = Learner(algo)
    b = batch_for(algo)
    nets = learner.nets
    loss, td = algo.losses()[0].fn(nets, b)
    with torch.no_grad():
        target = b.rewards + 0.9 * (1 - b.dones) * nets.target.q(b.next_obs).max(1).values
        q = nets.online.q(b.obs)[torch.arange(8), b.actions]
    assert torch.allclose(td, q - target)
    assert torch.allclose(loss, torch.nn.functional.smooth_l1_loss(q, target))


def test_double_q_picks_the_next_action_with_the_online_network():
    algo = pearl.DQN("CartPole-v1", net_arch=[16], double_q=True)
    torch.manual_seed(0)
    learner = Learner(algo)
    with torch.no_grad():  # make target and online disagree
        for p in learner.nets.target.parameters():
            p.add_(torch.randn_like(p))
    b = batch_for(algo)
    _, td = algo.losses()[0].fn(learner.nets, b)
    with torch.no_grad():
        best = learner.nets.online.q(b.next_obs).argmax(1)
        next_v = learner.nets.target.q(b.next_obs)[torch.arange(8), best]
        target = b.rewards + algo.config.gamma * (1 - b.dones) * next_v
        q = learner.nets.online.q(b.obs)[torch.arange(8), b.actions]
    assert torch.allclose(td, q - target)


def test_importance_weights_scale_the_loss():
    algo = pearl.DQN("CartPole-v1", net_arch=[16])
    torch.manual_seed(0)
    learner = Learner(algo)
    plain, _ = algo.losses()[0].fn(learner.nets, batch_for(algo))
    doubled, _ = algo.losses()[0].fn(learner.nets, batch_for(algo, weights=torch.full((8,), 2.0)))
    assert torch.allclose(doubled, 2 * plain)


def test_dqn_target_is_copied_every_interval_env_steps():
    algo = pearl.DQN("CartPole-v1", net_arch=[16], target_update_interval=10, learning_rate=0.1)
    torch.manual_seed(0)
    learner = Learner(algo)
    learner.update(batch_for(algo))
    online, target = learner.nets.online.q[0].weight, learner.nets.target.q[0].weight
    assert not torch.equal(online, target)
    algo.after_env_step(learner.nets, 9)
    assert not torch.equal(online, target)
    algo.after_env_step(learner.nets, 10)
    assert torch.equal(online, target)


def test_ddpg_soft_updates_targets_every_gradient_step():
    algo = pearl.DDPG("Pendulum-v1", net_arch=[16], tau=0.25)
    torch.manual_seed(0)
    learner = Learner(algo)
    before = learner.nets.target.critic.net[0].weight.clone()
    learner.update(batch_for(algo))
    online = learner.nets.online.critic.net[0].weight
    assert torch.allclose(learner.nets.target.critic.net[0].weight, 0.75 * before + 0.25 * online)
    assert learner.gradient_steps == 1


def test_ddpg_updates_the_critic_before_the_actor_and_keeps_critic_fixed_in_actor_step():
    algo = pearl.DDPG("Pendulum-v1", net_arch=[16])
    torch.manual_seed(0)
    learner = Learner(algo)
    out = learner.update(batch_for(algo))
    assert list(out.losses) == ["critic", "actor"] and out.td_abs.shape == (8,)


def test_epsilon_schedule_and_greedy_acting():
    algo = pearl.DQN("CartPole-v1", exploration_fraction=0.5, exploration_initial_eps=1.0,
                     exploration_final_eps=0.1)
    assert algo.epsilon(0.0) == 1.0 and algo.epsilon(0.25) == pytest.approx(0.55) and algo.epsilon(0.9) == 0.1
    assert linear_schedule(1.0, 0.0, 0.0, 0.0) == 0.0
    torch.manual_seed(0)
    learner = Learner(algo)
    obs = torch.randn(2000, 4)
    greedy = algo.act(learner.nets, obs, explore=False, progress=0.0)
    explored = algo.act(learner.nets, obs, explore=True, progress=0.0)  # eps = 1: uniform
    assert 0.4 < (explored == greedy).float().mean() < 0.6


def test_continuous_actions_are_scaled_to_the_env_bounds():
    spec = EnvSpec.from_env_id("Pendulum-v1")
    assert np.allclose(spec.to_env_action(np.array([[-1.0], [0.0], [1.0], [3.0]])), [[-2.0], [0.0], [2.0], [2.0]])
    actions = spec.random_actions(1000, np.random.default_rng(0))
    assert actions.shape == (1000, 1) and actions.min() >= -1 and actions.max() <= 1


def test_learner_state_round_trips():
    algo = pearl.DDPG("Pendulum-v1", net_arch=[16])
    torch.manual_seed(0)
    a = Learner(algo)
    a.update(batch_for(algo))
    saved = io.BytesIO()
    torch.save(a.state_dict(), saved)
    saved.seek(0)
    b = Learner(algo)
    b.load_state_dict(torch.load(saved))
    out_a, out_b = a.update(batch_for(algo, seed=1)), b.update(batch_for(algo, seed=1))
    assert all(torch.equal(out_a.losses[k], out_b.losses[k]) for k in out_a.losses)


def test_target_update_follows_the_online_tensors_after_they_are_replaced():
    """``update_targets`` gathers its tensor pairs once; ``load_state_dict(assign=True)`` replaces the online
    tensors, and the next hard and soft updates read the new ones."""
    from pearl_py.algorithms.networks import Networks, mlp
    nets = Networks({"q": mlp(3, [4], 2)}, target_names=["q"])
    nets.update_targets(1.0)
    fresh = {k: torch.full_like(v, 2.0) for k, v in nets.state_dict().items()}
    nets.load_state_dict(fresh, assign=True)
    nets.target.q.load_state_dict({k: torch.zeros_like(v) for k, v in nets.target.q.state_dict().items()})
    nets.update_targets(0.25)
    assert all(torch.equal(p, torch.full_like(p, 0.5)) for p in nets.target.q.parameters())
    nets.update_targets(1.0)
    assert all(torch.equal(p, torch.full_like(p, 2.0)) for p in nets.target.q.parameters())
