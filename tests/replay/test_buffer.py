"""ReplayBuffer behaviour: shapes and dtypes, wrap-around, determinism, checkpoints, workload."""
from __future__ import annotations

import numpy as np
import pytest

from pearl_py.protocol import ReplayWorkload
from pearl_py.replay import ReplayBuffer, SampleBatch

from .helpers import assert_same, snapshot, transitions


@pytest.mark.parametrize("prioritized", [False, True])
def test_sample_returns_typed_arrays_of_the_batch_size(prioritized):
    with ReplayBuffer(100, (4,), prioritized=prioritized, seed=1) as buf:
        buf.add(*transitions(10))
        batch = buf.sample(32, beta=0.4)
    assert isinstance(batch, SampleBatch) and len(batch) == 32
    assert batch.obs.shape == batch.next_obs.shape == (32, 4) and batch.obs.dtype == np.float32
    assert batch.actions.shape == (32,) and batch.actions.dtype == np.int64
    assert batch.rewards.dtype == batch.dones.dtype == batch.weights.dtype == np.float32
    assert batch.indices.dtype == np.int64 and batch.indices.shape == (32,)
    ids = batch.indices                     # every field comes from the slot it names
    np.testing.assert_array_equal(batch.obs[:, 0], ids)
    np.testing.assert_array_equal(batch.next_obs[:, 0], ids + 0.5)
    np.testing.assert_array_equal(batch.actions, ids)
    np.testing.assert_array_equal(batch.rewards, ids)
    np.testing.assert_array_equal(batch.dones, ids % 2)
    if not prioritized:
        np.testing.assert_array_equal(batch.weights, np.ones(32))


def test_continuous_actions_keep_their_shape_and_dtype():
    with ReplayBuffer(10, (3,), action_shape=(1,), action_dtype=np.float32) as buf:
        buf.add(np.zeros((2, 3)), np.array([[0.5], [-0.25]]), [1, 2], np.ones((2, 3)), [0, 1])
        batch = buf.sample(4)
    assert batch.actions.shape == (4, 1) and batch.actions.dtype == np.float32
    assert set(batch.actions[:, 0].tolist()) <= {0.5, -0.25}


@pytest.mark.parametrize("prioritized", [False, True])
def test_wrap_around_keeps_the_newest_items(prioritized):
    with ReplayBuffer(5, (4,), prioritized=prioritized, fanout=2) as buf:
        assert buf.add(*transitions(3)).tolist() == [0, 1, 2]
        assert buf.add(*transitions(4, start=3)).tolist() == [3, 4, 0, 1]
        assert len(buf) == 5
        # slots now hold items 5, 6, 2, 3, 4: the two oldest (0, 1) were overwritten
        np.testing.assert_array_equal(buf._storage["actions"], [5, 6, 2, 3, 4])
        np.testing.assert_array_equal(buf._storage["obs"][:, 0], [5, 6, 2, 3, 4])
        np.testing.assert_array_equal(buf._storage["rewards"], [5, 6, 2, 3, 4])
        assert buf.add(*transitions(5, start=7)).tolist() == [2, 3, 4, 0, 1]
        np.testing.assert_array_equal(buf._storage["actions"], [10, 11, 7, 8, 9])
        assert set(buf.sample(200).actions.tolist()) == {7, 8, 9, 10, 11}


@pytest.mark.parametrize("prioritized", [False, True])
def test_compiled_and_converting_inserts_store_the_same(prioritized):
    """The collectors' exact arrays take the compiled insert; others are converted first: the same storage,
    slots and priorities either way, across a wrap-around, with float32 or bool ``terminated``."""
    with ReplayBuffer(8, (4,), prioritized=prioritized, fanout=2) as exact, \
            ReplayBuffer(8, (4,), prioritized=prioritized, fanout=2) as converted:
        for start, n in ((0, 5), (5, 6), (11, 1)):
            obs, actions, rewards, next_obs, terminated = transitions(n, start)
            flags = terminated.astype(np.float32) if start else terminated
            slots = exact.add(obs, actions, rewards, next_obs, flags)
            assert slots.tolist() == converted.add(obs.astype(np.float64), actions.tolist(), rewards.tolist(),
                                                   next_obs.astype(np.float64), terminated.tolist()).tolist()
        assert slots.tolist() == [3] and len(exact) == 8
        assert_same(snapshot(exact), snapshot(converted))


