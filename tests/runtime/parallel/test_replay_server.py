"""The replay server: the serial run's replay contents and draws, strict and relaxed priority order,
pause and hand-over for checkpoints, runs that use it, its failure.

The component tests drive a real server process from this process, which plays the actor
(filling a ring) and the learner (taking batches, sending priorities).
"""
from __future__ import annotations

import contextlib
import os
import signal
import threading
import time

import numpy as np
import pytest
from served_helpers import (
    SEEN,
    SMALL_DQN,
    FixedPolicyDQN,
    plan_with,
    reset_records,
    transitions,
    with_modelled_costs,
)

import pearl_py as pearl
from pearl_py.protocol.schedule import TrainSchedule
from pearl_py.runtime.collect import round_beta
from pearl_py.runtime.parallel import ParallelExecutor, RunInterrupted
from pearl_py.runtime.parallel.actor import ring_fields
from pearl_py.runtime.parallel.checkpoint import load_checkpoint
from pearl_py.runtime.parallel.control import ControlBlock
from pearl_py.runtime.parallel.ring import ShmRing
from pearl_py.runtime.parallel.services import start_replay_server
from pearl_py.runtime.parallel.supervisor import ServiceFailed

STEPS = 120
CONFIG = dict(batch_size=8, learning_starts=20, train_freq=10, gradient_steps=4, buffer_size=1_000)


def td_of(indices: np.ndarray) -> np.ndarray:
    """A deterministic stand-in for |TD error|: differs per slot, so priorities matter."""
    return ((indices * 7919) % 13 + 1).astype(np.float32) / 4


def reference_draws(algo: pearl.Algorithm, schedule: TrainSchedule, seed: int) -> list[tuple]:
    """(round step, replay size, drawn slots) of every update, the learner owning the replay (serial order)."""
    replay = algo.make_replay(seed=seed)
    rows = transitions(algo, schedule.env_steps)
    draws = []
    try:
        for step in range(1, schedule.vector_steps + 1):
            replay.add(rows["obs"][step - 1:step], rows["actions"][step - 1:step], rows["rewards"][step - 1:step],
                       rows["next_obs"][step - 1:step], rows["terminated"][step - 1:step])
            if not schedule.is_round(step):
                continue
            for _ in range(schedule.gradient_steps):
                batch = replay.sample(algo.config.batch_size, beta=round_beta(algo, schedule, step))
                draws.append((step, len(replay), batch.indices.tolist()))
                if replay.prioritized:
                    replay.update_priorities(batch.indices, td_of(batch.indices))
        return draws, replay.state_dict()
    finally:
        replay.close()


@contextlib.contextmanager
def server(algo, tmp_path, *, prefetch: int, strict: bool, seed: int = 5):
    """A replay server on one ring pre-filled with the run's transitions; yields (served, control, service)."""
    schedule = TrainSchedule.from_config(algo.config, STEPS)
    prefix = f"pearl-{os.getpid()}-test"
    with contextlib.ExitStack() as stack:
        control = ControlBlock.create(actors=1, name=f"{prefix}-ctl")
        stack.callback(control.close)
        ring = ShmRing.create(ring_fields(algo), STEPS, f"{prefix}-ring0")
        stack.callback(ring.close)
        ring.put(**transitions(algo, STEPS))
        served, service = start_replay_server(stack, prefix, algo, control, [ring], schedule=schedule, seed=seed,
                                              errors=tmp_path, resume=None, consumed=0, updates=0,
                                              prefetch=prefetch, strict=strict)
        yield served, control, service, schedule


