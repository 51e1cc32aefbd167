"""normalize on the parallel runtime: the actors' shares merge into the moments of the concatenated data, a parallel
run's saved statistics are those of every observation (and discounted return) its actors counted, and a resumed run
continues them; on-policy (shares reported per rollout) and off-policy (cumulative shares, re-merged at each
publication)."""
from __future__ import annotations

import dataclasses
import os
import secrets
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import pearl_py as pearl
from pearl_py.envs.normalize import Normalize, ObsRewardNormalizer, RunningMoments
from pearl_py.plan import Placement, Plan
from pearl_py.protocol.kernel import ENV_STEP, INFERENCE
from pearl_py.replay.storage import Storage
from pearl_py.runtime.parallel.checkpoint import load_checkpoint
from pearl_py.runtime.parallel.flip_vector import WRITING
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


@pytest.mark.slow  # a process-level resume/restart run: CI's slow stage (keeps the default suite under 10 min)
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


def test_off_policy_shares_are_cumulative_and_remerged_exactly_at_each_publication():
    """Each actor posts its cumulative share every vector step; every remerge is base + all slots (so merging twice
    changes nothing); an actor loads the published statistics only when new; a restarted actor continues its slot."""
    rng = np.random.default_rng(11)
    base_rows = rng.normal(-1.0, 2.0, size=(5, 3))
    learner = ObsRewardNormalizer(Normalize.from_config(True), (3,), gamma=GAMMA)
    learner.observe(base_rows)                              # the session's base (a resumed run's statistics)
    shared = SharedStatistics.create(learner, actors=2, name=f"pearl-test-stats-{secrets.token_hex(4)}")
    sides = [SharedStatistics.attach(shared.name) for _ in range(2)]      # each actor's
    try:
        actors = [ObsRewardNormalizer(Normalize.from_config(True), (3,), gamma=GAMMA) for _ in range(2)]
        seen = [[], []]
        for index, actor in enumerate(actors):
            assert sides[index].refresh(actor) and not sides[index].refresh(actor)    # the base, once
            actor.track(sides[index].posted(index))
            np.testing.assert_array_equal(actor.vector(), learner.vector())
        for step in range(4):
            for index, actor in enumerate(actors):
                batch = rng.normal(index, 1 + step, size=(2, 3))
                actor.observe(batch)
                seen[index].append(batch)
                sides[index].post(index, actor)
            shared.remerge(learner)
            shared.remerge(learner)
            rows = np.concatenate([base_rows, *seen[0], *seen[1]])
            assert_moments(learner.obs_moments, rows)
            assert sides[0].refresh(actors[0])               # a new publication: the actor acts with it
            np.testing.assert_array_equal(actors[0].vector(), learner.vector())
        restarted = ObsRewardNormalizer(Normalize.from_config(True), (3,), gamma=GAMMA)
        restarted.track(sides[1].posted(1))                  # actor 1's next generation continues its share
        restarted.observe(extra := rng.normal(size=(2, 3)))
        sides[1].post(1, restarted)
        shared.remerge(learner)
        assert_moments(learner.obs_moments, np.concatenate([rows, extra]))
    finally:
        for side in sides:
            side.close()
        shared.close()


def test_an_actor_killed_while_it_posts_leaves_its_last_complete_share_and_the_learner_never_waits_for_it():
    """Actor 1 dies half way through a post (its next slot marked as being written, half its values garbage): the
    learner's remerge returns at once (so the learner loop's next health check sees the dead actor) with actor 1's
    last complete share, and its restarted successor continues from that share."""
    rng = np.random.default_rng(5)
    learner = ObsRewardNormalizer(Normalize.from_config(True), (3,), gamma=GAMMA)
    shared = SharedStatistics.create(learner, actors=2, name=f"pearl-test-stats-{secrets.token_hex(4)}")
    raw = Storage.attach(shared.name)
    try:
        actors = [ObsRewardNormalizer(Normalize.from_config(True), (3,), gamma=GAMMA) for _ in range(2)]
        for index, actor in enumerate(actors):
            actor.track()
            actor.observe(rng.normal(index, 1.0, size=(4, 3)))
            shared.post(index, actor)
        marks, slots = raw["marks"][2], raw["seen"][1]            # actor 1's vector, as its killed post left it
        writing = (int(marks[0]) + 1) % 2
        marks[1 + writing] = WRITING
        slots[writing][: slots.shape[1] // 2] = np.nan
        last_share = actors[1].share()
        shared.remerge(learner)
        expected = ObsRewardNormalizer(Normalize.from_config(True), (3,), gamma=GAMMA)
        expected.merge_share(actors[0].share())
        expected.merge_share(last_share)
        np.testing.assert_array_equal(learner.vector(), expected.vector())
        np.testing.assert_array_equal(shared.posted(1), last_share)   # what actor 1's next generation tracks from
    finally:
        raw.close()
        shared.close()

def dqn(folder: Path) -> pearl.DQN:
    return pearl.DQN(ENV, normalize=True, gamma=GAMMA, env_kwargs={"record": str(folder)}, n_envs=2, net_arch=[8],
                     batch_size=8, learning_starts=16, train_freq=8, gradient_steps=2, buffer_size=500,
                     target_update_interval=32)


def two_actors(algo: pearl.DQN) -> Plan:
    """Every kernel on the CPU, overlapped, two actors (each steps ``n_envs`` envs)."""
    plan = dataclasses.replace(Plan.single_device(algo.protocol(serialized=False)), mode="overlapped")
    for kernel in (ENV_STEP, INFERENCE):
        plan.placements[kernel] = Placement("cpu", replicas=2)
    return plan


@pytest.mark.slow
def test_an_off_policy_parallel_runs_saved_statistics_are_those_of_every_observation_its_actors_counted(
        recording, tmp_path):
    out = tmp_path / "run"
    algo = dqn(recording)
    result = pearl.train(algo, 96, seed=3, plan=two_actors(algo), out=out, eval_episodes=1, log=lambda line: None)
    assert result.backend == "local-parallel"
    files = actor_files(recording)
    assert len(files) == 4                                   # two envs in each of two actors
    rows, returns = recorded(files)
    assert len(rows) == 4 * (1 + 96 // 4) and len(returns) == 96
    saved = pearl.load(out).algorithm.obs_transform
    assert_moments(saved.obs_moments, rows)
    assert_moments(saved.return_moments, returns)


@pytest.mark.slow
def test_a_resumed_off_policy_parallel_run_continues_the_statistics_of_its_checkpoint(recording, tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    algo = dqn(recording)
    pearl.train(algo, 96, seed=3, plan=two_actors(algo), out=first, eval_episodes=1, checkpoint_freq=48,
                log=lambda line: None)
    at_checkpoint = load_checkpoint(first).obs_transform   # what the actors had posted when it was taken
    before = set(actor_files(recording))
    pearl.train(dqn(recording), 96, seed=3, plan=two_actors(algo), out=second, eval_episodes=1, resume=first,
                log=lambda line: None)
    rows, returns = recorded(actor_files(recording, but=before))
    saved = pearl.load(second).algorithm.obs_transform
    for moments, state, new in ((saved.obs_moments, at_checkpoint["obs"], rows),
                                (saved.return_moments, at_checkpoint["return"], returns)):
        expected = RunningMoments(np.shape(state["mean"]))
        expected.load(state)
        expected.merge(new.mean(axis=0), new.var(axis=0), len(new))
        np.testing.assert_allclose(moments.mean, expected.mean, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(moments.var, expected.var, rtol=1e-12)
        assert moments.count == pytest.approx(expected.count, rel=1e-15)
