"""The on-policy family: GAE, the rollout's minibatches, schedules, distributions, determinism, config errors."""
from __future__ import annotations

import json
import math
import re

import gymnasium as gym
import numpy as np
import pytest
import torch

import pearl_py as pearl
from pearl_py.algorithms.on_policy import (
    ActorCritic,
    Categorical,
    DiagGaussian,
    OnPolicyLearner,
    Schedule,
    bootstrap_truncated,
    gae,
)
from pearl_py.cli import main
from pearl_py.runtime.on_policy_serial import OnPolicySerialExecutor
from pearl_py.runtime.timing import KernelTimer


# -- GAE ---------------------------------------------------------------------------------------
def test_gae_by_hand_with_a_termination_and_a_truncation():
    """gamma 0.5, lambda 0.5 (gamma * lambda = 0.25); two envs, four steps, worked by hand.

    env 0: values 2; its episode ends by termination at t=1 (a new one starts at t=2); the
    rollout ends mid-episode, V(next) = 4.
      t=3: delta = 1 + 0.5*4 - 2 = 1                    A = 1
      t=2: delta = 1 + 0.5*2 - 2 = 0                    A = 0 + 0.25*1 = 0.25
      t=1: delta = 1 - 2 = -1 (terminal: no bootstrap)  A = -1 (nothing carried across the end)
      t=0: delta = 1 + 0.5*2 - 2 = 0                    A = 0 + 0.25*(-1) = -0.25
    env 1: values 1, rewards 1, 0, 2, 1; truncated at t=2 with V(final obs) = 2, so its reward becomes
    2 + 0.5*2 = 3; the last step ends an episode too (last_dones = 1), V(next) = 2 is ignored.
      t=3: delta = 1 - 1 = 0                            A = 0
      t=2: delta = 3 - 1 = 2                            A = 2
      t=1: delta = 0 + 0.5*1 - 1 = -0.5                 A = -0.5 + 0.25*2 = 0
      t=0: delta = 1 + 0.5*1 - 1 = 0.5                  A = 0.5 + 0.25*0 = 0.5
    """
    env_rewards = np.array([[1, 1], [1, 0], [1, 2], [1, 1]], dtype=np.float32)
    terminated = np.array([[0, 0], [1, 0], [0, 0], [0, 0]], dtype=bool)
    truncated = np.array([[0, 0], [0, 0], [0, 1], [0, 0]], dtype=bool)
    final_values = np.array([[0, 0], [9, 0], [0, 2], [0, 0]], dtype=np.float32)  # 9: terminated, must be unused
    rewards = np.stack([bootstrap_truncated(env_rewards[t], terminated[t], truncated[t], final_values[t], 0.5)
                        for t in range(4)])
    assert rewards.tolist() == [[1, 1], [1, 0], [1, 3], [1, 1]]
    values = np.array([[2, 1]] * 4, dtype=np.float32)
    episode_starts = np.array([[1, 1], [0, 0], [1, 0], [0, 1]], dtype=np.float32)
    adv, ret = gae(rewards, values, episode_starts, last_values=np.array([4, 2], np.float32),
                   last_dones=np.array([0, 1], np.float32), gamma=0.5, gae_lambda=0.5)
    np.testing.assert_allclose(adv, [[-0.25, 0.5], [-1, 0], [0.25, 2], [1, 0]])
    np.testing.assert_allclose(ret, adv + values)
    assert adv.dtype == ret.dtype == np.float32


def test_bootstrap_skips_an_episode_both_terminated_and_truncated():
    out = bootstrap_truncated(np.ones(2, np.float32), np.array([True, False]), np.array([True, True]),
                              np.array([5.0, 5.0], np.float32), gamma=0.9)
    assert out.tolist() == [1.0, pytest.approx(5.5)]


