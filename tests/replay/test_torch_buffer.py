"""TorchReplayBuffer has the numpy ReplayBuffer's semantics, on the CPU torch device and on CUDA (``device``, conftest).

Statistical tests use fixed seeds, so each computes the same statistic on every run
(no flakiness under load); the thresholds are what a correct sampler passes with a
wide margin and a biased one fails.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from scipy.stats import chisquare

from pearl_py.replay import ReplayBuffer
from pearl_py.replay.torch_buffer import TorchReplayBuffer, TorchSampleBatch

from .helpers import assert_same, assert_same_state, snapshot, transitions

def fill(buf, n: int = 6) -> None:
    buf.add(*transitions(n))


# ----------------------------------------------------------------- contents and shapes


@pytest.mark.parametrize("prioritized", [False, True])
def test_wrap_around_keeps_the_newest_items(device, prioritized):
    with TorchReplayBuffer(5, (4,), prioritized=prioritized, fanout=2, device=device) as buf:
        assert buf.add(*transitions(3)).tolist() == [0, 1, 2]
        assert buf.add(*transitions(4, start=3)).tolist() == [3, 4, 0, 1]
        assert len(buf) == 5
        state = buf.state_dict()                 # slots hold items 5, 6, 2, 3, 4: the two oldest were overwritten
        np.testing.assert_array_equal(state["actions"], [5, 6, 2, 3, 4])
        np.testing.assert_array_equal(state["obs"], np.repeat([[5], [6], [2], [3], [4]], 4, axis=1))
        np.testing.assert_array_equal(state["next_obs"][:, 0], [5.5, 6.5, 2.5, 3.5, 4.5])
        np.testing.assert_array_equal(state["rewards"], [5, 6, 2, 3, 4])
        np.testing.assert_array_equal(state["dones"], [1, 0, 0, 1, 0])
        np.testing.assert_array_equal(state["counters"], [2, 5])
        assert buf.add(*transitions(5, start=7)).tolist() == [2, 3, 4, 0, 1]
        np.testing.assert_array_equal(buf.state_dict()["actions"], [10, 11, 7, 8, 9])
        assert set(buf.sample(200).actions.tolist()) == {7, 8, 9, 10, 11}


@pytest.mark.parametrize("prioritized", [False, True])
def test_sample_returns_device_tensors_whose_rows_match_their_slots(device, prioritized):
    with TorchReplayBuffer(100, (4,), prioritized=prioritized, seed=1, device=device) as buf:
        buf.add(*transitions(10))
        batch = buf.sample(32, beta=0.4)
    assert isinstance(batch, TorchSampleBatch) and len(batch) == 32
    for field in (batch.obs, batch.actions, batch.rewards, batch.next_obs, batch.dones, batch.indices, batch.weights):
        assert field.device.type == torch.device(device).type
    assert batch.obs.shape == batch.next_obs.shape == (32, 4) and batch.obs.dtype == torch.float32
    assert batch.actions.shape == (32,) and batch.actions.dtype == torch.int64
    assert batch.rewards.dtype == batch.dones.dtype == batch.weights.dtype == torch.float32
    assert batch.indices.dtype == torch.int64 and batch.indices.shape == (32,)
    ids = batch.indices.cpu().numpy()
    np.testing.assert_array_equal(batch.obs[:, 0].cpu(), ids)
    np.testing.assert_array_equal(batch.next_obs[:, 0].cpu(), ids + 0.5)
    np.testing.assert_array_equal(batch.actions.cpu(), ids)
    np.testing.assert_array_equal(batch.rewards.cpu(), ids)
    np.testing.assert_array_equal(batch.dones.cpu(), ids % 2)
    assert ids.min() >= 0 and ids.max() < 10
    if not prioritized:
        np.testing.assert_array_equal(batch.weights.cpu(), np.ones(32))


def test_continuous_actions_keep_their_shape_and_dtype(device):
    with TorchReplayBuffer(10, (3,), action_shape=(1,), action_dtype=np.float32, device=device) as buf:
        buf.add(np.zeros((2, 3)), np.array([[0.5], [-0.25]]), [1, 2], np.ones((2, 3)), [0, 1])
        batch = buf.sample(4)
    assert batch.actions.shape == (4, 1) and batch.actions.dtype == torch.float32
    assert set(batch.actions[:, 0].tolist()) <= {0.5, -0.25}


@pytest.mark.parametrize("prioritized", [False, True])
def test_sampling_is_deterministic_for_a_seed(device, prioritized):
    def draws(seed):
        with TorchReplayBuffer(1000, (4,), prioritized=prioritized, seed=seed, device=device) as buf:
            buf.add(*transitions(500))
            if prioritized:
                buf.update_priorities(np.arange(500), np.linspace(0, 3, 500))
            return torch.cat([buf.sample(64).indices for _ in range(5)]).cpu().numpy()
    np.testing.assert_array_equal(draws(3), draws(3))
    assert not np.array_equal(draws(3), draws(4))


# ----------------------------------------------------------------- distributions


def test_uniform_sampling_frequencies_are_flat_chi_square(device):
    with TorchReplayBuffer(100, (4,), seed=11, device=device) as buf:
        buf.add(*transitions(60))
        drawn = torch.cat([buf.sample(1000).indices for _ in range(100)]).cpu().numpy()
    counts = np.bincount(drawn, minlength=60)
    assert len(counts) == 60 and counts.sum() == 100_000
    assert chisquare(counts).pvalue > 1e-3


@pytest.mark.parametrize("fanout", [2, 5, 16])
def test_prioritized_frequencies_follow_priorities_to_the_alpha_chi_square(device, fanout):
    rng = np.random.default_rng(123)
    n_items, draws, batch = 300, 200_000, 1_000
    with TorchReplayBuffer(512, (4,), prioritized=True, alpha=0.7, fanout=fanout, seed=7, device=device) as buf:
        buf.add(*transitions(n_items))
        td = rng.exponential(1.0, n_items)
        td[::50] = 0.0                                       # eps keeps these drawable, just rarely
        buf.update_priorities(torch.arange(n_items), torch.from_numpy(td))
        drawn = torch.cat([buf.sample(batch).indices for _ in range(draws // batch)]).cpu().numpy()
    counts = np.bincount(drawn, minlength=n_items)
    assert len(counts) == n_items                            # never an unwritten slot
    priorities = (td + 1e-6) ** 0.7
    expected = draws * priorities / priorities.sum()
    keep = expected >= 5                                     # chi-square validity; pool the rare ones
    observed = np.append(counts[keep], counts[~keep].sum())
    expected = np.append(expected[keep], expected[~keep].sum())
    assert chisquare(observed, expected).pvalue > 1e-3
    # and against uniform (what a sampler ignoring the priorities would give): rejected outright
    assert chisquare(counts, np.full(n_items, draws / n_items)).pvalue < 1e-100


def test_zero_mass_slots_are_never_drawn(device):
    """Slots past ``size`` (priority 0) never come out, even for targets at the very top of the mass."""
    with TorchReplayBuffer(64, (4,), prioritized=True, alpha=1.0, fanout=16, device=device) as buf:
        buf.add(*transitions(17))
        prios = buf._priorities
        targets = torch.tensor([0.0, 16.5, 17.0, 1e9], dtype=torch.float64, device=device)
        assert prios.find(prios.running(len(buf)), targets).tolist() == [0, 16, 16, 16]


# ----------------------------------------------------------------- importance weights


def numpy_weights_by_slot(buf: ReplayBuffer, beta: float, draws: int = 4000) -> dict[int, float]:
    """The numpy buffer's IS weight of every slot its (stratified, so covering) draws reach."""
    batch = buf.sample(draws, beta=beta)
    return dict(zip(batch.indices.tolist(), batch.weights.tolist()))


