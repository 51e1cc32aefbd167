"""Progress that works without a terminal, the printed plan, SB3's scalars in train.csv and TensorBoard,
and the report's learning curve."""
from __future__ import annotations

import csv
import io
import re
from collections import deque
from pathlib import Path

import pytest

import pearl_py as pearl
from pearl_py.cli import main
from pearl_py.runtime.run_log import RunLog, clock

TINY = {"learning_starts": 100, "train_freq": 50, "gradient_steps": 5, "batch_size": 16, "net_arch": [16]}
LINE = re.compile(r"^\[(\d+)/1000 +(\d+)%\] (\d+) samples/s(, return ([-\d.]+) \(mean of (\d+)\))?, "
                  r"(\d+:\d\d) elapsed(, ETA (\d+:\d\d))?$")


class Pipe(io.StringIO):
    """A stream that is not a terminal (nohup, CI, a log file)."""

    def isatty(self) -> bool:
        return False


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_without_a_terminal_progress_is_whole_lines_with_the_figures():
    stream = Pipe()
    log = RunLog(None, total_steps=1000, stream=stream, every_s=0.0)
    log.tick(100, lambda: 500.0)
    log.episode(150, 20.0, 20)
    log.episode(180, 30.0, 30)
    log.tick(200, lambda: 510.0)
    log.tick(1000, lambda: 520.0)  # the end: printed once, by close
    log.close()
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue() and len(lines) == 3
    parsed = [LINE.match(line) for line in lines]
    assert all(parsed), lines
    assert [m.group(1) for m in parsed] == ["100", "200", "1000"]
    assert [m.group(3) for m in parsed] == ["500", "510", "520"]
    assert parsed[1].group(5, 6) == ("25.0", "2") and parsed[0].group(4) is None
    assert parsed[0].group(9) is not None and parsed[2].group(9) is None  # an ETA until the end


def test_lines_come_every_n_seconds_not_every_step():
    stream = Pipe()
    log = RunLog(None, total_steps=1000, stream=stream, every_s=3600.0)
    for step in range(1, 1000):
        log.tick(step, lambda: 100.0)
    log.tick(1000, lambda: 100.0)
    log.close()
    assert len(stream.getvalue().splitlines()) == 1 and stream.getvalue().startswith("[1000/1000 100%]")


def test_on_a_terminal_a_live_bar_redraws_in_place():
    stream = Terminal()
    log = RunLog(None, total_steps=1000, stream=stream)
    log.tick(1000, lambda: 42.0)
    log.close()
    text = stream.getvalue()
    assert text.startswith("\r[########################] [1000/1000 100%] 42 samples/s") and text.endswith("\n")
    quiet = Pipe()
    log = RunLog(None, total_steps=1000, progress=False, stream=quiet)
    log.tick(1000, lambda: 1.0)
    log.close()
    assert quiet.getvalue() == ""


def test_the_eta_follows_the_recent_pace_not_the_whole_runs():
    log = RunLog(None, total_steps=10_000, progress=False)
    assert log._eta(1_000, 1_000.0, now=1.0) == pytest.approx(9.0)        # no history: the given rate
    assert log._eta(2_000, 900.0, now=11.0) == pytest.approx(80.0)        # 1,000 steps in 10 s since: 100/s
    assert log._eta(2_500, 800.0, now=51.0) == pytest.approx(7_500 / 12.5)  # the pace since 40 s ago (2,000)


def test_clock():
    assert (clock(5), clock(65), clock(3725)) == ("0:05", "1:05", "1:02:05")


def test_train_csv_has_sb3s_scalars_and_kernel_times(tmp_path):
    algo = pearl.DQN("CartPole-v1", **TINY)
    lines: list[str] = []
    pearl.train(algo, total_steps=1_000, seed=0, out=tmp_path, eval_episodes=1, progress=False, log=lines.append)
    assert lines[0] == "plan: serialized (one process, stages in turn)" and "learner_update" in lines[5]
    with (tmp_path / "train.csv").open() as f:
        rows = list(csv.DictReader(f))
    with (tmp_path / "episodes.csv").open() as f:
        episodes = [(int(r["step"]), float(r["episode_return"]), int(r["episode_length"])) for r in csv.DictReader(f)]
    assert {"ep_rew_mean", "ep_len_mean", "exploration_rate", "loss_q", "steps_per_second", "episodes",
            "time_elapsed", "time_learner_update_ms", "time_env_step_ms", "time_replay_sample_ms"} <= set(rows[0])
    assert len(rows) == (1_000 - 100) // 50  # one per training round
    for row in rows:
        step = int(row["step"])
        assert float(row["exploration_rate"]) == pytest.approx(algo.epsilon(step / 1_000), rel=1e-5)
        window = deque((r for s, r, _ in episodes if s <= step), maxlen=100)
        assert float(row["ep_rew_mean"]) == pytest.approx(sum(window) / len(window), rel=1e-5)
        assert int(row["episodes"]) == sum(1 for s, _, _ in episodes if s <= step)
        assert float(row["time_learner_update_ms"]) > 0


