"""Fast learner updates equal the reference (Learner.update) over 100 updates from the same weights.

The whole-step function is checked eagerly for every algorithm shape (no compile time);
the compiled variant on DQN (double-Q, importance weights, gradient clipping) and
DDPG here, and on plain DQN, TD3 and SAC in the slow run (each compile takes seconds).
"""
from __future__ import annotations

import pytest
import torch
from kernel_helpers import assert_same_run, batch_stream, twin_learners

import pearl_py as pearl
from pearl_py.algorithms.off_policy.learner import Learner
from pearl_py.algorithms.optimizers import Adam
from pearl_py import kernels
from pearl_py.kernels.learner_update import FusedUpdate, make_compiled, make_functional
from pearl_py.runtime.collect import gradient_step, update_timing
from pearl_py.runtime.timing import KernelTimer

SMALL = {"batch_size": 32, "net_arch": [32, 32]}


def dqn(**overrides) -> pearl.DQN:
    return pearl.DQN("CartPole-v1", **SMALL, learning_rate=2.3e-3, target_update_interval=10, **overrides)


def ddpg() -> pearl.DDPG:
    return pearl.DDPG("Pendulum-v1", **SMALL)


def td3() -> pearl.TD3:
    return pearl.TD3("Pendulum-v1", **SMALL)


def sac(**overrides) -> pearl.SAC:
    return pearl.SAC("Pendulum-v1", **SMALL, **overrides)


@pytest.mark.parametrize("make_algo", [dqn, lambda: dqn(double_q=True), lambda: dqn(max_grad_norm=None),
                                       ddpg, td3, sac, lambda: sac(ent_coef=0.2)],
                         ids=["dqn", "double_dqn", "dqn_noclip", "ddpg", "td3", "sac", "sac_fixed_alpha"])
def test_whole_step_function_equals_reference(make_algo):
    assert_same_run(make_algo(), make_functional)


@pytest.mark.parametrize("make_algo", [lambda: dqn(double_q=True), ddpg], ids=["double_dqn", "ddpg"])
def test_compiled_equals_reference(make_algo):
    assert_same_run(make_algo(), lambda learner: kernels.build("learner_update", "compiled", learner))


@pytest.mark.slow
@pytest.mark.parametrize("make_algo", [dqn, td3, sac], ids=["dqn", "td3", "sac"])
def test_compiled_equals_reference_more_algorithms(make_algo):
    assert_same_run(make_algo(), make_compiled)


def test_fast_and_reference_steps_share_the_learner_state():
    """Alternating the fast step with Learner.update is the same as the reference alone."""
    algo = ddpg()
    ref, mixed = twin_learners(algo)
    fast = make_functional(mixed)
    for i, batch in enumerate(batch_stream(algo, n=20)):
        ref.update(batch)
        (fast if i % 2 else mixed.update)(batch)
    for got, expected in zip(mixed.nets.parameters(), ref.nets.parameters()):
        torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-4)
    restored = twin_learners(algo)[0]
    restored.load_state_dict(mixed.state_dict())
    assert restored.gradient_steps == 20


def test_delayed_loss_only_reported_on_its_steps():
    algo = td3()
    update = make_functional(twin_learners(algo)[0])
    first, second = (update(b) for b in batch_stream(algo, n=2))
    assert sorted(first.losses) == ["critic"] and sorted(second.losses) == ["actor", "critic"]


def test_first_call_time_is_recorded_per_loss_set():
    algo = dqn()
    update = make_functional(twin_learners(algo)[0])
    update(batch_stream(algo, n=1)[0])
    assert list(update.first_call_seconds) == [("q",)]


def test_plain_adam_is_required():
    algo = dqn()
    learner = twin_learners(algo)[0]
    learner.optimizers["q"] = Adam(learner.nets.online.q.parameters(), weight_decay=0.1)
    with pytest.raises(ValueError, match="weight_decay"):
        make_functional(learner)


@pytest.mark.parametrize("make_fast", [make_functional, make_compiled], ids=["functional", "compiled"])
def test_a_lin_learning_rate_set_per_round_is_what_the_fast_steps_use(make_fast):
    algo = pearl.DDPG("Pendulum-v1", **SMALL, learning_rate="lin_1e-3")
    assert_same_run(algo, make_fast, rounds_of=10)


def test_set_learning_rate_follows_the_schedule_in_every_optimizer():
    learner = Learner(pearl.SAC("Pendulum-v1", **SMALL, learning_rate="lin_1e-3"))
    assert learner.learning_rate == 1e-3
    assert learner.set_learning_rate(0.25) == pytest.approx(2.5e-4) == learner.learning_rate
    assert {g["lr"] for opt in learner.optimizers.values() for g in opt.param_groups} == {learner.learning_rate}
    assert learner.set_learning_rate(-0.5) == 0.0          # held at 0 after the end


class _Batches:
    """A uniform replay handing out prepared batches (tensors, so ``gradient_step`` uses them as they are)."""

    prioritized = False

    def __init__(self, batches) -> None:
        self.batches = iter(batches)

    def sample(self, batch_size, beta):
        return next(self.batches)


def test_a_steps_compile_is_timed_as_the_updates_setup_not_as_an_update():
    """The first call of each loss set compiles (here: TD3's critic step, then its delayed actor step); the timer
    charges those calls to ``learner_update_setup``, and the update's calls are the replays only."""
    algo = td3()
    update = FusedUpdate(twin_learners(algo)[0], lambda step: step)   # a 'compile' that returns the step as is
    timer, replay = KernelTimer(), _Batches(batch_stream(algo, n=5))
    for _ in range(5):
        gradient_step(replay, update, algo.config.batch_size, 0.4, torch.device("cpu"), timer)
    times = timer.summary()
    assert times["learner_update_setup"]["calls"] == 2 and times["learner_update"]["calls"] == 3
    assert update_timing(make_functional(twin_learners(algo)[0])) == "learner_update"  # nothing compiled, no setup