@pytest.mark.parametrize("beta", [0.0, 0.4, 1.0])
@pytest.mark.parametrize("fanout", [2, 16])
def test_weights_equal_the_numpy_buffers_for_the_same_priorities(device, fanout, beta):
    rng = np.random.default_rng(0)
    with ReplayBuffer(64, (4,), prioritized=True, alpha=0.6, fanout=fanout, seed=3) as reference:
        reference.add(*transitions(40))
        td = rng.uniform(0.2, 5, 40)
        reference.update_priorities(np.arange(40), td)
        expected_by_slot = numpy_weights_by_slot(reference, beta)
        with TorchReplayBuffer.load_state_dict(reference.state_dict(), device=device) as buf:
            batch = buf.sample(512, beta=beta)
    indices, weights = batch.indices.cpu().numpy(), batch.weights.cpu().numpy()
    assert len(expected_by_slot) == 40 and len(set(indices.tolist())) > 30
    np.testing.assert_allclose(weights, [expected_by_slot[i] for i in indices], rtol=1e-6)
    p = (td + 1e-6) ** 0.6                                   # and the paper's formula, evaluated independently
    w_all = (40 * p / p.sum()) ** -beta
    np.testing.assert_allclose(weights, (w_all[indices] / w_all.max()).astype(np.float32), rtol=1e-6)
    assert weights.max() <= 1.0