def learn(served, control, schedule, algo, hold: int = 0) -> list:
    """Play the learner: take every batch of the schedule, send priorities back; the first ``hold``
    batches' priorities are sent only after the ``hold``-th batch arrived."""
    batches, held = [], []
    for step in range(1, schedule.vector_steps + 1):
        if not schedule.is_round(step):
            continue
        for _ in range(schedule.gradient_steps):
            served.round_step = step
            batch = served.sample(algo.config.batch_size, beta=0.0)
            batches.append(batch)
            held.append(batch)
            if len(batches) > hold or len(held) == hold:
                for b in held:
                    if served.prioritized:
                        served.update_priorities(b.indices, td_of(b.indices))
                    control.completed += 1
                held = []
    return batches


@pytest.mark.parametrize("prioritized", [False, True])
def test_server_draws_what_the_colocated_replay_draws(tmp_path, prioritized):
    algo = pearl.DQN("CartPole-v1", **CONFIG, prioritized_replay=prioritized)
    with server(algo, tmp_path, prefetch=3, strict=True) as (served, control, service, schedule):
        batches = learn(served, control, schedule, algo)
        served.pause()
        state = served.state_dict()
        times = control.kernel_times()
    expected, expected_state = reference_draws(algo, schedule, seed=5)
    assert [(b.step, b.stored, b.indices.tolist()) for b in batches] == expected
    assert len(expected) == schedule.total_updates == 40
    if prioritized:  # strict: every batch drawn after the previous update's priorities were applied
        assert [b.applied for b in batches] == list(range(len(batches)))
        np.testing.assert_array_equal(state["priorities"], expected_state["priorities"])
    np.testing.assert_array_equal(state["obs"], expected_state["obs"])
    assert state["counters"].tolist() == expected_state["counters"].tolist()
    assert state["rng"] == expected_state["rng"]  # the server's generator, handed over on pause
    assert times["replay_sample"]["calls"] == 40 and times["replay_insert"]["calls"] == STEPS
    assert times.get("priority_update", {"calls": 0})["calls"] == (40 if prioritized else 0)


def test_relaxed_order_draws_up_to_prefetch_batches_before_priorities_arrive(tmp_path):
    algo = pearl.DQN("CartPole-v1", **CONFIG, prioritized_replay=True)
    with server(algo, tmp_path, prefetch=3, strict=False) as (served, control, service, schedule):
        batches = learn(served, control, schedule, algo, hold=3)
    applied = [b.applied for b in batches]
    assert applied[:3] == [0, 0, 0]  # three batches out before any priority update came back
    assert all(0 <= u - a <= 2 for u, a in enumerate(applied))  # each misses at most prefetch - 1 updates
    assert len(batches) == schedule.total_updates


# --------------------------------------------------------------------------------------------
# Runs with a replay server
# --------------------------------------------------------------------------------------------


def test_uniform_server_run_is_update_for_update_the_colocated_run():
    """One actor and a timing-independent policy: both runs collect the same transitions, so the
    batches must be the same, update by update (strict prioritized order is checked draw by draw
    against the co-located replay above)."""
    algo = FixedPolicyDQN("CartPole-v1", **SMALL_DQN)
    plan = plan_with(algo)  # deriving the protocol evaluates the loss: before the records are reset
    runs = {}
    for replay in ("colocated", "server"):
        reset_records()
        result = ParallelExecutor(algo, plan, seed=2, eval_episodes=1, progress=False, replay=replay,
                                  replay_prefetch=3).run(400)
        runs[replay] = (list(SEEN), result)
    (colocated, a), (served, b) = runs["colocated"], runs["server"]
    assert len(colocated) == a.gradient_steps == b.gradient_steps == (400 - 100) // 25 * 5
    assert served == colocated
    assert a.env_steps == b.env_steps == 400
    for kernel in ("replay_insert", "replay_sample"):
        assert a.kernel_times[kernel]["calls"] == b.kernel_times[kernel]["calls"]
    assert b.layout["replay"] == "server process (prefetch 3, strict priority order)"
    assert a.layout["replay"] == "co-located with the learner"


