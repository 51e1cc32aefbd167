"""Shared helpers of the replay tests: transition batches and exact buffer snapshots."""
from __future__ import annotations

import numpy as np

from pearl_py.replay import ReplayBuffer


def transitions(n: int, start: int = 0, obs_dim: int = 4) -> tuple[np.ndarray, ...]:
    """``n`` transitions whose every field encodes its sequence number ``start + k``."""
    ids = np.arange(start, start + n)
    obs = np.repeat(ids[:, None], obs_dim, axis=1).astype(np.float32)
    return obs, ids.astype(np.int64), ids.astype(np.float32), obs + 0.5, ids % 2 == 1


def snapshot(buf: ReplayBuffer) -> dict:
    """Everything a call could change: all storage arrays (trees included) and the generator state."""
    arrays = {f.name: buf._storage[f.name].copy() for f in buf._storage.layout.fields}
    return {"arrays": arrays, "rng": buf._stream.state}


def assert_same(before: dict, after: dict) -> None:
    assert before["rng"] == after["rng"]
    assert before["arrays"].keys() == after["arrays"].keys()
    for name, array in before["arrays"].items():
        np.testing.assert_array_equal(array, after["arrays"][name], err_msg=name)