def test_weights_use_the_minimum_over_stored_items_not_over_the_batch(device):
    with TorchReplayBuffer(8, (4,), prioritized=True, alpha=1.0, fanout=2, seed=0, device=device) as buf:
        buf.add(*transitions(4))
        buf.update_priorities(np.arange(4), np.array([1e-3, 100.0, 100.0, 100.0]))
        batch = buf.sample(3, beta=1.0)                      # stratified: the tiny item is ~never drawn
    assert 0 not in batch.indices.tolist()
    np.testing.assert_allclose(batch.weights.cpu(), (1e-3 + 1e-6) / (100.0 + 1e-6), rtol=1e-6)


# ----------------------------------------------------------------- priority updates


def test_priorities_are_td_plus_eps_to_the_alpha_and_new_items_get_the_running_max(device):
    with TorchReplayBuffer(8, (4,), prioritized=True, alpha=0.5, eps=0.01, device=device) as buf:
        buf.add(*transitions(3))
        np.testing.assert_array_equal(buf.state_dict()["priorities"], [1.0, 1.0, 1.0])   # nothing seen yet
        buf.update_priorities(torch.tensor([0, 1], device=device), torch.tensor([3.0, 0.2], device=device))
        state = buf.state_dict()
        np.testing.assert_allclose(state["priorities"][:2], np.array([3.01, float(np.float32(0.2)) + 0.01]) ** 0.5,
                                   rtol=1e-12)
        assert state["max_seen"] == pytest.approx(3.01, rel=1e-12)
        buf.update_priorities(np.array([1]), np.array([0.5]))       # lower values do not reduce the max
        buf.add(*transitions(2, start=3))
        state = buf.state_dict()
        np.testing.assert_allclose(state["priorities"][3:5], 3.01**0.5, rtol=1e-12)
        assert float(buf._priorities.min(len(buf))) == pytest.approx(0.51**0.5, rel=1e-12)
        assert float(buf._priorities.running(len(buf))[-1]) == pytest.approx(state["priorities"].sum(), rel=1e-12)


def test_the_last_of_repeated_slots_wins(device):
    with TorchReplayBuffer(32, (4,), prioritized=True, alpha=1.0, eps=1e-6, fanout=2, device=device) as buf:
        buf.add(*transitions(20))
        buf.update_priorities(np.array([7, 3, 7, 12, 7, 3]), np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]))
        priorities = buf.state_dict()["priorities"]
    np.testing.assert_allclose(priorities[[3, 7, 12]], np.array([6.0, 5.0, 4.0]) + 1e-6, rtol=1e-12)
    assert np.count_nonzero(priorities == 1.0) == 17


def test_overwritten_items_leave_the_minimum(device):
    with TorchReplayBuffer(2, (4,), prioritized=True, alpha=1.0, seed=0, device=device) as buf:
        buf.add(*transitions(2))
        buf.update_priorities(np.array([0, 1]), np.array([0.001, 2.0]))
        buf.add(*transitions(1, start=2))                    # slot 0 now holds a new item at the max priority
        assert float(buf._priorities.min(len(buf))) == pytest.approx(2.0 + 1e-6)
        np.testing.assert_allclose(buf.sample(4, beta=1.0).weights.cpu(), 1.0)


@pytest.mark.parametrize("fanout", [2, 16])
def test_same_calls_give_the_numpy_buffers_state(device, fanout):
    """Adds (with wrap-around) and priority updates (sampled slots, repeats) leave both buffers in the same state."""
    rng = np.random.default_rng(5)
    with ReplayBuffer(100, (4,), prioritized=True, alpha=0.6, fanout=fanout, seed=1) as reference, \
            TorchReplayBuffer(100, (4,), prioritized=True, alpha=0.6, fanout=fanout, seed=1, device=device) as buf:
        start = 0
        for n in (30, 50, 40, 60):
            for target in (reference, buf):
                target.add(*transitions(n, start=start))
            start += n
            slots = rng.integers(0, len(reference), 64)
            td = rng.exponential(2.0, 64)
            reference.update_priorities(slots, td)
            buf.update_priorities(torch.from_numpy(slots).to(device), torch.from_numpy(td).to(device))
        assert len(buf) == len(reference) == 100
        expected, state = reference.state_dict(), buf.state_dict()
        assert_same_state(expected, state, priorities_rtol=1e-14)
        assert float(buf._priorities.running(len(buf))[-1]) == pytest.approx(reference._sampler.tree.total, rel=1e-12)
        assert float(buf._priorities.min(len(buf))) == pytest.approx(reference._sampler.tree.min, rel=1e-14)


