"""A numpy batch goes to an accelerator in one transfer from one pinned staging buffer, asynchronously (no CUDA
here: the upload's target is torch's ``meta`` device and pinning is recorded, not done; the fakes are in
conftest.py)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import torch

from pearl_py.algorithms.off_policy.learner import TensorBatch


def _sample() -> SimpleNamespace:
    rows = 4
    return SimpleNamespace(obs=np.zeros((rows, 3), np.float32), actions=np.zeros(rows, np.int64),
                           rewards=np.zeros(rows, np.float32), next_obs=np.zeros((rows, 3), np.float32),
                           dones=np.zeros(rows, np.float32), weights=np.ones(rows, np.float32))


def test_a_host_batch_is_staged_in_one_pinned_buffer_and_uploaded_once_without_blocking(transfers):
    batch = TensorBatch.from_numpy(_sample(), torch.device("meta"))
    assert transfers == ["pinned staging", "to non_blocking=True"] and batch.obs.device.type == "meta"
    assert (batch.obs.shape, batch.actions.dtype, batch.weights.shape) == ((4, 3), torch.int64, (4,))
    transfers.clear()
    host = _sample()
    batch = TensorBatch.from_numpy(host, torch.device("cpu"))
    assert transfers == [] and np.shares_memory(batch.obs.numpy(), host.obs)   # on the CPU: the arrays as they are
