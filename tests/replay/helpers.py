"""Shared helpers of the replay tests: transition batches, exact buffer snapshots (numpy and torch buffers), and
``rejects``: a call refused with a ValueError naming what is wrong, the buffer left exactly as it was."""
from __future__ import annotations

from typing import Callable

import numpy as np
import pytest
import torch

from pearl_py.replay import ReplayBuffer
from pearl_py.replay.torch_buffer import TorchReplayBuffer

STATE_KEYS = ("meta", "counters", "obs", "actions", "rewards", "next_obs", "dones")


def transitions(n: int, start: int = 0, obs_dim: int = 4) -> tuple[np.ndarray, ...]:
    """``n`` transitions whose every field encodes its sequence number ``start + k``."""
    ids = np.arange(start, start + n)
    obs = np.repeat(ids[:, None], obs_dim, axis=1).astype(np.float32)
    return obs, ids.astype(np.int64), ids.astype(np.float32), obs + 0.5, ids % 2 == 1


def snapshot(buf: ReplayBuffer | TorchReplayBuffer) -> dict:
    """Everything a call could change. Numpy buffer: all storage arrays (trees included) and the generator state;
    torch buffer: the checkpoint (items, priorities: all it holds besides its zeros, generators)."""
    if isinstance(buf, ReplayBuffer):
        return {"arrays": {f.name: buf._storage[f.name].copy() for f in buf._storage.layout.fields},
                "rng": buf._stream.state}
    return buf.state_dict()


def assert_same_state(a: dict, b: dict, keys=STATE_KEYS, priorities_rtol: float | None = 0.0) -> None:
    """Equal checkpoint entries; priorities exactly (``rtol`` 0), within ``priorities_rtol``, or not compared."""
    for key in keys:
        if isinstance(a[key], np.ndarray):
            assert a[key].dtype == np.asarray(b[key]).dtype, key
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)
        else:
            assert a[key] == b[key], key
    if priorities_rtol is not None and "priorities" in a:
        np.testing.assert_allclose(a["priorities"], b["priorities"], rtol=priorities_rtol, atol=0)
        assert a["max_seen"] == pytest.approx(b["max_seen"], rel=priorities_rtol, abs=0)


def assert_same(before: dict, after: dict) -> None:
    """Two snapshots of one buffer equal to the bit."""
    assert before["rng"] == after["rng"]
    if "arrays" in before:
        assert before["arrays"].keys() == after["arrays"].keys()
        for name, array in before["arrays"].items():
            np.testing.assert_array_equal(array, after["arrays"][name], err_msg=name)
        return
    assert_same_state(before, after, STATE_KEYS + ("torch_rng",))
    for a, b in zip(before.get("tree", []), after.get("tree", [])):
        assert torch.equal(a, b)


def rejects(buf: ReplayBuffer | TorchReplayBuffer, call: Callable[[], object], name: str, detail: str) -> None:
    """``call`` raises a ValueError matching ``name`` whose text holds ``detail``, and leaves ``buf`` as it was."""
    before = snapshot(buf)
    with pytest.raises(ValueError, match=name) as error:
        call()
    assert detail in str(error.value)
    assert_same(before, snapshot(buf))
