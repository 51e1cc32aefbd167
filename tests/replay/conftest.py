"""Fixtures of the replay tests: the torch devices the torch buffer runs on."""
from __future__ import annotations

import pytest
import torch

CUDA = pytest.param("cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs CUDA: torch.cuda.is_available() is False on this machine")])


@pytest.fixture(params=["cpu", CUDA])
def device(request) -> str:
    """The CPU torch device, and CUDA (marked ``gpu``, skipped where absent)."""
    return request.param
