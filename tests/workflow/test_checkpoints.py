"""Periodic checkpoints: atomic, the newest K kept, and a run killed with SIGKILL resumes to its step count."""
from __future__ import annotations

import dataclasses
import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import pearl_py as pearl
from pearl_py.cli import main
from pearl_py.plan import Plan
from pearl_py.protocol.schedule import TrainSchedule
from pearl_py.runtime.checkpoints import (
    CHECKPOINTS_DIR,
    CheckpointOptions,
    CheckpointStore,
    newest_checkpoint,
    periodic_checkpoints,
)
from pearl_py.runtime.parallel import ParallelExecutor
from pearl_py.runtime.parallel.checkpoint import load_checkpoint

ROOT = Path(__file__).resolve().parents[2]
DQN = {"net_arch": [16], "batch_size": 16, "learning_starts": 200, "train_freq": 50, "gradient_steps": 5,
       "buffer_size": 5_000, "target_update_interval": 100}
TOTAL = 4_000
"""Long enough that the run is still going when its first checkpoint (at 500 steps) appears."""

TRAIN_IN_A_CHILD = textwrap.dedent("""
    import sys
    import pearl_py as pearl
    algo = pearl.DQN("CartPole-v1", **{hyper!r})
    pearl.train(algo, total_steps={total}, seed=2, out=sys.argv[1], eval_episodes=1, progress=False,
                checkpoint_freq=500, checkpoint_keep=2)
""")


def _serial_updates(total: int) -> int:
    schedule = TrainSchedule.from_config(pearl.DQN("CartPole-v1", **DQN).config, total)
    return schedule.updates_until(schedule.vector_steps)


def test_a_run_killed_with_sigkill_resumes_from_its_newest_checkpoint_to_the_step_count(tmp_path):
    out = tmp_path / "run"
    child = subprocess.Popen([sys.executable, "-c", TRAIN_IN_A_CHILD.format(hyper=DQN, total=TOTAL), str(out)],
                             cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 300  # a safety net, not a timing: the first checkpoint comes at 500 steps
        while not periodic_checkpoints(out) and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL, child.stderr.read().decode()
    assert not (out / "result.json").exists()  # killed before the end
    kept = periodic_checkpoints(out)
    assert 1 <= len(kept) <= 2
    newest = load_checkpoint(out)
    assert newest.progress.transitions % 500 == 0 and 500 <= newest.progress.transitions < TOTAL

    resumed = pearl.train(pearl.DQN("CartPole-v1", **DQN), total_steps=TOTAL, seed=2, out=out, eval_episodes=1,
                          progress=False, resume=out)
    assert resumed.env_steps == TOTAL and resumed.gradient_steps == _serial_updates(TOTAL)
    assert resumed.wall_seconds > newest.progress.wall_seconds
    assert json.loads((out / "result.json").read_text())["env_steps"] == TOTAL
    assert (out / "session1" / "episodes.csv").is_file()  # the resumed session logs beside the first


def test_periodic_checkpoints_keep_the_newest_k_and_resume_the_parallel_runtime(tmp_path):
    algo = pearl.DQN("CartPole-v1", **DQN)
    plan = dataclasses.replace(Plan.single_device(algo.protocol()), mode="overlapped")
    result = ParallelExecutor(algo, plan, seed=5, out_dir=tmp_path, eval_episodes=1,
                              checkpoints=CheckpointOptions(every=300, keep=2)).run(1_500)
    assert result.env_steps == 1_500
    kept = periodic_checkpoints(tmp_path)
    assert len(kept) == 2 and [int(p.name.split("step")[1]) for p in kept] == [900, 1200]
    assert not list((tmp_path / CHECKPOINTS_DIR).glob(".tmp-*"))
    resumed = ParallelExecutor(pearl.DQN("CartPole-v1", **DQN), plan, seed=5, out_dir=tmp_path, eval_episodes=1,
                               resume_from=tmp_path).run(1_500)
    assert resumed.env_steps == 1_500 and resumed.gradient_steps == _serial_updates(1_500)
    assert load_checkpoint(tmp_path).progress.transitions == 1_200


def test_on_policy_runs_checkpoint_between_rollouts_and_resume(tmp_path):
    def ppo():
        return pearl.PPO("CartPole-v1", n_steps=64, batch_size=32, n_epochs=1, net_arch=[16])

    pearl.train(ppo(), total_steps=640, seed=1, out=tmp_path, eval_episodes=1, progress=False,
                checkpoint_freq=256, checkpoint_keep=3)
    assert [int(p.name.split("step")[1]) for p in periodic_checkpoints(tmp_path)] == [256, 512]
    resumed = pearl.train(ppo(), total_steps=640, seed=1, out=tmp_path, eval_episodes=1, progress=False,
                          resume=tmp_path)
    assert resumed.env_steps == 640 and resumed.gradient_steps == 10 * 2  # 10 rollouts of 2 minibatches


def test_a_checkpoint_cut_short_is_never_resumed_from(tmp_path):
    store = CheckpointStore(tmp_path, keep=2)

    def writer(text):
        def write(folder: Path) -> None:
            (folder / "checkpoint.pt").write_text(text)
            (folder / "checkpoint.json").write_text(json.dumps({"transitions": int(text), "gradient_steps": 0}))
        return write

    first = store.save(writer("100"), 100)
    half = tmp_path / CHECKPOINTS_DIR / ".tmp-deadbeef"  # a run killed mid-write leaves a hidden folder
    half.mkdir()
    (half / "checkpoint.pt").write_text("partial")
    missing_summary = tmp_path / CHECKPOINTS_DIR / "000009-step900"
    missing_summary.mkdir()
    (missing_summary / "checkpoint.pt").write_text("no summary")
    assert newest_checkpoint(tmp_path) == first
    second = store.save(writer("200"), 200)
    assert newest_checkpoint(tmp_path) == second and not half.exists()
    stop = tmp_path / "checkpoint"  # a parallel run's stop checkpoint that got further wins
    stop.mkdir()
    writer("250")(stop)
    assert newest_checkpoint(tmp_path) == stop
    store.save(writer("300"), 300)
    assert newest_checkpoint(tmp_path).name == "000003-step300"
    assert [p.name for p in periodic_checkpoints(tmp_path)] == ["000002-step200", "000003-step300"]


@pytest.mark.parametrize("flags, message", [
    (["--checkpoint-freq", "-5"], "checkpoint_freq: must be >= 0, got -5"),
    (["--checkpoint-keep", "0"], "checkpoint_keep: must be >= 1, got 0"),
])
def test_bad_checkpoint_flags_exit_2(write_config, tmp_path, capsys, flags, message):
    config = write_config("algorithm: dqn\nenv: CartPole-v1\ntotal_steps: 100\nhyperparameters:\n  learning_starts: 10\n")
    assert main(["run", str(config), "--out", str(tmp_path / "o"), *flags]) == 2
    assert message in capsys.readouterr().err


def test_checkpoints_need_an_output_folder():
    with pytest.raises(pearl.UserError, match="checkpoint_freq needs an output folder"):
        pearl.train(pearl.DQN("CartPole-v1", **DQN), total_steps=100, checkpoint_freq=50)
