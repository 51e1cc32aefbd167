"""The policy-lag bound of the training schedule, against the serial loop's order."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pearl_py.protocol.schedule import TrainSchedule


def updates_before(s: TrainSchedule, step: int) -> int:
    """Updates the serial loop has done before it collects vector step ``step`` (1-based)."""
    updates = 0
    for k in range(1, step):
        if k % s.train_freq == 0 and k * s.n_envs > s.learning_starts:
            updates += s.gradient_steps
    return updates


@settings(max_examples=80, deadline=None)
@given(n_envs=st.integers(1, 3), train_freq=st.integers(1, 8), gradient_steps=st.integers(1, 6),
       learning_starts=st.integers(0, 40), total=st.integers(1, 200), lag=st.integers(0, 10))
def test_lag_steps_admit_exactly_the_steps_within_the_lag(n_envs, train_freq, gradient_steps, learning_starts,
                                                         total, lag):
    s = TrainSchedule(n_envs, train_freq, gradient_steps, learning_starts, total, max_policy_lag=lag)
    for done in range(0, s.total_updates + 1):
        allowed = s.lag_steps(done)
        assert 1 <= allowed <= s.vector_steps
        assert updates_before(s, allowed) <= done + lag          # every admitted step is within the lag
        if allowed < s.vector_steps:
            assert updates_before(s, allowed + 1) > done + lag   # and the next one is not


def test_zero_lag_is_the_serial_order_and_none_is_the_window():
    kw = dict(n_envs=1, train_freq=256, gradient_steps=128, learning_starts=1000, total_steps=50_000)
    serial = TrainSchedule(**kw, max_policy_lag=0)
    # round 1 (steps 1..1024) is collected before any update; round 2 only after all 128 of round 1
    assert serial.actor_limit(1024, updates_done=0) == serial.actor_limit(1024, updates_done=127) == 1024
    assert serial.actor_limit(1024, updates_done=128) == 1280
    assert serial.overlap == 0.0
    lagged = TrainSchedule(**kw, max_policy_lag=4)
    assert lagged.actor_limit(1024, updates_done=123) == 1024 and lagged.actor_limit(1024, updates_done=124) == 1280
    assert lagged.overlap == pytest.approx(4 / 128)
    free = TrainSchedule(**kw, max_policy_lag=None)
    assert free.actor_limit(1024, updates_done=0) == 1280 and free.overlap == 1.0
    # one update per step (DDPG's zoo config): a lag of 4 never binds tighter than the one-step window
    ddpg = TrainSchedule(n_envs=1, train_freq=1, gradient_steps=1, learning_starts=100, total_steps=1000,
                         max_policy_lag=4)
    assert ddpg.overlap == 1.0 and ddpg.actor_limit(200, updates_done=100) == 201


def test_negative_lag_is_refused():
    with pytest.raises(ValueError, match="max_policy_lag must be >= 0"):
        TrainSchedule(1, 1, 1, 0, 10, max_policy_lag=-1)
