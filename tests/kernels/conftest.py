"""Kernel tests run torch on one thread, as the executors do (small matmuls thrash with more on a busy machine)."""
from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def one_torch_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
