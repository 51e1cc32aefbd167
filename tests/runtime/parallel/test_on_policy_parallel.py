"""The on-policy parallel runtime: a seeded run performs the serial run's updates on the same rollouts.

Equality is exact (``torch.equal``): with the ``fused`` (row-invariant) inference an actor computes every env's
action as the serial run's single batched call does, whatever share of the envs it steps; with the
``reference`` inference that holds when one actor steps all envs.
"""
from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest
import torch

import pearl_py as pearl
from pearl_py.plan import Plan
from pearl_py.protocol.kernel import ENV_STEP, LEARNER_UPDATE, PARAM_SYNC
from pearl_py.runtime.on_policy_serial import OnPolicySerialExecutor
from pearl_py.runtime.parallel import RunInterrupted
from pearl_py.runtime.parallel.checkpoint import load_checkpoint
from pearl_py.runtime.parallel.on_policy import OnPolicyParallelExecutor

from parallel_helpers import sync_plan

TINY_PPO = dict(n_envs=4, n_steps=32, batch_size=32, n_epochs=2, net_arch=[16])
TINY_A2C = dict(n_envs=3, n_steps=5, net_arch=[16])


def serial_run(algo, plan: Plan, steps: int, seed: int):
    executor = OnPolicySerialExecutor(algo, seed, plan=plan, eval_episodes=1, progress=False)
    return executor, executor.run(steps)


