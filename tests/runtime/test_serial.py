"""The serial reference executor: counts, determinism, logs and result.json."""
from __future__ import annotations

import csv
import json

import pearl_py as pearl

TINY_DQN = dict(net_arch=[32], batch_size=16, learning_starts=200, train_freq=50, gradient_steps=10,
                buffer_size=5_000, target_update_interval=100)


def test_same_seed_gives_identical_returns_and_losses(tmp_path):
    runs = [pearl.train(pearl.DQN("CartPole-v1", **TINY_DQN), total_steps=1_200, seed=7, eval_episodes=3,
                        out=tmp_path / f"r{i}", progress=False) for i in range(2)]
    assert runs[0].eval_returns == runs[1].eval_returns
    losses = [[(row["step"], row["loss_q"]) for row in csv.DictReader((tmp_path / f"r{i}" / "train.csv").open())]
              for i in range(2)]
    assert losses[0] == losses[1] and len(losses[0]) > 10
    assert (tmp_path / "r0" / "episodes.csv").read_text() == (tmp_path / "r1" / "episodes.csv").read_text()
    other = pearl.train(pearl.DQN("CartPole-v1", **TINY_DQN), total_steps=1_200, seed=8, eval_episodes=3,
                        progress=False)
    assert other.eval_returns != runs[0].eval_returns or other.episodes != runs[0].episodes


def test_counts_follow_the_config(tmp_path):
    result = pearl.train(pearl.DQN("CartPole-v1", **TINY_DQN), total_steps=1_000, seed=0, eval_episodes=2,
                         out=tmp_path, progress=False)
    # training rounds at vector steps 250, 300, ..., 1000 (after learning_starts=200): 16 rounds x 10
    assert result.env_steps == 1_000 and result.gradient_steps == 16 * 10
    times = result.kernel_times
    assert times["env_step"]["calls"] == 1_000 and times["learner_update"]["calls"] == 160
    assert times["replay_sample"]["calls"] == 160 and "priority_update" not in times
    data = json.loads((tmp_path / "result.json").read_text())
    for key in ("env_steps", "wall_seconds", "eval_return_mean", "eval_return_std", "samples_per_second",
                "plan"):
        assert key in data
    assert data["plan"]["placements"]["learner_update"] == {"device": "cpu", "variant": "reference",
                                                          "replicas": 1}
    assert len(data["eval_returns"]) == 2 and data["samples_per_second_label"] == "measured"
    energy = data["energy"]["devices"]["cpu"]   # no counter on a VM: the one modelled figure, named
    assert (data["source"], data["modelled"]) == (("measured", []) if energy["source"] == "measured" else
                                                  ("mixed", [f"energy.cpu: modelled ({energy['reason']})"]))
    with (tmp_path / "episodes.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert rows and sum(int(r["episode_length"]) for r in rows) <= 1_000
    assert not list(tmp_path.glob(".*.tmp"))


def test_prioritized_ddpg_with_vector_envs_runs_and_updates_priorities():
    algo = pearl.DDPG("Pendulum-v1", net_arch=[32], batch_size=32, learning_starts=100, n_envs=2,
                      prioritized_replay=True, buffer_size=2_000)
    result = pearl.train(algo, total_steps=400, seed=1, eval_episodes=1, progress=False, eval_freq=200)
    assert result.env_steps == 400
    assert result.kernel_times["env_step"]["calls"] == 200
    # train_freq 1 vector step, 2 envs: rounds after 100 transitions
    assert result.kernel_times["priority_update"]["calls"] == result.gradient_steps == 150
    assert [h["step"] for h in result.eval_history] == [200, 400]