def test_update_accepts_the_sampled_indices_and_a_float32_td_tensor(device):
    with TorchReplayBuffer(64, (4,), prioritized=True, alpha=1.0, eps=1e-6, device=device) as buf:
        buf.add(*transitions(64))
        batch = buf.sample(16)
        td = torch.linspace(0.0, 1.5, 16, dtype=torch.float32, device=device)
        buf.update_priorities(batch.indices, td)
        priorities = buf.state_dict()["priorities"]
    last = {slot: value for slot, value in zip(batch.indices.tolist(), td.double().cpu().tolist())}
    np.testing.assert_allclose(priorities[list(last)], np.array(list(last.values())) + 1e-6, rtol=1e-12)


# ----------------------------------------------------------------- checkpoints


def numpy_buffer_with_history(fanout: int = 16, prioritized: bool = True) -> ReplayBuffer:
    buf = ReplayBuffer(16, (4,), prioritized=prioritized, fanout=fanout, alpha=0.6, seed=5)
    buf.add(*transitions(12))
    buf.add(*transitions(8, start=12))                       # wrapped: cursor 4, full
    if prioritized:
        buf.update_priorities(np.array([3, 7, 9]), np.array([0.1, 4.0, 2.0]))
    buf.sample(8)
    return buf


@pytest.mark.parametrize("prioritized", [False, True])
def test_numpy_state_loads_into_the_torch_buffer(device, prioritized):
    with numpy_buffer_with_history(prioritized=prioritized) as reference:
        expected = reference.state_dict()
        with TorchReplayBuffer.load_state_dict(expected, device=device) as buf:
            state = buf.state_dict()
            assert len(buf) == len(reference) == 16 and buf.prioritized == prioritized
            assert_same_state(expected, state)               # same items, counters and priorities, exactly
            assert state["rng"] == expected["rng"]           # the numpy generator's position is carried along
            if prioritized:
                total = float(buf._priorities.running(len(buf))[-1])
                assert total == pytest.approx(reference._sampler.tree.total, rel=1e-12)
                assert float(buf._priorities.min(len(buf))) == reference._sampler.tree.min
            assert buf.add(*transitions(1, start=100)).tolist() == reference.add(*transitions(1, start=100)).tolist()
            assert_same_state(reference.state_dict(), buf.state_dict(), priorities_rtol=1e-15)


@pytest.mark.parametrize("prioritized", [False, True])
def test_torch_state_loads_into_the_numpy_buffer(device, prioritized):
    with TorchReplayBuffer(16, (4,), prioritized=prioritized, fanout=16, alpha=0.6, seed=5, device=device) as buf:
        buf.add(*transitions(12))
        buf.add(*transitions(8, start=12))
        if prioritized:
            buf.update_priorities(np.array([3, 7, 9]), np.array([0.1, 4.0, 2.0]))
        buf.sample(8)
        expected = buf.state_dict()
    with ReplayBuffer.load_state_dict(expected) as restored:
        state = restored.state_dict()
        assert len(restored) == 16 and restored.prioritized == prioritized
        assert_same_state(expected, state)
        assert state["rng"] == np.random.default_rng(5).bit_generator.state
        if prioritized:
            assert restored._sampler.tree.total == pytest.approx(expected["priorities"].sum(), rel=1e-15)
        assert set(restored.sample(200).actions.tolist()) == set(range(4, 20))


def test_torch_state_round_trip_resumes_the_generator(device):
    buf = TorchReplayBuffer(16, (4,), prioritized=True, fanout=2, seed=5, device=device)
    buf.add(*transitions(12))
    buf.add(*transitions(8, start=12))
    buf.update_priorities(np.array([3, 7, 9]), np.array([0.1, 4.0, 2.0]))
    buf.sample(8)
    with buf, TorchReplayBuffer.load_state_dict(buf.state_dict(), device=device) as restored:
        assert_same(snapshot(buf), snapshot(restored))
        a, b = buf.sample(32), restored.sample(32)
        assert torch.equal(a.indices, b.indices) and torch.equal(a.weights, b.weights)


