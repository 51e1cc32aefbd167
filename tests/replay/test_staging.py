"""Host arrays reach a device through one staging buffer and one transfer (pinned and ``non_blocking`` for an
accelerator, recorded by the ``transfers`` fake on torch's ``meta`` device), and come back with their values,
dtypes and shapes; a torch replay insert (five fields) and a priority update from host arrays (two) are each one
such upload, not one pinned copy per array."""
from __future__ import annotations

import numpy as np
import torch

from pearl_py.replay import TorchReplayBuffer, torch_buffer
from pearl_py.replay.staging import upload


def arrays() -> list[np.ndarray]:
    """Every stored dtype, with sizes that are not multiples of 8 bytes (each next array must still be aligned)."""
    rng = np.random.default_rng(0)
    return [rng.integers(0, 255, size=(3, 1, 3), dtype=np.uint8), rng.normal(size=(3, 2)).astype(np.float32),
            np.arange(3, dtype=np.int64), np.array([True, False, True]), rng.normal(size=3), np.zeros((0, 2))]


def test_arrays_come_back_from_one_staging_buffer_with_their_values_dtypes_and_shapes():
    host = arrays()
    for array, tensor in zip(host, upload(host, torch.device("cpu")), strict=True):
        assert tensor.numpy().dtype == array.dtype and tensor.shape == array.shape
        np.testing.assert_array_equal(tensor.numpy(), array)


def test_an_accelerator_upload_is_one_pinned_staging_buffer_and_one_transfer_that_does_not_wait(transfers):
    on_device = upload(arrays(), torch.device("meta"))
    assert transfers == ["pinned staging", "to non_blocking=True"]
    assert [t.device.type for t in on_device] == ["meta"] * 6
    assert [(t.dtype, tuple(t.shape)) for t in on_device] == [(torch.uint8, (3, 1, 3)), (torch.float32, (3, 2)),
                                                               (torch.int64, (3,)), (torch.bool, (3,)),
                                                               (torch.float64, (3,)), (torch.float64, (0, 2))]


def test_a_torch_replay_insert_is_one_upload_of_its_five_fields_even_when_it_wraps(monkeypatch):
    uploads = []

    def recording_upload(host, device):
        uploads.append([a.shape for a in host])
        return upload(host, device)

    monkeypatch.setattr(torch_buffer, "upload", recording_upload)
    with TorchReplayBuffer(5, (2,), prioritized=True, seed=0) as buf:
        obs = np.arange(8, dtype=np.float32).reshape(4, 2)
        buf.add(obs, np.arange(4), np.ones(4), obs + 1, np.zeros(4, bool))
        buf.add(obs[:3] + 10, np.arange(3) + 4, np.ones(3), obs[:3] + 11, np.ones(3, bool))   # wraps: two runs
        assert uploads == [[(4, 2), (4,), (4,), (4, 2), (4,)], [(3, 2), (3,), (3,), (3, 2), (3,)]]
        state = buf.state_dict()
    np.testing.assert_array_equal(state["obs"][:, 0], [12, 14, 4, 6, 10])      # the newest five, at their slots
    np.testing.assert_array_equal(state["actions"], [5, 6, 2, 3, 4])
    np.testing.assert_array_equal(state["dones"], [1, 1, 0, 0, 1])


def test_a_priority_update_from_host_arrays_is_one_upload_of_indices_and_priorities(monkeypatch):
    uploads = []

    def recording_upload(host, device):
        uploads.append([(a.dtype, a.shape) for a in host])
        return upload(host, device)

    monkeypatch.setattr(torch_buffer, "upload", recording_upload)
    with TorchReplayBuffer(4, (2,), prioritized=True, seed=0, alpha=1.0, eps=0.5) as buf:
        obs = np.zeros((4, 2), np.float32)
        buf.add(obs, np.arange(4), np.ones(4), obs, np.zeros(4, bool))
        uploads.clear()
        buf.update_priorities(np.array([2, 0], np.int32), np.array([3.0, 0.5]))
        assert uploads == [[(np.dtype(np.int32), (2,)), (np.dtype(np.float64), (2,))]]
        buf.update_priorities(torch.tensor([1]), np.array([4.0]))       # a tensor stays where it is
        assert uploads[1:] == [[(np.dtype(np.float64), (1,))]]
        np.testing.assert_array_equal(buf.state_dict()["priorities"], [1.0, 4.5, 3.5, 1.0])