def assert_same_networks(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for key in sa:
        assert torch.equal(sa[key], sb[key]), key


@pytest.mark.parametrize(("make", "hyper", "actors", "inference"), [
    (pearl.PPO, TINY_PPO, 2, "fused"),
    (pearl.PPO, TINY_PPO, 3, "fused"),          # unequal shares: 2, 1, 1 envs
    (pearl.A2C, TINY_A2C, 2, "fused"),
    (pearl.PPO, TINY_PPO, 1, "reference"),
])
def test_seeded_parallel_run_equals_the_serial_run(make, hyper, actors, inference):
    steps, seed = 600, 3
    plan = sync_plan(actors, inference)
    serial, expected = serial_run(make("CartPole-v1", **hyper), plan, steps, seed)
    parallel = OnPolicyParallelExecutor(make("CartPole-v1", **hyper), plan, seed=seed, eval_episodes=1,
                                        progress=False)
    got = parallel.run(steps)
    assert got.backend == "local-parallel" and got.layout["actors"] == actors
    assert got.executed_on == {k: "cpu" for k in plan.placements} == expected.executed_on   # read, not empty
    assert (got.env_steps, got.gradient_steps, got.episodes) == (expected.env_steps, expected.gradient_steps,
                                                                 expected.episodes)
    rollout_size = hyper["n_envs"] * hyper["n_steps"]
    assert got.env_steps == -(-steps // rollout_size) * rollout_size
    # the last rollout, as the learner saw it, and the networks it learnt
    for field in ("obs", "actions", "rewards", "values", "advantages", "returns", "log_probs"):
        assert np.array_equal(getattr(parallel.rollout, field), getattr(serial.rollout, field)), field
    assert_same_networks(parallel.learner.nets.online, serial.learner.nets.online)
    assert got.eval_returns == expected.eval_returns
    # the learner publishes after every rollout; every actor reads the parameters before each later one
    rollouts = got.env_steps // rollout_size
    assert got.kernel_times[PARAM_SYNC]["calls"] == rollouts + actors * (rollouts - 1)


def test_reference_inference_splitting_the_envs_still_learns_the_serial_update_count():
    """The reference inference is not row-invariant (BLAS blocks by batch): the data may differ in the last
    bits, never the schedule."""
    plan = sync_plan(2, "reference", "reference")
    _, expected = serial_run(pearl.PPO("CartPole-v1", **TINY_PPO), plan, 300, 1)
    got = OnPolicyParallelExecutor(pearl.PPO("CartPole-v1", **TINY_PPO), plan, seed=1, eval_episodes=1,
                                   progress=False).run(300)
    assert (got.env_steps, got.gradient_steps) == (expected.env_steps, expected.gradient_steps) == (384, 24)
    assert got.kernel_times[ENV_STEP]["calls"] == 2 * 384 // 4    # every actor steps its share every vector step


def test_plan_with_more_actors_than_envs_is_refused():
    with pytest.raises(pearl.UserError, match="env_step has 5 replicas .actors. but the run has 4 envs"):
        OnPolicyParallelExecutor(pearl.PPO("CartPole-v1", **TINY_PPO), sync_plan(5))


def _after(predicate, then, timeout: float = 120.0) -> threading.Thread:
    def watch():
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                then()
                return
            time.sleep(0.005)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


@pytest.mark.slow  # a process-level resume/restart run: CI's slow stage (keeps the default suite under 10 min)
def test_interrupted_run_resumes_to_the_serial_run(tmp_path):
    """SIGINT between rollouts writes a checkpoint; the resumed run ends with the serial run's networks."""
    plan, seed, steps = sync_plan(2), 4, 2_048
    first = OnPolicyParallelExecutor(pearl.PPO("CartPole-v1", **TINY_PPO), plan, seed=seed, out_dir=tmp_path,
                                     eval_episodes=1, progress=False)
    _after(lambda: first.learner is not None and first.learner.gradient_steps >= 8,
           lambda: os.kill(os.getpid(), signal.SIGINT))
    with pytest.raises(RunInterrupted) as info:
        first.run(steps)
    assert info.value.checkpoint == tmp_path / "checkpoint"
    ckpt = load_checkpoint(tmp_path)
    assert 0 < ckpt.progress.transitions < steps and ckpt.progress.transitions % 128 == 0
    assert ckpt.learner["gradient_steps"] == ckpt.progress.transitions // 128 * 8

    resumed_executor = OnPolicyParallelExecutor(pearl.PPO("CartPole-v1", **TINY_PPO), plan, seed=seed,
                                                out_dir=tmp_path, eval_episodes=1, progress=False,
                                                resume_from=tmp_path)
    resumed = resumed_executor.run(steps)
    serial, expected = serial_run(pearl.PPO("CartPole-v1", **TINY_PPO), plan, steps, seed)
    assert (resumed.env_steps, resumed.gradient_steps) == (expected.env_steps, expected.gradient_steps)
    assert resumed.wall_seconds > ckpt.progress.wall_seconds
    # a resumed session's envs restart with session seeds (as the off-policy runtime's): counts agree, not data
    assert resumed.kernel_times[LEARNER_UPDATE]["calls"] >= (steps - ckpt.progress.transitions) // 128 * 8


@pytest.mark.slow  # a process-level resume/restart run: CI's slow stage (keeps the default suite under 10 min)
def test_killed_actor_is_restarted_and_the_run_completes(tmp_path):
    plan = sync_plan(2)
    executor = OnPolicyParallelExecutor(pearl.PPO("CartPole-v1", **TINY_PPO), plan, seed=0, out_dir=tmp_path,
                                        eval_episodes=1, progress=False)
    victims = []

    def kill_one():
        victims.append(executor.actor_pids[0])
        os.kill(victims[0], signal.SIGKILL)

    _after(lambda: len(executor.actor_pids) == 2 and executor.learner is not None
           and executor.learner.gradient_steps >= 8, kill_one)
    result = executor.run(1_024)
    assert victims, "the actor was never killed"
    assert result.env_steps == 1_024 and result.gradient_steps == 1_024 // 128 * 8
    assert len(executor.restarts) == 1


@pytest.mark.slow  # a process-level resume/restart run: CI's slow stage (keeps the default suite under 10 min)
def test_periodic_checkpoints_between_rollouts_resume_to_the_same_counts(tmp_path):
    from pearl_py.runtime.checkpoints import CheckpointOptions, periodic_checkpoints

    plan = sync_plan(2)
    first = OnPolicyParallelExecutor(pearl.PPO("CartPole-v1", **TINY_PPO), plan, seed=2, out_dir=tmp_path,
                                     eval_episodes=1, progress=False,
                                     checkpoints=CheckpointOptions(every=256, keep=2)).run(1_024)
    saved = periodic_checkpoints(tmp_path)
    assert len(saved) == 2 and [p.name.split("step")[1] for p in saved] == ["512", "768"]  # the newest two
    ckpt = load_checkpoint(saved[-1])
    assert ckpt.progress.transitions == 768 and ckpt.learner["gradient_steps"] == 768 // 128 * 8
    resumed = OnPolicyParallelExecutor(pearl.PPO("CartPole-v1", **TINY_PPO), plan, seed=2, out_dir=tmp_path,
                                       eval_episodes=1, progress=False, resume_from=saved[-1]).run(1_024)
    assert (resumed.env_steps, resumed.gradient_steps) == (first.env_steps, first.gradient_steps) == (1_024, 64)