def test_gae_equals_sb3_rollout_buffer_on_random_rollouts():
    sb3_buffers = pytest.importorskip("stable_baselines3.common.buffers")
    rng = np.random.default_rng(3)
    n_steps, n_envs, gamma, lam = 37, 5, 0.97, 0.9
    sb3 = sb3_buffers.RolloutBuffer(n_steps, gym.spaces.Box(-1, 1, (2,)), gym.spaces.Discrete(2), device="cpu",
                                    gamma=gamma, gae_lambda=lam, n_envs=n_envs)
    rewards = rng.normal(size=(n_steps, n_envs)).astype(np.float32)
    values = rng.normal(size=(n_steps, n_envs)).astype(np.float32)
    starts = (rng.random((n_steps, n_envs)) < 0.15).astype(np.float32)
    for t in range(n_steps):
        sb3.add(np.zeros((n_envs, 2)), np.zeros(n_envs), rewards[t], starts[t], torch.as_tensor(values[t]),
                torch.zeros(n_envs))
    last_values, last_dones = rng.normal(size=n_envs).astype(np.float32), np.array([0, 1, 0, 0, 1])
    sb3.compute_returns_and_advantage(torch.as_tensor(last_values), last_dones)
    adv, ret = gae(rewards, values, starts, last_values, last_dones, gamma, lam)
    np.testing.assert_allclose(adv, sb3.advantages, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ret, sb3.returns, rtol=1e-5, atol=1e-5)


# -- the rollout and its minibatches -----------------------------------------------------------
def filled_rollout(algo, seed: int = 0):
    """A rollout of ``algo``'s shape filled with random data, advantages computed."""
    cfg, rng = algo.config, np.random.default_rng(seed)
    rollout = algo.make_rollout(seed)
    shape = (cfg.n_envs, algo.spec.obs_dim)
    for _ in range(cfg.n_steps):
        actions = rng.integers(0, algo.spec.action_dim, cfg.n_envs) if algo.spec.discrete \
            else rng.uniform(-1, 1, (cfg.n_envs, algo.spec.action_dim))
        rollout.add(rng.normal(size=shape), actions, rng.normal(size=cfg.n_envs), np.zeros(cfg.n_envs),
                    rng.normal(size=cfg.n_envs), np.full(cfg.n_envs, -0.7))
    rollout.compute_advantages(np.zeros(cfg.n_envs), np.zeros(cfg.n_envs), cfg.gamma, cfg.gae_lambda)
    return rollout


def test_each_epoch_visits_every_transition_once_in_a_seeded_order():
    algo = pearl.PPO("CartPole-v1", n_steps=25, n_envs=4, batch_size=32)
    rollout = filled_rollout(algo)
    epochs = [list(rollout.minibatch_indices(32)) for _ in range(2)]
    for epoch in epochs:
        assert [len(i) for i in epoch] == [32, 32, 32, 4]
        assert sorted(np.concatenate(epoch).tolist()) == list(range(100))
    assert not np.array_equal(np.concatenate(epochs[0]), np.concatenate(epochs[1]))   # reshuffled each epoch
    again = filled_rollout(algo)
    assert np.array_equal(np.concatenate(list(again.minibatch_indices(32))), np.concatenate(epochs[0]))
    sample = rollout.sample(np.array([4 * 3 + 2]))    # step 3, env 2
    assert sample.obs[0].tolist() == rollout.obs[3, 2].tolist()
    assert sample.advantages[0] == rollout.advantages[3, 2]


def test_rollout_refuses_reads_before_advantages_and_adds_past_its_end():
    algo = pearl.A2C("CartPole-v1", n_steps=2, n_envs=1)
    rollout = algo.make_rollout(0)
    with pytest.raises(RuntimeError, match="compute_advantages"):
        next(rollout.minibatch_indices(1))
    with pytest.raises(RuntimeError, match="holds 0 of 2 steps"):
        rollout.compute_advantages(np.zeros(1), np.zeros(1), 0.99, 1.0)
    for _ in range(2):
        rollout.add(np.zeros((1, 4)), np.zeros(1), np.zeros(1), np.zeros(1), np.zeros(1), np.zeros(1))
    with pytest.raises(RuntimeError, match="full"):
        rollout.add(np.zeros((1, 4)), np.zeros(1), np.zeros(1), np.zeros(1), np.zeros(1), np.zeros(1))