@pytest.mark.slow  # a process-level resume/restart run: CI's slow stage (keeps the default suite under 10 min)
def test_plan_with_replay_on_another_device_runs_a_server_that_reports_its_kernels(tmp_path):
    algo = pearl.DQN("CartPole-v1", **SMALL_DQN, prioritized_replay=True)
    plan = with_modelled_costs(plan_with(algo, actors=2, replay_insert="fpga0", replay_sample="fpga0"),
                               {"replay_insert": 1e-6, "replay_sample": 1e-6})
    result = ParallelExecutor(algo, plan, seed=0, out_dir=tmp_path, eval_episodes=1, progress=False,
                              replay_order="relaxed").run(500)
    assert result.layout["replay"] == "server process (prefetch 4, relaxed priority order)"
    assert result.env_steps == 500 and result.gradient_steps == (500 - 100) // 25 * 5
    times = result.kernel_times
    assert times["replay_insert"]["calls"] == 500 and times["replay_insert"]["source"] == "modelled"
    assert times["replay_sample"]["calls"] == times["priority_update"]["calls"] == result.gradient_steps
    assert times["replay_wait"]["calls"] == result.gradient_steps
    # the server reported where it built the replay (the host, emulating the FPGA), not copied from the plan
    assert {result.executed_on[k] for k in ("replay_insert", "replay_sample", "priority_update")} == {"cpu"}
    episodes = (tmp_path / "episodes.csv").read_text().splitlines()
    assert result.episodes == len(episodes) - 1 > 0


@pytest.mark.slow  # a process-level resume/restart run: CI's slow stage (keeps the default suite under 10 min)
def test_interrupted_server_run_checkpoints_and_resumes(tmp_path):
    algo = pearl.DQN("CartPole-v1", **SMALL_DQN, prioritized_replay=True)
    first = ParallelExecutor(algo, plan_with(algo), seed=4, out_dir=tmp_path, eval_episodes=1, progress=False,
                             replay="server")
    stopper = threading.Thread(target=_interrupt_when, args=(first, 12), daemon=True)
    stopper.start()
    with pytest.raises(RunInterrupted):
        first.run(600)
    ckpt = load_checkpoint(tmp_path)
    updates = ckpt.learner["gradient_steps"]
    schedule = TrainSchedule.from_config(algo.config, 600)
    # a stop trains on every batch the server drew: whole rounds' worth or fewer, never beyond the data
    assert 12 <= updates <= schedule.updates_until(ckpt.progress.transitions)
    assert int(ckpt.replay["counters"][1]) == ckpt.progress.transitions
    assert len(ckpt.replay["priorities"]) == ckpt.progress.transitions

    resumed = ParallelExecutor(algo, plan_with(algo), seed=4, out_dir=tmp_path, eval_episodes=1, progress=False,
                               replay="server", resume_from=tmp_path).run(600)
    assert resumed.env_steps == 600 and resumed.gradient_steps == schedule.total_updates


def _interrupt_when(executor: ParallelExecutor, updates: int) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if executor.learner is not None and executor.learner.gradient_steps >= updates:
            os.kill(os.getpid(), signal.SIGINT)
            return
        time.sleep(0.01)


def test_killed_replay_server_fails_the_run_without_a_checkpoint(tmp_path):
    algo = pearl.DQN("CartPole-v1", **SMALL_DQN)
    executor = ParallelExecutor(algo, plan_with(algo), seed=0, out_dir=tmp_path, eval_episodes=1,
                                progress=False, replay="server")

    def kill_server() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            pid = executor.server_pids.get("replay server")
            if pid and executor.learner is not None and executor.learner.gradient_steps >= 5:
                os.kill(pid, signal.SIGKILL)
                return
            time.sleep(0.01)

    threading.Thread(target=kill_server, daemon=True).start()
    with pytest.raises(ServiceFailed, match="replay server .* exited with code -9"):
        executor.run(5_000)
    assert not (tmp_path / "checkpoint" / "checkpoint.pt").exists()
    assert executor.server_pids == {}
