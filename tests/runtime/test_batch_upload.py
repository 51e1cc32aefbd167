"""A numpy batch goes to an accelerator through pinned host memory, asynchronously (no CUDA here: the upload's
target is torch's ``meta`` device and pinning is recorded, not done)."""
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


def test_a_host_batch_is_pinned_then_uploaded_without_blocking(monkeypatch):
    calls: list[str] = []
    to = torch.Tensor.to

    def pin_memory(self):
        calls.append("pin")
        return self

    def recording_to(self, *args, **kwargs):
        calls.append(f"to non_blocking={kwargs.get('non_blocking', False)}")
        return to(self, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "pin_memory", pin_memory)
    monkeypatch.setattr(torch.Tensor, "to", recording_to)
    batch = TensorBatch.from_numpy(_sample(), torch.device("meta"))
    assert calls == ["pin", "to non_blocking=True"] * 6 and batch.obs.device.type == "meta"
    calls.clear()
    host = _sample()
    batch = TensorBatch.from_numpy(host, torch.device("cpu"))
    assert calls == [] and np.shares_memory(batch.obs.numpy(), host.obs)   # on the CPU: the arrays as they are
