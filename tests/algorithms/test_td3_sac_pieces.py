"""TD3's and SAC's pieces: twin critics, smoothing, delays, the squashed Gaussian and the entropy coefficient."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from test_learning_pieces import batch_for

import pearl_py as pearl
from pearl_py.algorithms import Learner
from pearl_py.algorithms.sac import SQUASH_EPS, mean_and_log_std, squashed_sample


def learner_of(algo) -> Learner:
    torch.manual_seed(0)
    return Learner(algo)


def test_td3_trains_the_actor_and_moves_the_targets_every_policy_delay_steps():
    algo = pearl.TD3("Pendulum-v1", net_arch=[16], policy_delay=3, tau=0.5)
    learner = learner_of(algo)
    actor, target_actor = learner.nets.online.actor[0].weight, learner.nets.target.actor[0].weight
    target_critic = learner.nets.target.critic.q2.net[0].weight
    start = actor.clone(), target_actor.clone(), target_critic.clone()
    reported = [sorted(learner.update(batch_for(algo, seed=i)).losses) for i in range(3)]
    assert reported == [["critic"], ["critic"], ["actor", "critic"]]
    # steps 1 and 2 left actor and targets alone; step 3 trained the actor, then both targets moved by tau
    assert not torch.equal(actor, start[0])
    assert torch.allclose(target_actor, 0.5 * start[1] + 0.5 * actor)
    assert torch.allclose(target_critic, 0.5 * start[2] + 0.5 * learner.nets.online.critic.q2.net[0].weight)
    assert [algo.targets_due(step) for step in range(1, 7)] == [False, False, True, False, False, True]
    assert pearl.TD3("Pendulum-v1", target_update_interval=1).targets_due(1)


def test_td3_critic_target_is_the_smaller_twin_at_the_smoothed_clipped_target_action():
    algo = pearl.TD3("Pendulum-v1", net_arch=[16], target_policy_noise=0.3, target_noise_clip=0.1, gamma=0.9)
    learner = learner_of(algo)
    nets, b = learner.nets, batch_for(algo)
    torch.manual_seed(5)
    loss, td = algo.losses()[0].fn(nets, b)
    torch.manual_seed(5)
    with torch.no_grad():
        noise = (torch.randn(8, 1) * 0.3).clamp(-0.1, 0.1)
        assert 0 < noise.abs().max() <= 0.1
        next_action = (nets.target.actor(b.next_obs) + noise).clamp(-1, 1)
        q1_t, q2_t = nets.target.critic(b.next_obs, next_action)
        target = b.rewards + 0.9 * (1 - b.dones) * torch.minimum(q1_t, q2_t)
        q1, q2 = nets.online.critic(b.obs, b.actions)
    assert torch.allclose(loss, F.mse_loss(q1, target) + F.mse_loss(q2, target))
    assert torch.allclose(td, q1 - target)


def test_td3_actor_maximises_the_first_critic_only():
    algo = pearl.TD3("Pendulum-v1", net_arch=[16])
    learner = learner_of(algo)
    loss, _ = algo.losses()[1].fn(learner.nets, batch_for(algo))
    loss.backward()
    critic = learner.nets.online.critic
    assert critic.q1.net[0].weight.grad is not None and critic.q2.net[0].weight.grad is None


def test_squashed_sample_log_prob_is_the_tanh_gaussian_density():
    """Equal to torch.distributions' Normal log-density of the pre-squash action, minus SB3's correction."""
    actor = torch.nn.Linear(3, 4)
    obs = torch.randn(50, 3)
    torch.manual_seed(1)
    action, log_prob = squashed_sample(actor, obs)
    torch.manual_seed(1)
    mean, log_std = actor(obs).chunk(2, dim=-1)
    u = mean + log_std.exp() * torch.randn_like(mean)
    expected = torch.distributions.Normal(mean, log_std.exp()).log_prob(u).sum(-1) - torch.log(
        1 - torch.tanh(u) ** 2 + SQUASH_EPS).sum(-1)
    assert torch.allclose(action, torch.tanh(u)) and torch.allclose(log_prob, expected, atol=1e-5)


def test_sac_log_std_is_clamped_to_minus_20_and_2():
    algo = pearl.SAC("Pendulum-v1", net_arch=[8])
    learner = learner_of(algo)
    last = learner.nets.online.actor[-1]
    with torch.no_grad():
        last.weight.zero_()
        last.bias.copy_(torch.tensor([0.0, 50.0]))          # mean 0, log std 50 -> 2
    obs = torch.zeros(20000, 3)
    torch.manual_seed(0)
    with torch.no_grad():
        actions = algo.act(learner.nets, obs, explore=True, progress=0.0)
        greedy = algo.act(learner.nets, obs[:1], explore=False, progress=0.0)
    assert float(greedy) == 0.0                                   # greedy: tanh(mean)
    # the pre-squash std is e^2 = 7.39 (not e^50): 84% of |u| ~ |N(0, 7.39^2)| exceed 1.5 (tanh(1.5) = 0.905)
    assert 0.80 < float((actions.abs() > math.tanh(1.5)).float().mean()) < 0.88
    mean, log_std = mean_and_log_std(torch.tensor([[0.5, -50.0], [-0.5, 1.5]]))
    assert mean.flatten().tolist() == [0.5, -0.5] and log_std.flatten().tolist() == [-20.0, 1.5]


def test_sac_critic_loss_bootstraps_from_the_soft_value_of_the_twin_targets():
    algo = pearl.SAC("Pendulum-v1", net_arch=[16], ent_coef="auto_0.3", gamma=0.9)
    learner = learner_of(algo)
    nets, b = learner.nets, batch_for(algo)
    torch.manual_seed(3)
    loss, td = algo.losses()[0].fn(nets, b)
    torch.manual_seed(3)
    with torch.no_grad():
        next_action, next_log_prob = squashed_sample(nets.online.actor, b.next_obs)
        q1_t, q2_t = nets.target.critic(b.next_obs, next_action)
        target = b.rewards + 0.9 * (1 - b.dones) * (torch.minimum(q1_t, q2_t) - 0.3 * next_log_prob)
        q1, q2 = nets.online.critic(b.obs, b.actions)
    assert torch.allclose(loss, 0.5 * (F.mse_loss(q1, target) + F.mse_loss(q2, target)))
    assert torch.allclose(td, q1 - target)


def test_sac_entropy_coefficient_follows_the_target_entropy():
    """d loss / d log(alpha) = -mean(log pi + target_entropy): alpha grows while the policy is less random
    than the target asks, and shrinks while it is more."""
    for target_entropy, direction in ((5.0, 1), (-50.0, -1)):
        algo = pearl.SAC("Pendulum-v1", net_arch=[16], target_entropy=target_entropy, learning_rate=0.01)
        learner = learner_of(algo)
        assert [loss.name for loss in learner.losses] == ["critic", "actor", "ent_coef"]
        before = float(learner.nets.online.ent_coef.log_value.detach())
        learner.update(batch_for(algo))
        after = float(learner.nets.online.ent_coef.log_value.detach())
        assert after - before == pytest.approx(direction * 0.01, rel=1e-3)   # Adam's first step: lr * sign


def test_sac_with_a_fixed_coefficient_has_no_entropy_loss_and_only_critic_targets():
    algo = pearl.SAC("Pendulum-v1", net_arch=[16], ent_coef=0.2, tau=0.25)
    learner = learner_of(algo)
    assert set(learner.nets.online) == {"actor", "critic"} and set(learner.nets.target) == {"critic"}
    assert algo.ent_coef(learner.nets) == 0.2
    before = learner.nets.target.critic.q1.net[0].weight.clone()
    assert sorted(learner.update(batch_for(algo)).losses) == ["actor", "critic"]
    online = learner.nets.online.critic.q1.net[0].weight
    assert torch.allclose(learner.nets.target.critic.q1.net[0].weight, 0.75 * before + 0.25 * online)


def test_sac_actor_loss_weighs_log_prob_by_alpha_against_the_smaller_critic():
    algo = pearl.SAC("Pendulum-v1", net_arch=[16], ent_coef=0.5)
    learner = learner_of(algo)
    nets, b = learner.nets, batch_for(algo)
    torch.manual_seed(2)
    loss, _ = algo.losses()[1].fn(nets, b)
    torch.manual_seed(2)
    with torch.no_grad():
        action, log_prob = squashed_sample(nets.online.actor, b.obs)
        expected = (0.5 * log_prob - torch.minimum(*nets.online.critic(b.obs, action))).mean()
    assert torch.allclose(loss, expected)
