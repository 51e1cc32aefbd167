"""Checkpoints keep every CUDA generator (fakes: no CUDA here). (The Ray backend's devices per component:
tests/runtime/test_ray_backend.py, which CI's Ray stage runs.)"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

import pearl_py as pearl
from pearl_py.errors import UserError
from pearl_py.platform.runtimes import CUDA
from pearl_py.runtime.parallel.checkpoint import (
    Checkpoint,
    Progress,
    load_checkpoint,
    save_checkpoint,
)


@pytest.fixture
def two_gpus(monkeypatch):
    """torch sees two CUDA devices whose generators are tensors kept here."""
    states = [torch.tensor([1, 2], dtype=torch.uint8), torch.tensor([3, 4], dtype=torch.uint8)]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: len(states))
    monkeypatch.setattr(torch.cuda, "get_rng_state_all", lambda: [s.clone() for s in states])
    monkeypatch.setattr(torch.cuda, "set_rng_state_all", lambda new: states.__setitem__(slice(None), list(new)))
    return states


def test_checkpoints_keep_and_restore_every_cuda_generator(two_gpus, tmp_path: Path):
    algo = pearl.DQN("CartPole-v1")
    kept = CUDA.rng_states()
    ckpt = Checkpoint(algorithm=algo.name, env=algo.env_id, config={}, seed=0, total_steps=10, learner={
        "gradient_steps": 0}, replay={}, progress=Progress(), torch_rng=torch.get_rng_state(), cuda_rng=kept)
    save_checkpoint(tmp_path, ckpt)
    two_gpus[:] = [torch.zeros(2, dtype=torch.uint8)] * 2  # the generators moved on
    CUDA.restore_rng_states(load_checkpoint(tmp_path).cuda_rng)
    assert [s.tolist() for s in two_gpus] == [[1, 2], [3, 4]]


def test_a_checkpoint_of_more_gpus_than_here_cannot_continue_exactly(two_gpus):
    with pytest.raises(UserError, match="generators of 3 CUDA device.*this machine has 2"):
        CUDA.restore_rng_states([torch.zeros(2, dtype=torch.uint8)] * 3)


def test_without_cuda_nothing_is_kept_and_old_checkpoints_load(tmp_path: Path):
    if not torch.cuda.is_available():
        assert CUDA.rng_states() == []
    CUDA.restore_rng_states([])  # an old checkpoint, or one written without CUDA
    fields = {f.name for f in dataclasses.fields(Checkpoint)}
    assert "cuda_rng" in fields and Checkpoint.__dataclass_fields__["cuda_rng"].default_factory() == []