@pytest.mark.parametrize(("algo_cls", "hyper", "steps_per_rollout"), [
    (pearl.PPO, {"n_steps": 32, "n_envs": 8, "batch_size": 256, "n_epochs": 20}, 20),     # the zoo's: 1 x 20
    (pearl.PPO, {"n_steps": 32, "n_envs": 8, "batch_size": 100, "n_epochs": 3}, 9),       # 100, 100, 56 x 3
    (pearl.PPO, {"n_steps": 8, "n_envs": 2, "batch_size": 64, "n_epochs": 2}, 2),         # batch > rollout
    (pearl.A2C, {"n_steps": 5, "n_envs": 8}, 1),                                          # one step per rollout
])
def test_minibatch_steps_per_rollout(algo_cls, hyper, steps_per_rollout):
    algo = algo_cls("CartPole-v1", **hyper)
    assert algo.config.epochs_per_rollout * algo.config.minibatches_per_epoch == steps_per_rollout
    timer = KernelTimer()
    stats = OnPolicyLearner(algo).learn(filled_rollout(algo), progress_remaining=1.0, timer=timer)
    assert stats.gradient_steps == steps_per_rollout == timer.calls["learner_update"]
    assert not stats.stopped_early


def test_target_kl_stops_the_epochs_before_the_step_that_passes_it():
    algo = pearl.PPO("CartPole-v1", n_steps=64, n_envs=1, batch_size=16, n_epochs=10, target_kl=1e-9,
                     learning_rate=0.01)
    stats = OnPolicyLearner(algo).learn(filled_rollout(algo), progress_remaining=1.0)
    assert stats.stopped_early
    assert stats.gradient_steps < 40


# -- schedules ---------------------------------------------------------------------------------
def test_schedules_parse_like_the_zoo():
    lin = Schedule.from_config("lin_0.001")
    assert (lin(1.0), lin(0.25), lin(0.0)) == (0.001, 0.00025, 0.0)
    assert Schedule.from_config("3e-4")(0.1) == Schedule.from_config(3e-4)(0.9) == 3e-4
    assert str(lin) == "lin_0.001" and str(Schedule.from_config(7e-4)) == "0.0007"
    for bad in ("lin_", "lin_x", "cos_0.1", True, None, [0.1]):
        with pytest.raises(ValueError, match="expected a number or a linear schedule"):
            Schedule.from_config(bad)


def test_learning_rate_and_clip_range_follow_their_schedules():
    algo = pearl.PPO("CartPole-v1", n_steps=16, n_envs=2, batch_size=32, n_epochs=1, learning_rate="lin_0.001",
                     clip_range="lin_0.2")
    learner = OnPolicyLearner(algo)
    assert learner.optimizer.param_groups[0]["lr"] == 0.001               # built at progress_remaining 1
    stats = learner.learn(filled_rollout(algo), progress_remaining=0.25)
    assert learner.optimizer.param_groups[0]["lr"] == stats.learning_rate == pytest.approx(0.00025)
    batch = pearl.algorithms.on_policy.RolloutBatch(
        obs=torch.zeros(4, 4), actions=torch.zeros(4, dtype=torch.int64), old_values=torch.zeros(4),
        old_log_probs=torch.log(torch.full((4,), 0.5)) - torch.tensor([0.0, 0.04, 0.08, -0.2]),
        advantages=torch.ones(4), returns=torch.zeros(4))
    with torch.no_grad():
        learner.nets.online.policy.pi[-1].weight.zero_()                  # pi(a|s) = 0.5: ratios e^0, e^.04, e^.08, e^-.2
        learner.nets.online.policy.pi[-1].bias.zero_()
        terms = algo.loss(learner.nets, batch, progress_remaining=0.25)   # clip 0.05: the last two ratios clip
    assert float(terms.clip_fraction) == 0.5
    assert float(terms.policy_loss) == pytest.approx(-(1 + math.exp(0.04) + 1.05 + math.exp(-0.2)) / 4)


def test_a2c_uses_rmsprop_as_sb3_and_adam_when_asked():
    opt = OnPolicyLearner(pearl.A2C("CartPole-v1")).optimizer
    assert isinstance(opt, torch.optim.RMSprop)
    assert (opt.defaults["alpha"], opt.defaults["eps"], opt.defaults["lr"]) == (0.99, 1e-5, 7e-4)
    adam = OnPolicyLearner(pearl.A2C("CartPole-v1", use_rms_prop=False)).optimizer
    assert isinstance(adam, torch.optim.Adam) and adam.defaults["eps"] == 1e-5


