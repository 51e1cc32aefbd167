"""``lin_`` learning rates of the off-policy family: set once per training round by every executor."""
from __future__ import annotations

import pytest

import pearl_py as pearl
from pearl_py.runtime.serial import SerialExecutor


def test_a_serial_run_sets_the_rate_of_its_last_round():
    algo = pearl.DQN("CartPole-v1", learning_rate="lin_1e-3", batch_size=16, net_arch=[8], learning_starts=50,
                     train_freq=4, n_envs=2, buffer_size=1000)
    executor = SerialExecutor(algo, seed=0, eval_episodes=1, progress=False)
    executor.run(404)
    # 202 vector steps; the last round is at vector step 200 (train_freq 4): 1 - 200 * 2 / 404 remaining
    expected = 1e-3 * (1 - 400 / 404)
    assert executor.learner.learning_rate == pytest.approx(expected)
    assert {g["lr"] for opt in executor.learner.optimizers.values() for g in opt.param_groups} == \
        {executor.learner.learning_rate}


def test_a_constant_rate_is_left_as_it_is():
    algo = pearl.SAC("Pendulum-v1", batch_size=16, net_arch=[8], learning_starts=20, buffer_size=1000)
    executor = SerialExecutor(algo, seed=0, eval_episodes=1, progress=False)
    executor.run(60)
    assert executor.learner.learning_rate == pytest.approx(3e-4)