def test_numpy_state_seeds_the_generator_deterministically(device):
    with numpy_buffer_with_history() as reference:
        state = reference.state_dict()
    draws = []
    for _ in range(2):
        with TorchReplayBuffer.load_state_dict(state, device=device) as buf:
            draws.append(buf.sample(64).indices.cpu().numpy())
    np.testing.assert_array_equal(*draws)


def test_load_state_dict_rejects_something_else():
    with pytest.raises(ValueError, match="state"):
        TorchReplayBuffer.load_state_dict({"meta": {}})
    with numpy_buffer_with_history() as reference:
        state = reference.state_dict()
    with pytest.raises(ValueError, match="state"):
        TorchReplayBuffer.load_state_dict(state | {"obs": state["obs"][:, :2]})
    with pytest.raises(ValueError, match="state: rng"):
        TorchReplayBuffer.load_state_dict(state | {"rng": {"bit_generator": "MT19937"}})


# ----------------------------------------------------------------- bad input (the shared cases: test_bad_input)


def test_a_refused_update_on_a_gpu_is_reported_by_the_next_call(device):
    """On CUDA the value check's result is read at the buffer's next call; forced here on every device."""
    with TorchReplayBuffer(8, (4,), prioritized=True, fanout=2, device=device) as buf:
        fill(buf)
        buf._defer_checks = True
        before = snapshot(buf)
        buf.update_priorities(np.array([0, 1]), np.array([1.0, np.nan]))      # queued, not raised yet
        with pytest.raises(ValueError, match="td_errors_abs: contains NaN or infinite values"):
            buf.sample(4)
        assert_same(before, snapshot(buf))
        buf.update_priorities(np.array([0, 9]), np.array([1.0, 2.0]))
        with pytest.raises(ValueError, match=r"indices: index 9 was never written \(valid slots are 0..5\)"):
            len(buf)
        buf.update_priorities(np.array([0]), np.array([2.0]))                  # a good one: nothing to report
        assert len(buf.sample(4)) == 4 and buf.state_dict()["max_seen"] == pytest.approx(2.0 + 1e-6)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error where CUDA is absent")
def test_cuda_without_cuda_is_refused():
    with pytest.raises(ValueError, match="device: cuda asked for, but CUDA is not available"):
        TorchReplayBuffer(8, (4,), device="cuda")


def test_closed_buffer_refuses_work(device):
    buf = TorchReplayBuffer(4, (4,), prioritized=True, device=device)
    buf.close()
    buf.close()
    for call in (lambda: buf.sample(1), lambda: len(buf), lambda: buf.add(*transitions(1)),
                 lambda: buf.update_priorities(np.array([0]), np.array([1.0])), buf.state_dict):
        with pytest.raises(ValueError, match="closed"):
            call()


class _Event:
    """A GPU event that the test completes; counts waits."""

    def __init__(self) -> None:
        self.done, self.waits = False, 0

    def query(self) -> bool:
        return self.done

    def synchronize(self) -> None:
        self.waits += 1


def test_a_deferred_check_is_read_once_the_device_ran_the_update_never_waited_for(monkeypatch):
    """On a GPU the host never waits for a priority update's check at the next call: a later call raises it once
    its event has completed; beyond the bound of unread checks (or in state_dict) the oldest is waited for."""
    from pearl_py.replay import torch_buffer

    events: list[_Event] = []

    def queued(check):
        events.append(_Event())
        return dataclasses.replace(check, done=events[-1])

    monkeypatch.setattr(torch_buffer._PendingCheck, "queued", queued)
    with TorchReplayBuffer(8, (4,), prioritized=True, fanout=2) as buf:
        fill(buf)
        buf._defer_checks = True
        buf.update_priorities(np.array([0, 1]), np.array([1.0, np.nan]))      # the device is still running it
        assert len(buf.sample(4)) == 4 and events[0].waits == 0                # not read, not waited for
        events[0].done = True
        with pytest.raises(ValueError, match="td_errors_abs: contains NaN or infinite values"):
            buf.sample(4)
        monkeypatch.setattr(torch_buffer, "MAX_PENDING_CHECKS", 2)
        for _ in range(3):
            buf.update_priorities(np.array([0]), np.array([1.0]))
        assert len(buf) == 6 and [e.waits for e in events[1:]] == [1, 0, 0]   # the oldest beyond the bound
        buf.state_dict()
        assert [e.waits for e in events[1:]] == [1, 1, 1]