# -- distributions and the policy network ------------------------------------------------------
def test_categorical_log_probs_and_entropy_equal_torch_distributions():
    torch.manual_seed(0)
    logits = torch.randn(64, 5) * 3
    actions = torch.randint(0, 5, (64,))
    ours, ref = Categorical(logits), torch.distributions.Categorical(logits=logits)
    torch.testing.assert_close(ours.log_prob(actions), ref.log_prob(actions))
    torch.testing.assert_close(ours.entropy(), ref.entropy())
    assert torch.equal(ours.mode(), logits.argmax(dim=1))
    counts = torch.bincount(Categorical(logits[:1].expand(20_000, 5)).sample(), minlength=5) / 20_000
    torch.testing.assert_close(counts, ref.probs[0], atol=0.015, rtol=0)


def test_categorical_entropy_ignores_impossible_actions():
    dist = Categorical(torch.tensor([[0.0, float("-inf"), 0.0]]))
    assert float(dist.entropy()) == pytest.approx(math.log(2))


def test_gaussian_log_probs_and_entropy_equal_torch_distributions():
    torch.manual_seed(0)
    mean, log_std = torch.randn(64, 3), torch.randn(3) * 0.5
    actions = torch.randn(64, 3) * 2
    ours = DiagGaussian(mean, log_std)
    ref = torch.distributions.Independent(torch.distributions.Normal(mean, log_std.exp().expand_as(mean)), 1)
    torch.testing.assert_close(ours.log_prob(actions), ref.log_prob(actions))
    torch.testing.assert_close(ours.entropy(), ref.entropy())
    assert torch.equal(ours.mode(), mean)
    draws = DiagGaussian(mean[:1].expand(50_000, 3), log_std).sample()
    torch.testing.assert_close(draws.mean(0), mean[0], atol=0.05, rtol=0)
    torch.testing.assert_close(draws.std(0), log_std.exp(), atol=0.05, rtol=0)


def test_actor_critic_has_sb3_init_and_shapes():
    torch.manual_seed(0)
    net = ActorCritic(obs_dim=3, action_dim=2, discrete=False, net_arch=(64, 64), log_std_init=-0.5)
    hidden, head, value_head = net.pi[2], net.pi[4], net.vf[4]
    torch.testing.assert_close(hidden.weight @ hidden.weight.T, 2 * torch.eye(64), atol=1e-4, rtol=0)  # gain sqrt 2
    torch.testing.assert_close(head.weight @ head.weight.T, 1e-4 * torch.eye(2), atol=1e-7, rtol=0)    # gain 0.01
    torch.testing.assert_close(value_head.weight.norm(), torch.tensor(1.0))                         # gain 1
    assert all(float(m.bias.detach().abs().max()) == 0 for m in (*net.pi, *net.vf) if isinstance(m, torch.nn.Linear))
    assert net.log_std.tolist() == [-0.5, -0.5]
    assert isinstance(net.pi[1], torch.nn.Tanh)
    values, log_probs, entropy = net.evaluate(torch.zeros(7, 3), torch.zeros(7, 2))
    assert values.shape == log_probs.shape == entropy.shape == (7,)


# -- runs --------------------------------------------------------------------------------------
def short_run(algo, seed: int, steps: int):
    executor = OnPolicySerialExecutor(algo, seed=seed, eval_episodes=2, progress=False)
    result = executor.run(steps)
    params = {k: v.clone() for k, v in executor.learner.nets.state_dict().items()}
    return result, params


@pytest.mark.parametrize(("algo_cls", "env", "hyper"), [
    (pearl.PPO, "CartPole-v1", {"n_steps": 16, "n_envs": 4, "batch_size": 32, "n_epochs": 2}),
    (pearl.A2C, "Pendulum-v1", {"n_steps": 5, "n_envs": 2}),
])
def test_a_seeded_run_is_deterministic(algo_cls, env, hyper):
    first, params = short_run(algo_cls(env, **hyper), seed=3, steps=640)
    second, params2 = short_run(algo_cls(env, **hyper), seed=3, steps=640)
    assert (first.eval_returns, first.gradient_steps, first.episodes) == \
        (second.eval_returns, second.gradient_steps, second.episodes)
    assert all(torch.equal(params[k], params2[k]) for k in params)
    _, other = short_run(algo_cls(env, **hyper), seed=4, steps=640)
    assert not all(torch.equal(params[k], other[k]) for k in params)


