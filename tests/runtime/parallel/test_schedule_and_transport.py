"""Rate limiter arithmetic against the serial loop, and the shared-memory transport pieces."""
from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pearl_py.protocol.schedule import TrainSchedule
from pearl_py.runtime.parallel.params import ParamBoard
from pearl_py.runtime.parallel.ring import ShmRing


def serial_updates(s: TrainSchedule) -> list[int]:
    """Cumulative updates after every vector step, counted the way SerialExecutor.run does."""
    out, updates, steps = [], 0, 0
    for vector_steps in range(1, s.vector_steps + 1):
        steps += s.n_envs
        if vector_steps % s.train_freq == 0 and steps > s.learning_starts:
            updates += s.gradient_steps
        out.append(updates)
    return out


@settings(max_examples=60, deadline=None)
@given(n_envs=st.integers(1, 4), train_freq=st.integers(1, 9), gradient_steps=st.integers(1, 5),
       learning_starts=st.integers(0, 60), total=st.integers(1, 300))
def test_schedule_reproduces_the_serial_update_count(n_envs, train_freq, gradient_steps, learning_starts, total):
    s = TrainSchedule(n_envs, train_freq, gradient_steps, learning_starts, total)
    expected = serial_updates(s)
    assert [s.updates_until(k) for k in range(1, s.vector_steps + 1)] == expected
    assert s.total_updates == expected[-1]
    rounds = [k for k in range(1, s.vector_steps + 1) if s.is_round(k)] + [s.vector_steps]
    for step in range(s.vector_steps + 1):  # from any step: the first training step after it
        assert s.next_round(step) == min(next(r for r in rounds if r > step or r == s.vector_steps), s.vector_steps)
    k = 0
    while k < s.vector_steps:  # next_round walks exactly the training steps
        k = s.next_round(k)
        assert k == rounds.pop(0)


def test_quotas_split_the_remaining_vector_steps():
    s = TrainSchedule(n_envs=2, train_freq=4, gradient_steps=1, learning_starts=0, total_steps=101,
                      max_policy_lag=None)
    assert s.vector_steps == 51 and s.env_steps == 102
    assert s.quotas(3) == [17, 17, 17] and s.quotas(2, done=10) == [21, 20]
    assert s.window == 8
    assert s.actor_limit(0) == 8 and s.actor_limit(40) == 48  # learning_starts 0: first round at step 4
    late = TrainSchedule(n_envs=1, train_freq=1, gradient_steps=1, learning_starts=10_000, total_steps=20_000,
                         max_policy_lag=None)
    assert late.actor_limit(0) == late.actor_limit(9_000) == 10_001 and late.actor_limit(10_001) == 10_002


def test_ring_wraps_around_and_keeps_order():
    ring = ShmRing.create({"x": (np.int64, ()), "v": (np.float32, (2,))}, capacity=5, name="pearl-test-ring")
    try:
        peer = ShmRing.attach(ring.name)
        got = []
        for start in range(0, 30, 3):
            peer.put(x=np.arange(start, start + 3), v=np.full((3, 2), start, np.float32))
            got += ring.get(2)["x"].tolist()
            with pytest.raises(ValueError, match="do not fit"):
                peer.put(x=np.zeros(6), v=np.zeros((6, 2)))
            got += ring.get(5)["x"].tolist()
        assert got == list(range(30)) and ring.pending() == 0 and peer.head == 30
        peer.close()
    finally:
        ring.close()


def test_a_closed_ring_refuses_puts_and_gets():
    ring = ShmRing.create({"x": (np.float32, (2,))}, capacity=4, name=f"pearl-test-closed-{os.getpid()}")
    name = ring.name
    ring.close()
    with pytest.raises(ValueError, match=f"ring {name} is closed"):
        ring.put(x=np.ones((1, 2)))
    with pytest.raises(ValueError, match="is closed"):
        ring.get(1)


def test_param_board_moves_weights_and_reports_nothing_new():
    net = torch.nn.Linear(3, 2)
    other = torch.nn.Linear(3, 2)
    board = ParamBoard.create(net.state_dict(), "pearl-test-params")
    try:
        reader = ParamBoard.attach(board.name)
        assert reader.read_into(other.state_dict())
        assert torch.equal(other.weight, net.weight)
        assert not reader.read_into(other.state_dict())
        with torch.no_grad():
            net.weight.add_(1.0)
        board.publish(net.state_dict())
        assert board.version == 4 and reader.read_into(other.state_dict())
        assert torch.equal(other.weight, net.weight)
        reader.close()
    finally:
        board.close()


def test_a_gpu_learners_parameters_are_published_in_one_transfer(monkeypatch):
    """Tensors on another device than the board (a GPU's; here ``meta``) are gathered there and copied to the board
    once, not once per tensor (each copy would wait for the device)."""
    from pearl_py.runtime.parallel.params import pack

    gathered: list[int] = []
    cat = torch.cat

    def gather(tensors):
        gathered.append(len(tensors))
        return torch.arange(sum(t.numel() for t in tensors), dtype=torch.float32)  # what the device would hold

    monkeypatch.setattr(torch, "cat", gather)
    flat = torch.zeros(8)
    pack(flat, [torch.empty(2, 2, device="meta"), torch.empty(3, device="meta")])
    assert gathered == [2] and flat.tolist() == [0, 1, 2, 3, 4, 5, 6, 0]
    monkeypatch.setattr(torch, "cat", cat)
    pack(flat, [torch.ones(2), torch.full((1,), 2.0)])   # on the board's own device: copied as they are
    assert gathered == [2] and flat.tolist()[:3] == [1, 1, 2]