def test_new_items_get_the_running_max_priority():
    with ReplayBuffer(8, (4,), prioritized=True, alpha=0.5, eps=0.01) as buf:
        buf.add(*transitions(3))
        tree = buf._sampler.tree
        np.testing.assert_allclose(tree.leaves[:3], 1.0)          # nothing seen yet: priority 1
        buf.update_priorities(np.array([0, 1]), np.array([3.0, 0.2]))
        np.testing.assert_allclose(tree.leaves[:2], np.array([3.01, 0.21]) ** 0.5)
        buf.update_priorities(np.array([1]), np.array([0.5]))      # lower values do not reduce the max
        buf.add(*transitions(2, start=3))
        np.testing.assert_allclose(tree.leaves[3:5], 3.01**0.5)
        assert tree.min == pytest.approx(0.51**0.5)


def test_sampling_is_deterministic_for_a_seed():
    def draws(seed):
        with ReplayBuffer(1000, (4,), prioritized=True, seed=seed) as buf:
            buf.add(*transitions(500))
            buf.update_priorities(np.arange(500), np.linspace(0, 3, 500))
            return np.concatenate([buf.sample(64).indices for _ in range(5)])
    np.testing.assert_array_equal(draws(3), draws(3))
    assert not np.array_equal(draws(3), draws(4))


@pytest.mark.parametrize("prioritized", [False, True])
def test_state_dict_round_trip_restores_items_priorities_and_generator(prioritized):
    buf = ReplayBuffer(16, (4,), prioritized=prioritized, fanout=16, seed=5)
    buf.add(*transitions(12))
    buf.add(*transitions(8, start=12))                      # wrapped: cursor 4, full
    if prioritized:
        buf.update_priorities(np.array([3, 7, 9]), np.array([0.1, 4.0, 2.0]))
    buf.sample(8)
    restored = ReplayBuffer.load_state_dict(buf.state_dict())
    assert_same(snapshot(buf), snapshot(restored))
    a, b = buf.sample(32), restored.sample(32)
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_array_equal(a.weights, b.weights)
    restored.add(*transitions(1, start=100))
    buf.add(*transitions(1, start=100))
    assert_same(snapshot(buf), snapshot(restored))


def test_load_state_dict_rejects_something_else():
    with pytest.raises(ValueError, match="state"):
        ReplayBuffer.load_state_dict({"meta": {}})


@pytest.mark.parametrize("prioritized,fanout,depth", [(False, 2, 0), (True, 2, 20), (True, 16, 5)])
def test_workload_describes_the_kernel_for_the_cost_models(prioritized, fanout, depth):
    with ReplayBuffer(2**20, (4,), prioritized=prioritized, fanout=fanout) as buf:
        workload = buf.workload(256)
    # obs + next_obs (2 * 4 float32) + int64 action + float32 reward + float32 done
    assert workload == ReplayWorkload(capacity=2**20, batch=256, item_bytes=48, prioritized=prioritized,
                                      fanout=fanout)
    assert workload.tree_depth == depth


def test_ten_million_capacity_allocates_arrays_only():
    with ReplayBuffer(10_000_000, (4,), prioritized=True, fanout=16) as buf:
        buf.add(*transitions(256))
        assert len(buf.sample(256)) == 256
        assert buf.capacity == 10_000_000 and buf.prioritized


def test_closed_buffer_refuses_work():
    buf = ReplayBuffer(4, (4,))
    buf.close()
    buf.close()
    with pytest.raises(ValueError, match="closed"):
        buf.sample(1)
