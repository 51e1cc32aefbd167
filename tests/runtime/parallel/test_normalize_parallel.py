"""normalize on the on-policy parallel runtime: the actors' shares merge into the moments of the concatenated data,
a parallel run's saved statistics are those of every observation (and discounted return) its actors counted,
and a resumed run continues them."""
from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import pearl_py as pearl
from pearl_py.envs.normalize import Normalize, ObsRewardNormalizer
from pearl_py.runtime.parallel.shared_statistics import SharedStatistics

from parallel_helpers import sync_plan

USER_ENV = Path(__file__).resolve().parents[2] / "data" / "user_env"
ENV = "pearl_recording_env:RecordingClock-v0"
PRIOR = 1e-4
"""The moments' starting count (mean 0, variance 1), as SB3's RunningMeanStd."""
GAMMA = 0.99


def pooled_moments(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weighted mean and variance of ``rows`` pooled with the prior (weight 1e-4 at mean 0, variance 1): the closed
    form of what the running moments hold."""
    weights = np.concatenate([[PRIOR], np.ones(len(rows))])
    values = np.concatenate([np.zeros((1, *rows.shape[1:])), rows])
    mean = np.average(values, axis=0, weights=weights)
    second = np.average(np.square(values - mean), axis=0, weights=weights) + PRIOR / weights.sum()
    return mean, second


def assert_moments(moments, rows: np.ndarray) -> None:
    mean, var = pooled_moments(rows)
    np.testing.assert_allclose(moments.mean, mean, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(moments.var, var, rtol=1e-12)
    assert moments.count == pytest.approx(len(rows) + PRIOR, rel=1e-15)


def test_the_merged_shares_are_the_moments_of_the_concatenated_data():
    rng = np.random.default_rng(7)
    shares = [[rng.normal(i, 1 + i, size=(envs, 3)) for _ in range(steps)]   # actor i's vector steps; the last: none
              for i, (steps, envs) in enumerate([(3, 4), (5, 2), (0, 1)])]
    learner = ObsRewardNormalizer(Normalize.from_config(True), (3,), gamma=GAMMA)
    shared = SharedStatistics.create(learner, actors=3, name=f"pearl-test-stats-{secrets.token_hex(4)}")
    try:
        actors, returns = [], []
        for index, batches in enumerate(shares):
            actor = ObsRewardNormalizer(Normalize.from_config(True), (3,), gamma=GAMMA)
            actor.track()
            shared.load_published(actor)
            for batch in batches:
                actor.observe(batch)
                actor.reward(batch[:, 0], np.zeros(len(batch), bool))
                returns.append(actor.returns.copy())
            shared.report(index, actor)
            actors.append(actor)
        shared.combine(learner)
        rows = np.concatenate([b for batches in shares for b in batches])
        assert_moments(learner.obs_moments, rows)
        assert_moments(learner.return_moments, np.concatenate(returns))
        for actor in actors:            # what every actor acts with in the next rollout
            shared.load_published(actor)
            np.testing.assert_array_equal(actor.obs_moments.vector(), learner.obs_moments.vector())
        shared.combine(learner)         # the slots were emptied: merging them again changes nothing
        assert_moments(learner.obs_moments, rows)
    finally:
        shared.close()


def test_an_actor_acts_with_the_published_statistics_and_its_share_not_reported_yet():
    """Before its first report an actor's statistics hold its envs' reset observations: with one actor they are the
    serial run's, bit for bit, until the first merge."""
    rng = np.random.default_rng(5)
    serial, actor = (ObsRewardNormalizer(Normalize.from_config(True), (3,), gamma=GAMMA) for _ in range(2))
    actor.track()
    reset = rng.normal(2.0, 3.0, size=(4, 3))
    serial.observe(reset)
    actor.observe(reset)
    actor.take_published(ObsRewardNormalizer(Normalize.from_config(True), (3,), gamma=GAMMA).vector())  # the prior
    np.testing.assert_array_equal(actor.vector(), serial.vector())
    step = rng.normal(2.0, 3.0, size=(4, 3))
    np.testing.assert_array_equal(actor.observe(step), serial.observe(step))


@pytest.fixture
def recording(monkeypatch, tmp_path):
    """The recording env's module on the import path (as a user's package is installed) and its record folder."""
    monkeypatch.syspath_prepend(str(USER_ENV))
    folder = tmp_path / "record"
    folder.mkdir()
    yield folder
    gym.registry.pop("RecordingClock-v0", None)
    sys.modules.pop("pearl_recording_env", None)


def recorded(files: list[Path], steps: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The observations and the discounted returns (per env, restarting at episode ends; of the rewards as float32,
    as the collector passes them) the envs of ``files`` recorded in their first ``steps`` vector steps (all: None);
    each vector step counts one observation per env."""
    rows, returns = [], []
    for file in files:
        lines = [line.split() for line in file.read_text().splitlines()]
        obs = [[float(a), float(b)] for kind, a, b in lines if kind == "obs"]
        rewards = [(float(np.float32(r)), done == "1") for kind, r, done in lines if kind == "reward"]
        rows += obs[:None if steps is None else steps + 1]
        running = 0.0
        for reward, done in rewards[:steps]:
            running = GAMMA * running + reward
            returns.append(running)
            running = 0.0 if done else running
    return np.array(rows), np.array(returns)


def actor_files(folder: Path, but: set[Path] = frozenset()) -> list[Path]:
    """The files of the actors' envs (this process's, the evaluation's, are left out), except ``but``."""
    return sorted(f for f in folder.iterdir() if not f.name.startswith(f"{os.getpid()}-") and f not in but)


def ppo(folder: Path) -> pearl.PPO:
    return pearl.PPO(ENV, normalize=True, gamma=GAMMA, env_kwargs={"record": str(folder)}, n_envs=4, n_steps=8,
                     batch_size=32, n_epochs=1, net_arch=[8])


def test_a_parallel_runs_saved_statistics_are_those_of_every_observation_its_actors_counted(recording, tmp_path):
    out = tmp_path / "run"
    pearl.train(ppo(recording), 96, seed=3, plan=sync_plan(2), out=out, eval_episodes=1, log=lambda line: None)
    files = actor_files(recording)
    assert len(files) == 4                                   # one per env, two envs in each of two actors
    rows, returns = recorded(files)
    assert len(rows) == 4 * (1 + 96 // 4) and len(returns) == 96
    saved = pearl.load(out).algorithm.obs_transform
    assert_moments(saved.obs_moments, rows)
    assert_moments(saved.return_moments, returns)


def test_a_resumed_parallel_run_continues_the_statistics(recording, tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    pearl.train(ppo(recording), 96, seed=3, plan=sync_plan(2), out=first, eval_episodes=1, checkpoint_freq=64,
                log=lambda line: None)
    before = set(actor_files(recording))
    pearl.train(ppo(recording), 96, seed=3, plan=sync_plan(2), out=second, eval_episodes=1, resume=first,
                log=lambda line: None)
    rows, returns = recorded(sorted(before), steps=64 // 4)   # the first session up to its checkpoint
    more_rows, more_returns = recorded(actor_files(recording, but=before))
    assert len(more_rows) == 4 * (1 + 32 // 4)
    saved = pearl.load(second).algorithm.obs_transform
    assert_moments(saved.obs_moments, np.concatenate([rows, more_rows]))
    assert_moments(saved.return_moments, np.concatenate([returns, more_returns]))