def _scalars(folder: Path) -> dict[str, list[tuple[int, float]]]:
    """Every TensorBoard scalar point in ``folder``, by tag: ``(step, value)`` in order (no sampling)."""
    from tensorboard.backend.event_processing.event_accumulator import SCALARS, EventAccumulator

    events = EventAccumulator(str(folder), size_guidance={SCALARS: 0})
    events.Reload()
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def test_tensorboard_has_every_row_episode_and_evaluation_under_sb3s_tags(tmp_path):
    pytest.importorskip("tensorboard", reason="the tensorboard extra is not installed")
    result = pearl.train(pearl.DQN("CartPole-v1", **TINY), total_steps=1_000, seed=0, out=tmp_path, eval_episodes=2,
                         eval_freq=250, progress=False, log=lambda line: None)
    scalars = _scalars(tmp_path / "tensorboard")
    with (tmp_path / "train.csv").open() as f:
        rows = list(csv.DictReader(f))
    with (tmp_path / "episodes.csv").open() as f:
        episodes = list(csv.DictReader(f))
    assert len(rows) == 18
    assert {"rollout/ep_rew_mean", "rollout/ep_len_mean", "rollout/exploration_rate", "train/loss", "time/fps",
            "time/episodes", "time/time_learner_update_ms"} <= set(scalars)
    for column, tag in [("loss_q", "train/loss"), ("steps_per_second", "time/fps"),
                        ("exploration_rate", "rollout/exploration_rate"), ("episodes", "time/episodes")]:
        assert [s for s, _ in scalars[tag]] == [int(r["step"]) for r in rows], tag   # every row, the last included
        assert [v for _, v in scalars[tag]] == pytest.approx([float(r[column]) for r in rows], rel=1e-5), tag
    assert [s for s, _ in scalars["rollout/episode_return"]] == [int(r["step"]) for r in episodes]
    assert [v for _, v in scalars["rollout/episode_length"]] == [float(r["episode_length"]) for r in episodes]
    assert [s for s, _ in scalars["eval/mean_reward"]] == [250, 500, 750, 1000]
    assert [v for _, v in scalars["eval/mean_reward"]] == pytest.approx(
        [p["return_mean"] for p in result.eval_history], rel=1e-6)
    assert len(scalars["eval/mean_ep_length"]) == 4


def test_tensorboard_tags_are_sb3s_names_of_the_losses():
    from pearl_py.runtime.run_log import tensorboard_tag

    assert [tensorboard_tag(c) for c in ("loss_q", "loss_actor", "loss_critic", "loss_ent_coef", "loss_policy_loss",
                                         "loss_value_loss", "loss_clip_fraction", "steps_per_second", "ep_rew_mean")] \
        == ["train/loss", "train/actor_loss", "train/critic_loss", "train/ent_coef_loss", "train/policy_gradient_loss",
            "train/value_loss", "train/clip_fraction", "time/fps", "rollout/ep_rew_mean"]


def test_tensorboard_gets_a_run_logs_rows_however_fast_they_come(tmp_path):
    pytest.importorskip("tensorboard", reason="the tensorboard extra is not installed")
    log = RunLog(tmp_path, total_steps=1_000, progress=False)
    for step in range(10):                      # all within a millisecond: none is dropped
        log.train(step, {"q": 0.1 * step}, 100.0)
        log.episode(step, float(step), 1)
    log.evaluation(9, 5.0, 7.0)
    log.close()
    scalars = _scalars(tmp_path / "tensorboard")
    assert [s for s, _ in scalars["train/loss"]] == list(range(10))
    assert [v for _, v in scalars["rollout/episode_return"]] == [float(s) for s in range(10)]
    assert scalars["eval/mean_reward"] == [(9, 5.0)] and scalars["eval/mean_ep_length"] == [(9, 7.0)]


def test_the_run_report_has_a_learning_curve(tmp_path):
    pearl.train(pearl.DQN("CartPole-v1", **TINY), total_steps=1_000, seed=0, out=tmp_path, plan="local",
                eval_episodes=1, progress=False, log=lambda line: None)
    markdown = (tmp_path / "report.md").read_text()
    assert "## Learning curve" in markdown
    with (tmp_path / "episodes.csv").open() as f:
        last = list(csv.DictReader(f))[-100:]
    mean = sum(float(r["episode_return"]) for r in last) / len(last)
    assert f"{mean:.1f} at step {int(last[-1]['step']):,}" in markdown
    html = (tmp_path / "report.html").read_text()
    assert "Learning curve (measured)" in html and "<polyline" in html


def test_the_cli_prints_the_plan_and_progress_lines_without_a_terminal(write_config, tmp_path, capsys):
    """`pearl run` as a command whose output goes to a pipe (capsys's streams, like CI's log, are no terminal)."""
    config = write_config("algorithm: dqn\nenv: CartPole-v1\ntotal_steps: 600\neval_episodes: 1\nhyperparameters:\n"
                          + "".join(f"  {k}: {v}\n" for k, v in TINY.items()))
    assert main(["run", str(config), "--plan", "serial", "--out", str(tmp_path / "out")]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == "plan: serialized (one process, stages in turn)"
    assert re.search(r"^\[600/600 100%\] \d+ samples/s, return [\d.]+ \(mean of \d+\), \d+:\d\d elapsed$", err,
                     re.MULTILINE), err
    assert f"pearl eval {tmp_path / 'out'}" in out
