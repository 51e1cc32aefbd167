"""The parallel executor: serial-equal counts, actor faults, interrupt and resume, crash checkpoints.

Every test also runs the ``no_leaks`` fixture (conftest): no child process, zombie or
shared-memory segment may outlive the run, whatever way it ended.
"""
from __future__ import annotations

import dataclasses
import json
import os
import signal
import threading
import time

import pytest
from parallel_helpers import FLAKY_MARKER, TINY_DQN, FlakyDQN

import pearl_py as pearl
from pearl_py.plan import Placement, Plan
from pearl_py.runtime.parallel import ParallelExecutor, RunInterrupted
from pearl_py.runtime.parallel.checkpoint import load_checkpoint


def plan_for(algo, actors: int = 1) -> Plan:
    plan = Plan.single_device(algo.protocol())
    return dataclasses.replace(plan, placements={**plan.placements, "env_step": Placement("cpu", replicas=actors)})


def when(predicate, then, timeout: float = 120.0) -> threading.Thread:
    """Run ``then()`` in a thread as soon as ``predicate()`` holds."""
    def watch():
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                then()
                return
            time.sleep(0.01)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_two_actors_keep_the_serial_update_count_and_env_steps(tmp_path):
    algo = pearl.DQN("CartPole-v1", **TINY_DQN)
    result = ParallelExecutor(algo, plan_for(algo, actors=2), seed=3, out_dir=tmp_path, eval_episodes=2,
                              eval_freq=500).run(1_000)
    serial = pearl.train(pearl.DQN("CartPole-v1", **TINY_DQN), total_steps=1_000, seed=3, eval_episodes=2,
                         progress=False)
    assert result.backend == "local-parallel"
    assert result.env_steps == serial.env_steps == 1_000
    assert result.gradient_steps == serial.gradient_steps == 160
    times = result.kernel_times
    assert times["env_step"]["calls"] == times["replay_insert"]["calls"] == 1_000
    # the warm-up's 200 random actions are not inference
    assert times["inference"]["calls"] == 800 and times["warmup_actions"]["calls"] == 200
    assert times["learner_update"]["calls"] == times["replay_sample"]["calls"] == 160
    assert times["param_sync"]["calls"] >= 160 // 4  # the learner's publications (every 4 updates and more)
    assert times["param_read"]["calls"] > 0  # the actors' copies of them
    assert [h["step"] for h in result.eval_history] == [500, 1_000]
    assert result.episodes > 0 and (tmp_path / "episodes.csv").exists() and (tmp_path / "train.csv").exists()


def test_the_parallel_learner_sets_a_lin_learning_rate_each_round(tmp_path):
    algo = pearl.DQN("CartPole-v1", **{**TINY_DQN, "learning_rate": "lin_1e-3"})
    executor = ParallelExecutor(algo, plan_for(algo, actors=1), seed=3, out_dir=tmp_path, eval_episodes=1)
    executor.run(1_010)
    # rounds every 50 vector steps (one env); the last at step 1000: 1 - 1000 / 1010 remaining
    assert executor.learner.learning_rate == pytest.approx(1e-3 * 10 / 1_010)
    assert {g["lr"] for opt in executor.learner.optimizers.values() for g in opt.param_groups} == \
        {executor.learner.learning_rate}


@pytest.mark.slow  # a process-level resume/restart run: CI's slow stage (keeps the default suite under 10 min)
def test_killed_actor_is_restarted_and_the_run_still_takes_the_configured_steps(tmp_path):
    algo = pearl.DQN("CartPole-v1", **TINY_DQN)
    executor = ParallelExecutor(algo, plan_for(algo, actors=2), seed=0, eval_episodes=1)
    victims: list[int] = []

    def kill_one():
        victims.append(executor.actor_pids[0])
        os.kill(victims[0], signal.SIGKILL)

    # kill once the learner is training (the actors are collecting the next rounds)
    watcher = when(lambda: len(executor.actor_pids) == 2 and _learning(executor), kill_one)
    result = executor.run(3_000)
    watcher.join(1)
    assert victims, "the actor was never killed"
    assert result.env_steps == 3_000 and result.gradient_steps == 56 * 10  # rounds at steps 250, 300, ..., 3000
    assert [r.actor for r in executor.restarts] == [0] and "signal 9" in executor.restarts[0].error


def _learning(executor: ParallelExecutor, updates: int = 1) -> bool:
    return executor.learner is not None and executor.learner.gradient_steps >= updates