def test_serial_run_counts_steps_rollouts_and_kernels():
    algo = pearl.PPO("CartPole-v1", n_steps=16, n_envs=4, batch_size=32, n_epochs=3)
    result, _ = short_run(algo, seed=0, steps=1000)            # rollouts of 64 until >= 1000 steps: 16 of them
    assert result.env_steps == 1024 and result.gradient_steps == 16 * 2 * 3
    calls = {k: v["calls"] for k, v in result.kernel_times.items()}
    # inference: one per vector step, one per rollout end (V of the last obs); more for truncated episodes
    # (none here: CartPole's 500-step limit is not reached in 1024 steps of 4 envs)
    # and the loop's own work: one entry per vector step (docs/cost-models.md §8)
    assert calls == {"env_step": 256, "rollout_insert": 256, "inference": 256 + 16, "advantage": 16,
                     "learner_update": 96, "loop": 256}
    assert result.plan["solver"] == "single-device" and set(result.plan["placements"]) == set(calls) - {"loop"}


def test_truncated_episodes_get_the_value_of_their_final_observation():
    gym.register("PearlShortCartPole-v0", entry_point="gymnasium.envs.classic_control:CartPoleEnv",
                 max_episode_steps=5)    # CartPole cannot fail within 5 steps: every 5th step is a truncation
    try:
        algo = pearl.PPO("PearlShortCartPole-v0", n_steps=20, n_envs=2, batch_size=40, n_epochs=1,
                         learning_rate="lin_0.001", gamma=0.9)
        executor = OnPolicySerialExecutor(algo, seed=0, eval_episodes=1, progress=False)
        result = executor.run(40)      # one rollout, learned at progress_remaining 0: lr 0, the networks stay
        rollout = executor.rollout
        truncation_steps = [4, 9, 14, 19]
        assert rollout.episode_starts[:, 0].nonzero()[0].tolist() == [0, 5, 10, 15]
        others = [t for t in range(20) if t not in truncation_steps]
        assert (rollout.rewards[others] == 1.0).all()
        # reward + gamma * V(final obs): replay env 0 with the stored actions to get its final observations
        env = gym.make("PearlShortCartPole-v0")
        env.reset(seed=0)
        finals = []
        for t in range(20):
            obs, _, _, truncated, _ = env.step(int(rollout.actions[t, 0]))
            if truncated:
                finals.append(obs)
                env.reset()
        with torch.no_grad():
            v = executor.learner.nets.online.policy.value(torch.as_tensor(np.array(finals), dtype=torch.float32))
        np.testing.assert_allclose(rollout.rewards[truncation_steps, 0], 1.0 + 0.9 * v.numpy(), rtol=1e-5)
        assert result.kernel_times["inference"]["calls"] == 20 + 1 + 4      # + V of the 4 vector steps that truncate
    finally:
        gym.registry.pop("PearlShortCartPole-v0")


def test_pearl_train_and_cli_run_an_on_policy_config(tmp_path, capsys):
    result = pearl.train(pearl.A2C("CartPole-v1", n_envs=2), total_steps=100, seed=0, eval_episodes=1,
                         progress=False)
    assert result.env_steps == 100 and result.gradient_steps == 10
    out = tmp_path / "run"
    assert main(["run", "examples/configs/ppo_cartpole.yaml", "--steps", "512", "--out", str(out)]) == 0
    data = json.loads((out / "result.json").read_text())
    assert (data["algorithm"], data["env_steps"], data["gradient_steps"]) == ("ppo", 512, 2 * 20)
    assert data["backend"] == "serial" and data["plan"]["mode"] == "serialized"


