"""FrameReplayBuffer: uint8 frames stored once, samples equal to what was added, stale transitions skipped."""
from __future__ import annotations

import numpy as np
import pytest

from pearl_py.replay import ReplayBuffer
from pearl_py.replay.frames import FrameReplayBuffer, stored_obs_bytes
from pearl_py.replay.restore import attach_replay, replay_from_state


def episode(rng, steps: int, shape=(84, 84)) -> np.ndarray:
    """The frames an env shows in an episode of ``steps`` steps with 4 frames stacked (3 padding + ``steps + 1``)."""
    frames = rng.integers(0, 256, (steps + 1, *shape), dtype=np.uint8)
    return np.concatenate([np.repeat(frames[:1], 3, axis=0), frames])     # reset: the first frame repeated


def stacks(frames: np.ndarray, t: int) -> tuple[np.ndarray, np.ndarray]:
    return frames[t:t + 4], frames[t + 1:t + 5]


def test_stacked_frames_are_stored_once_per_step_and_sampled_back_exactly():
    rng = np.random.default_rng(0)
    envs = [episode(rng, 30), episode(rng, 30)]
    buf = FrameReplayBuffer(capacity=100, obs_shape=(4, 84, 84), frame_stack=4, seed=1)
    for t in range(30):
        obs = np.stack([stacks(e, t)[0] for e in envs])
        nxt = np.stack([stacks(e, t)[1] for e in envs])
        buf.add(obs, np.array([t, -t]), np.array([1.0, 2.0]), nxt, np.array([False, t == 29]))
    assert buf.frames_written == 2 * 31            # each env: its first frame once, then one frame per step
    assert len(buf) == buf.live() == 60
    batch = buf.sample(64)
    for j, slot in enumerate(batch.indices):
        t, e = divmod(int(slot), 2)
        obs, nxt = stacks(envs[e], t)
        assert np.array_equal(batch.obs[j], obs) and np.array_equal(batch.next_obs[j], nxt)
        assert batch.actions[j] == (t if e == 0 else -t) and batch.rewards[j] == 1.0 + e
        assert batch.dones[j] == float(e == 1 and t == 29)
    assert batch.obs.dtype == np.uint8 and np.all(batch.weights == 1)


