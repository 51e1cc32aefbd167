"""normalize (SB3's VecNormalize): the statistics against a direct numpy computation, frozen in evaluation, saved
with the policy, kept by checkpoints, its config and zoo forms, and its refusals."""
from __future__ import annotations

import contextlib
import json
from pathlib import Path

import numpy as np
import pytest
import torch

import pearl_py as pearl
from pearl_py.cli import main
from pearl_py.envs.normalize import Normalize, ObsRewardNormalizer
from pearl_py.algorithms.off_policy.learner import UpdateResult
from pearl_py.errors import UserError
from pearl_py.replay.buffer import SampleBatch
from pearl_py.runtime.collect import Collector, gradient_step
from pearl_py.runtime.evaluation import evaluate

ZOO = Path(__file__).resolve().parents[1] / "data" / "zoo"
"""The zoo's hyperparameter files kept as test data."""
PRIOR = 1e-4
"""The moments' starting count (mean 0, variance 1), as SB3's RunningMeanStd."""


def direct_moments(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and population variance of ``rows`` together with the prior (weight 1e-4 at mean 0, variance 1)."""
    n = len(rows) + PRIOR
    mean = rows.sum(axis=0) / n
    m2 = np.square(rows - mean).sum(axis=0) + PRIOR * (1.0 + np.square(mean))
    return mean, m2 / n


def test_observation_statistics_equal_numpy_over_a_fixed_sequence():
    rng = np.random.default_rng(3)
    batches = [rng.normal(5.0, 3.0, size=(4, 3)) for _ in range(25)]
    norm = ObsRewardNormalizer(Normalize.from_config(True), (3,), gamma=0.99)
    for batch in batches:
        out = norm.observe(batch)
    mean, var = direct_moments(np.concatenate(batches))
    np.testing.assert_allclose(norm.obs_moments.mean, mean, rtol=1e-12)
    np.testing.assert_allclose(norm.obs_moments.var, var, rtol=1e-12)
    assert norm.obs_moments.count == pytest.approx(100 + PRIOR, abs=1e-12)
    np.testing.assert_allclose(out, (batches[-1] - mean) / np.sqrt(var + 1e-8), rtol=1e-5)
    assert out.dtype == np.float32


def test_reward_scaling_follows_the_discounted_return_and_restarts_at_episode_ends():
    rewards = np.array([[1.0, -2.0], [0.5, 3.0], [2.0, 1.0], [-1.0, 0.0], [4.0, 2.0]])
    done = np.array([[False, False], [True, False], [False, False], [False, True], [False, False]])
    norm = ObsRewardNormalizer(Normalize.from_config({"norm_obs": False, "gamma": 0.9}), (1,), gamma=0.99)
    returns, seen = np.zeros(2), []
    for r, d in zip(rewards, done):
        returns = 0.9 * returns + r
        seen.append(returns.copy())
        _, var = direct_moments(np.concatenate(seen)[:, None])
        np.testing.assert_allclose(norm.reward(r, d), r / np.sqrt(var[0] + 1e-8), rtol=1e-6)
        returns[d] = 0.0
    np.testing.assert_array_equal(norm.observe(np.full((2, 1), 7.0)), np.full((2, 1), 7.0))  # norm_obs false


def test_clipping_and_epsilon():
    settings = Normalize.from_config({"clip_obs": 2.0, "clip_reward": 0.5, "epsilon": 0.25})
    norm = ObsRewardNormalizer(settings, (2,), gamma=0.0)
    out = norm.observe(np.array([[0.0, 1000.0], [0.0, -1000.0]]))
    mean, var = direct_moments(np.array([[0.0, 1000.0], [0.0, -1000.0]]))
    np.testing.assert_allclose(out[:, 0], -mean[0] / np.sqrt(var[0] + 0.25), rtol=1e-6)   # epsilon inside the root
    probe = norm.obs(np.array([[1e6, 1e6], [-1e6, -1e6]]))
    np.testing.assert_array_equal(probe, [[2.0, 2.0], [-2.0, -2.0]])
    assert np.all(np.abs(norm.reward(np.array([100.0, -100.0]), np.array([False, False]))) == 0.5)


@pytest.mark.parametrize("value, settings", [
    (True, Normalize(enabled=True)),
    ("{'norm_obs': True, 'norm_reward': False}", Normalize(enabled=True, norm_reward=False)),
    ({"clip_obs": 5, "gamma": None}, Normalize(enabled=True, clip_obs=5)),
    (False, Normalize()),
])
def test_config_forms(value, settings):
    assert Normalize.from_config(value) == settings
    assert Normalize.from_config(settings.to_config()) == settings


@pytest.mark.parametrize("value, message", [
    ("{norm_obs: 1}", "hyperparameters.normalize: norm_obs: expected true/false, got 1"),
    ("{clip_obs: -1}", "hyperparameters.normalize: clip_obs: must be > 0, got -1"),
    ("{norm_ob: true}", "hyperparameters.normalize: unknown key 'norm_ob' (VecNormalize's: norm_obs, norm_reward, "
                        "clip_obs, clip_reward, gamma, epsilon)"),
    ("yes please", "hyperparameters.normalize: expected true/false or a mapping of norm_obs, norm_reward, clip_obs, "
                   "clip_reward, gamma, epsilon, got text 'yes please'"),
])
def test_a_bad_normalize_is_one_located_line(write_config, capsys, value, message):
    config = write_config(f"algorithm: ppo\nenv: CartPole-v1\nhyperparameters:\n  normalize: {value}\n")
    assert main(["run", str(config)]) == 2
    err = capsys.readouterr().err
    assert err == f"pearl: error: {config}:4: {message}\n"


def _algo(**extra) -> pearl.PPO:
    return pearl.PPO("CartPole-v1", n_envs=2, n_steps=32, batch_size=32, n_epochs=1, normalize=True, **extra)


def test_evaluation_uses_the_statistics_frozen_and_the_env_rewards():
    algo = _algo()
    algo.obs_transform.observe(np.random.default_rng(0).normal(3.0, 2.0, size=(50, 4)))
    before = algo.obs_transform.state()
    seen = []
    greedy = algo.greedy_actions
    algo.greedy_actions = lambda nets, batch, device: seen.append(batch) or greedy(nets, batch, device)
    returns = evaluate(algo, algo.fresh_networks(), torch.device("cpu"), episodes=2, seed=0)
    assert algo.obs_transform.state() == before                      # frozen
    assert all(r == int(r) and r >= 8 for r in returns)              # CartPole's own rewards (1 a step)
    raw = np.stack([__import__("gymnasium").make("CartPole-v1").reset(seed=s)[0] for s in (0, 1)])
    np.testing.assert_allclose(seen[0], algo.obs_transform.obs(raw), rtol=1e-6)


def test_the_saved_policy_holds_the_statistics_and_pearl_eval_reproduces_the_run(tmp_path, capsys):
    out = tmp_path / "run"
    algo = _algo()
    result = pearl.train(algo, 256, seed=1, out=out, eval_episodes=2, log=lambda line: None)
    manifest = json.loads((out / "policy.json").read_text())
    assert manifest["obs_normalization"] == algo.obs_transform.state()
    assert manifest["obs_normalization"]["obs"]["count"] == pytest.approx(2 * (1 + 128) + PRIOR)   # resets + steps
    policy = pearl.load(out)
    assert policy.algorithm.obs_transform.state() == algo.obs_transform.state()
    assert np.mean(policy.evaluate(2, seed=1 + 10_000)) == result.eval_return_mean
    obs = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    assert policy.predict(obs)[0] == algo.greedy_actions(policy.nets, algo.obs_transform.obs(obs[None]),
                                                         torch.device("cpu"))[0]
    manifest["obs_normalization"]["obs"]["mean"] = "damaged"
    (out / "policy.json").write_text(json.dumps(manifest))
    with pytest.raises(UserError, match=r"policy.json: obs_normalization is damaged \(ValueError"):
        pearl.load(out)


def test_init_from_continues_the_saved_statistics(tmp_path):
    first = _algo()
    pearl.train(first, 128, seed=0, out=tmp_path / "a", eval_episodes=1, log=lambda line: None)
    second = _algo()
    pearl.train(second, 128, seed=0, init_from=tmp_path / "a", eval_episodes=1, log=lambda line: None)
    assert second.obs_transform.obs_moments.count == pytest.approx(2 * 2 * (1 + 64) + PRIOR)


def test_a_checkpoint_keeps_the_statistics_and_resume_continues_them(tmp_path):
    short = _algo()
    pearl.train(short, 128, seed=2, eval_episodes=1, log=lambda line: None)
    out = tmp_path / "run"
    pearl.train(_algo(), 256, seed=2, out=out, eval_episodes=1, checkpoint_freq=128, log=lambda line: None)
    from pearl_py.runtime.parallel.checkpoint import load_checkpoint

    ckpt = load_checkpoint(out / "checkpoints" / "000001-step128")
    assert ckpt.obs_transform == short.obs_transform.state()       # bit for bit: the first 128 steps' statistics
    import shutil

    shutil.rmtree(out / "checkpoints" / "000002-step256", ignore_errors=True)   # resume from step 128
    resumed = _algo()
    pearl.train(resumed, 256, seed=2, out=out, eval_episodes=1, resume=out, log=lambda line: None, overwrite=True)
    # the checkpoint's 2 * (1 + 64) observations, then a new session's resets and 64 steps of 2 envs
    assert resumed.obs_transform.obs_moments.count == pytest.approx(2 * (1 + 64) * 2 + PRIOR)


def test_a_zoo_entry_with_normalize_true_runs_through_pearl_run(tmp_path):
    out = tmp_path / "run"
    assert main(["run", "--zoo", str(ZOO / "ppo.yml"), "--env", "Acrobot-v1", "--steps", "256", "--set", "n_steps=16",
                 "--set", "eval_episodes=1", "--plan", "serial", "--out", str(out)]) == 0
    manifest = json.loads((out / "policy.json").read_text())
    assert manifest["config"]["normalize"] is True and manifest["config"]["n_envs"] == 16
    assert manifest["obs_normalization"]["obs"]["count"] == pytest.approx(16 * (1 + 16) + PRIOR)
    assert manifest["obs_normalization"]["gamma"] == 0.99          # the entry's gamma, as the zoo passes it


def test_off_policy_replay_stores_the_env_transitions_and_the_learner_gets_normalized_samples():
    plain = pearl.DQN("CartPole-v1", n_envs=2)
    normalized = pearl.DQN("CartPole-v1", n_envs=2, normalize=True)
    assert isinstance(normalized.obs_transform, ObsRewardNormalizer)
    with Collector(plain, seed=4, record=lambda k, s: None) as a, Collector(normalized, 4, lambda k, s: None) as b:
        for _ in range(30):                               # episodes end: final observations included
            env, step = a.step(None), b.step(None)
            for name in ("obs", "actions", "rewards", "next_obs", "terminated"):
                np.testing.assert_array_equal(getattr(step.env_step, name), getattr(env, name))
    norm = normalized.obs_transform
    sample = SampleBatch(env.obs, env.actions, env.rewards, env.next_obs, env.terminated.astype(np.float32),
                         np.arange(2), np.ones(2, np.float32))
    seen = []
    gradient_step(FixedReplay(sample), lambda batch: seen.append(batch) or UpdateResult({}, torch.zeros(2)), 2, 0.0,
                  torch.device("cpu"), lambda kernel: contextlib.nullcontext(), norm)
    np.testing.assert_allclose(seen[0].obs.numpy(), norm.obs(env.obs))
    np.testing.assert_allclose(seen[0].next_obs.numpy(), norm.obs(env.next_obs))
    np.testing.assert_allclose(seen[0].rewards.numpy().ravel(),
                               env.rewards / np.sqrt(norm.return_moments.var + 1e-8), rtol=1e-6)


class FixedReplay:
    """A replay that always samples ``batch`` (uniform)."""

    prioritized = False

    def __init__(self, batch: SampleBatch) -> None:
        self.batch = batch

    def sample(self, batch_size: int, beta: float) -> SampleBatch:
        return self.batch


def test_an_off_policy_zoo_entry_with_the_zoo_text_form_runs(write_config, tmp_path):
    zoo = write_config("Pendulum-v1:\n  normalize: \"{'norm_obs': True, 'norm_reward': False}\"\n"
                       "  n_timesteps: 300\n  learning_starts: 100\n  batch_size: 32\n", name="sac.yml")
    out = tmp_path / "run"
    assert main(["run", "--zoo", str(zoo), "--env", "Pendulum-v1", "--plan", "serial", "--set", "eval_episodes=1",
                 "--out", str(out)]) == 0
    manifest = json.loads((out / "policy.json").read_text())
    assert manifest["config"]["normalize"] == {"norm_reward": False}
    assert manifest["obs_normalization"]["obs"]["count"] == pytest.approx(301 + PRIOR)


def test_a_torch_replay_sample_is_normalized_as_a_numpy_one():
    norm = ObsRewardNormalizer(Normalize.from_config({"clip_obs": 1.5}), (3,), gamma=0.9)
    rng = np.random.default_rng(5)
    for _ in range(10):
        norm.observe(rng.normal(2.0, 3.0, size=(4, 3)))
        norm.reward(rng.normal(size=4), rng.random(4) < 0.2)
    obs, next_obs = (rng.normal(2.0, 3.0, size=(8, 3)).astype(np.float32) for _ in range(2))
    rewards = rng.normal(size=8).astype(np.float32)
    batch = SampleBatch(obs, np.zeros(8), rewards, next_obs, np.zeros(8, np.float32), np.arange(8), np.ones(8))
    tensors = SampleBatch(*(torch.as_tensor(a) for a in (obs, np.zeros(8), rewards, next_obs)),
                          torch.zeros(8), torch.arange(8), torch.ones(8))
    expected, got = norm.sample(batch), norm.sample(tensors)
    for name in ("obs", "next_obs", "rewards"):
        assert getattr(got, name).dtype == torch.float32
        np.testing.assert_allclose(getattr(got, name).numpy(), getattr(expected, name), rtol=1e-6)