@pytest.mark.parametrize("command", ["plan", "simulate"])
def test_plan_and_simulate_model_on_policy_configs_on_the_pearl_box(tmp_path, capsys, command):
    argv = [command, "examples/configs/ppo_cartpole.yaml", "--platform", "pearl-cpu-gpu-fpga", "--out", str(tmp_path)]
    assert main(argv) == 0
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert plan["mode"] == "synchronous"
    assert {"rollout_insert", "advantage", "learner_update"} <= set(plan["placements"])
    printed = capsys.readouterr().out
    assert ("Collection and learning alternate" in printed) if command == "plan" else ("simulated " in printed)


# -- config errors -----------------------------------------------------------------------------
@pytest.mark.parametrize(("algo_cls", "hyper", "key", "message"), [
    (pearl.PPO, {"n_epochs": 0}, "n_epochs", "must be >= 1, got 0"),
    (pearl.PPO, {"clip_range": "lin_abc"}, "clip_range", "expected a number or a linear schedule such as lin_0.001"),
    (pearl.PPO, {"clip_range": "lin_-0.1"}, "clip_range", "must be > 0.0, got lin_-0.1"),
    (pearl.PPO, {"learning_rate": 0}, "learning_rate", "must be > 0.0, got 0"),
    (pearl.PPO, {"batch_size": 1}, "batch_size", "normalize_advantage needs batch_size > 1"),
    (pearl.PPO, {"target_kl": -1}, "target_kl", "must be > 0.0, got -1.0"),
    (pearl.A2C, {"n_steps": 1}, None, None),                                     # A2C does not normalize: fine
    (pearl.A2C, {"n_steps": 1, "normalize_advantage": True}, "n_steps", "n_steps * n_envs > 1"),
    (pearl.A2C, {"batch_size": 64}, "batch_size", "unknown key"),
    (pearl.A2C, {"activation_fn": "softsign"}, "activation_fn",
     "must be one of tanh, relu, elu, gelu, leaky_relu, silu"),
    (pearl.PPO, {"policy": "CnnPolicy"}, "policy", "must be one of MlpPolicy"),
])
def test_bad_hyperparameters_name_their_key(algo_cls, hyper, key, message):
    if key is None:
        algo_cls("CartPole-v1", **hyper)
        return
    with pytest.raises(pearl.ConfigError, match=re.escape(message)) as err:
        algo_cls("CartPole-v1", **hyper)
    assert err.value.key == key


def test_config_file_errors_point_at_the_line(write_config):
    path = write_config("""
        algorithm: ppo
        env: CartPole-v1
        hyperparameters:
          n_steps: 1
          n_envs: 1
          learning_rate: lin_0.001
          clip_range: cos_0.2
    """)
    with pytest.raises(pearl.ConfigError) as err:
        pearl.load_config(path)
    assert str(err.value).endswith("config.yaml:7: hyperparameters.clip_range: expected a number or a linear "
                                   "schedule such as lin_0.001, got str 'cos_0.2'")
    path.write_text(path.read_text().replace("cos_0.2", "0.1"))
    with pytest.raises(pearl.ConfigError) as err:       # a check across keys is located at its key
        pearl.load_config(path)
    assert "config.yaml:4: hyperparameters.n_steps: normalize_advantage needs n_steps * n_envs > 1" in str(err.value)


def test_zoo_configs_load_with_the_zoo_values():
    ppo = pearl.load_config("examples/configs/ppo_cartpole.yaml")
    cfg = ppo.hyperparameters
    assert (ppo.settings.total_steps, cfg.n_envs, cfg.n_steps, cfg.batch_size, cfg.gae_lambda, cfg.gamma,
            cfg.n_epochs, cfg.ent_coef) == (100_000, 8, 32, 256, 0.8, 0.98, 20, 0.0)
    assert (cfg.learning_rate, cfg.clip_range) == (Schedule(0.001, linear=True), Schedule(0.2, linear=True))
    a2c = pearl.load_config("examples/configs/a2c_cartpole.yaml")
    assert (a2c.settings.total_steps, a2c.hyperparameters.n_envs, a2c.hyperparameters.ent_coef) == (500_000, 8, 0.0)
    pendulum = pearl.load_config("examples/configs/ppo_pendulum.yaml").make_algorithm()
    assert not pendulum.spec.discrete and pendulum.config.n_steps == 1024