def test_a_stream_finds_its_frames_by_order_without_the_table():
    """Each row's next obs starts where its last next_obs ended: those frames are found by comparison with the
    previous call's, so a one-entry table (every lookup a collision) stores no frame twice."""
    rng = np.random.default_rng(4)
    envs = [episode(rng, 20), episode(rng, 20)]
    buf = FrameReplayBuffer(capacity=50, obs_shape=(4, 84, 84), frame_stack=4, seed=0, table_size=1)
    for t in range(20):
        buf.add(np.stack([stacks(e, t)[0] for e in envs]), np.array([0, 1]), np.zeros(2),
                np.stack([stacks(e, t)[1] for e in envs]), np.array([False, False]))
    assert buf.frames_written == 2 * 21
    batch = buf.sample(40)
    assert all(np.array_equal(batch.obs[j], stacks(envs[int(i) % 2], int(i) // 2)[0]) and
               np.array_equal(batch.next_obs[j], stacks(envs[int(i) % 2], int(i) // 2)[1])
               for j, i in enumerate(batch.indices))


def test_whole_observations_without_stacking_share_next_and_following_obs():
    rng = np.random.default_rng(1)
    frames = rng.integers(0, 256, (11, 4, 10, 10), dtype=np.uint8)
    buf = FrameReplayBuffer(capacity=50, obs_shape=(4, 10, 10), seed=0)
    for t in range(10):
        buf.add(frames[t:t + 1], [1], [0.0], frames[t + 1:t + 2], [False])
    assert buf.frames_written == 11                 # not 20: next_obs of t is obs of t + 1
    batch = buf.sample(20)
    assert all(np.array_equal(batch.obs[j], frames[i]) and np.array_equal(batch.next_obs[j], frames[i + 1])
               for j, i in enumerate(batch.indices))


def test_when_frames_outrun_the_ring_stale_transitions_are_never_sampled():
    rng = np.random.default_rng(2)
    buf = FrameReplayBuffer(capacity=100, obs_shape=(2, 6, 6), seed=0, frame_capacity=120)
    added = {}
    for t in range(300):                             # one-step episodes: two new frames per transition
        obs, nxt = rng.integers(0, 256, (2, 1, 2, 6, 6), dtype=np.uint8)
        slot = int(buf.add(obs, [0], [float(t)], nxt, [True])[0])
        added[slot] = (obs[0], nxt[0])
    assert len(buf) == 100 and buf.live() == 60      # the ring holds the last 120 frames: 60 transitions
    batch = buf.sample(500)
    assert set(batch.rewards.tolist()) <= set(range(240, 300))
    assert all(np.array_equal(batch.obs[j], added[int(i)][0]) and np.array_equal(batch.next_obs[j], added[int(i)][1])
               for j, i in enumerate(batch.indices))


def test_sampling_is_deterministic_for_a_seed_and_state_dicts_round_trip():
    rng = np.random.default_rng(3)
    frames = rng.integers(0, 256, (40, 3, 8, 8), dtype=np.uint8)

    def filled(seed):
        buf = FrameReplayBuffer(capacity=30, obs_shape=(3, 8, 8), seed=seed)
        for t in range(39):
            buf.add(frames[t:t + 1], [t % 3], [float(t)], frames[t + 1:t + 2], [False])
        return buf

    a, b = filled(7), filled(7)
    assert np.array_equal(a.sample(16).indices, b.sample(16).indices)
    restored = replay_from_state(a.state_dict())
    assert isinstance(restored, FrameReplayBuffer)
    x, y = a.sample(16), restored.sample(16)
    assert np.array_equal(x.indices, y.indices) and np.array_equal(x.obs, y.obs)


def test_another_process_attaches_by_name_and_sees_the_frames():
    with FrameReplayBuffer(capacity=20, obs_shape=(2, 4, 4), seed=0, shared_name="pearl_test_frames") as owner:
        obs = np.full((1, 2, 4, 4), 7, np.uint8)
        owner.add(obs, [2], [1.0], obs + 1, [False])
        view = attach_replay("pearl_test_frames", seed=1)
        assert isinstance(view, FrameReplayBuffer) and len(view) == 1
        assert np.array_equal(view.sample(3).next_obs[0], obs[0] + 1)
        view.close()


def test_bad_input_is_refused_naming_the_argument():
    buf = FrameReplayBuffer(capacity=10, obs_shape=(4, 84, 84), frame_stack=4)
    with pytest.raises(ValueError, match="obs: dtype float32 cannot be stored as uint8"):
        buf.add(np.zeros((1, 4, 84, 84), np.float32), [0], [0.0], np.zeros((1, 4, 84, 84), np.float32), [False])
    with pytest.raises(ValueError, match="batch_size: cannot sample from an empty buffer"):
        buf.sample(4)
    with pytest.raises(ValueError, match=r"frame_stack: 3 frames need obs_shape \(k \* 3, \.\.\.\)"):
        FrameReplayBuffer(capacity=10, obs_shape=(4, 84, 84), frame_stack=3)
    with pytest.raises(ValueError, match="samples uniformly"):
        buf.update_priorities([0], [1.0])


def test_footprint_is_a_fraction_of_storing_both_observations():
    atari = stored_obs_bytes((4, 84, 84), 4, 100_000)
    assert atari / (2 * 4 * 84 * 84) < 0.16               # 1.25 frames of 7 KB against 8 frames
    buf = FrameReplayBuffer(capacity=100_000, obs_shape=(4, 10, 10))     # MinAtar: no stack, one frame each
    per_transition = buf.nbytes / 100_000
    assert per_transition < 0.7 * ReplayBuffer(8, (4, 10, 10), obs_dtype=np.uint8).workload(1).item_bytes
    assert per_transition == pytest.approx(stored_obs_bytes((4, 10, 10), 1, 100_000) + 8 + 8, abs=2)
    buf.close()


def test_replay_buffer_stores_uint8_observations_of_any_shape():
    with ReplayBuffer(capacity=8, obs_shape=(2, 3, 3), obs_dtype=np.uint8, seed=0) as buf:
        obs = np.arange(18, dtype=np.uint8).reshape(1, 2, 3, 3)
        buf.add(obs, [1], [0.5], obs, [False])
        batch = buf.sample(2)
        assert batch.obs.dtype == np.uint8 and np.array_equal(batch.obs[0], obs[0])
        assert buf.workload(1).item_bytes == 2 * 18 + 8 + 4 + 4
        with pytest.raises(ValueError, match="obs: dtype float32 cannot be stored as uint8"):
            buf.add(obs.astype(np.float32), [1], [0.5], obs, [False])


def test_torch_replay_keeps_uint8_frames_on_the_device():
    from pearl_py.replay import TorchReplayBuffer

    buf = TorchReplayBuffer(capacity=8, obs_shape=(2, 3, 3), obs_dtype=np.uint8, seed=0, device="cpu")
    obs = np.full((2, 2, 3, 3), 200, np.uint8)
    buf.add(obs, [0, 1], [0.0, 1.0], obs, [False, True])
    batch = buf.sample(4)
    assert str(batch.obs.dtype) == "torch.uint8" and int(batch.next_obs.max()) == 200
    assert buf.workload(1).item_bytes == 2 * 18 + 8 + 4 + 4
    restored = ReplayBuffer.load_state_dict(buf.state_dict())
    assert restored.sample(1).obs.dtype == np.uint8


def test_a_collectors_arrays_with_bad_values_are_refused_by_name_and_store_nothing():
    buf = FrameReplayBuffer(capacity=10, obs_shape=(4, 6, 6), frame_stack=4)
    obs = np.zeros((1, 4, 6, 6), np.uint8)
    with pytest.raises(ValueError, match="rewards: contains NaN"):
        buf.add(obs, np.array([1]), np.array([np.nan], np.float32), obs, np.array([False]))
    with pytest.raises(ValueError, match="terminated: expected booleans or 0/1"):
        buf.add(obs, np.array([1]), np.array([0.0], np.float32), obs, np.array([2.0], np.float32))
    assert len(buf) == 0
    assert buf.add(obs, np.array([1]), np.array([0.5], np.float32), obs, np.array([1.0], np.float32)).tolist() == [0]
    assert buf.sample(1).rewards.tolist() == [0.5] and buf.sample(1).dones.tolist() == [1.0]