@pytest.mark.slow  # a process-level resume/restart run: CI's slow stage (keeps the default suite under 10 min)
def test_actor_whose_env_raises_is_restarted_and_logged(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv(FLAKY_MARKER, str(tmp_path / "raised"))
    algo = FlakyDQN("PearlFlakyCartPole-v0", **TINY_DQN)
    executor = ParallelExecutor(algo, plan_for(algo), seed=0, eval_episodes=1)
    with caplog.at_level("WARNING", logger="pearl_py.runtime.parallel"):
        result = executor.run(1_000)
    assert (tmp_path / "raised").exists()
    assert result.env_steps == 1_000 and result.gradient_steps == 160
    assert len(executor.restarts) == 1 and "simulated simulator crash" in executor.restarts[0].error
    assert "restarted as generation 1" in caplog.text


@pytest.mark.slow  # a process-level resume/restart run: CI's slow stage (keeps the default suite under 10 min)
def test_interrupted_run_resumes_to_completion_with_the_serial_counts(tmp_path):
    algo = pearl.DQN("CartPole-v1", **TINY_DQN)
    first = ParallelExecutor(algo, plan_for(algo), seed=5, out_dir=tmp_path, eval_episodes=1)
    when(lambda: _learning(first, 25),
         lambda: os.kill(os.getpid(), signal.SIGINT))
    with pytest.raises(RunInterrupted) as info:
        first.run(1_500)
    assert info.value.checkpoint == tmp_path / "checkpoint"
    ckpt = load_checkpoint(tmp_path)
    assert 0 < ckpt.progress.transitions < 1_500 and ckpt.learner["gradient_steps"] >= 25
    summary = json.loads((tmp_path / "checkpoint" / "checkpoint.json").read_text())
    assert summary["gradient_steps"] == ckpt.learner["gradient_steps"]

    resumed = ParallelExecutor(algo, plan_for(algo), seed=5, out_dir=tmp_path, eval_episodes=1,
                               resume_from=tmp_path).run(1_500)
    serial = pearl.train(pearl.DQN("CartPole-v1", **TINY_DQN), total_steps=1_500, seed=5, eval_episodes=1,
                         progress=False)
    assert resumed.env_steps == 1_500 and resumed.gradient_steps == serial.gradient_steps
    assert resumed.wall_seconds > ckpt.progress.wall_seconds
    assert resumed.kernel_times["env_step"]["calls"] >= 1_500 - ckpt.progress.transitions


def test_resume_refuses_another_config(tmp_path):
    algo = pearl.DQN("CartPole-v1", **TINY_DQN)
    with pytest.raises(pearl.UserError, match="no checkpoint"):
        ParallelExecutor(algo, plan_for(algo), resume_from=tmp_path).run(1_000)


class ExplodingDQN(pearl.DQN):
    """DQN whose 20th loss evaluation raises (protocol derivation evaluates it too): a learner crash."""

    def losses(self):
        (loss,) = super().losses()

        def fn(nets, batch):
            self.calls = getattr(self, "calls", 0) + 1
            if self.calls == 20:
                raise FloatingPointError("learner blew up")
            return loss.fn(nets, batch)

        return [pearl.Loss(loss.name, loss.trains, fn)]


def test_learner_crash_writes_a_checkpoint_and_reraises(tmp_path):
    algo = ExplodingDQN("CartPole-v1", **TINY_DQN)
    executor = ParallelExecutor(algo, plan_for(algo), seed=1, out_dir=tmp_path)
    with pytest.raises(FloatingPointError, match="blew up"):
        executor.run(1_000)
    ckpt = load_checkpoint(tmp_path / "checkpoint")
    assert ckpt.learner["gradient_steps"] == executor.learner.gradient_steps >= 10
    assert ckpt.progress.transitions >= 250


def test_a_server_reports_the_device_it_built_on_through_the_control_block():
    """The result's ``executed_on`` of a served replay or central inference is what the server process built."""
    from pearl_py.runtime.parallel.control import ControlBlock

    block = ControlBlock.create(actors=1, name=f"pearl-built-{os.getpid()}")
    try:
        assert block.built_on("inference") is None       # not reported yet
        peer = ControlBlock.attach(block.name)            # the server's side
        peer.set_built_on("inference", "cuda:1")
        peer.set_built_on("replay", "cpu")
        peer.close()
        assert (block.built_on("inference"), block.built_on("replay")) == ("cuda:1", "cpu")
    finally:
        block.close()
