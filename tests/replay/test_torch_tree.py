"""TorchPriorities agrees with the numpy PriorityTree: leaves, total, minimum and the proportional draw.

The prefix sums add left to right where the tree adds group by group, so totals agree to
rounding, and a draw may differ only for a target within rounding of a boundary.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from pearl_py.replay.segment_tree import PriorityTree
from pearl_py.replay.torch_tree import TorchPriorities


@pytest.mark.parametrize("capacity", [5, 100, 1000, 4096, 17])
def test_updates_and_draws_match_the_numpy_tree(device, capacity):
    rng = np.random.default_rng(capacity)
    size = capacity - capacity // 3
    reference = PriorityTree(capacity, 16)
    prios = TorchPriorities(capacity, torch.device(device))
    reference.fill(0, size, 1.0, size)
    prios.fill(0, size, torch.tensor(1.0, dtype=torch.float64, device=device))
    for _ in range(20):
        slots, values = rng.integers(0, size, 50), rng.exponential(1.0, 50)
        values[::7] = 0.0
        reference.update(slots, values, size)
        prios.set(torch.from_numpy(slots).to(device), torch.from_numpy(values).to(device))
    np.testing.assert_array_equal(prios.leaves.cpu().numpy(), reference.leaves[:capacity])
    assert float(prios.min(size)) == reference.min
    running = prios.running(size)
    assert float(running[-1]) == pytest.approx(reference.total, rel=1e-13)
    targets = rng.uniform(0.0, reference.total, 10_000)
    targets[:3] = [reference.total, np.nextafter(reference.total, 0.0), 0.0]
    found = prios.find(running, torch.from_numpy(targets).to(device)).cpu().numpy()
    assert np.mean(found == reference.find(targets)) > 0.999
    assert (reference.leaves[found] > 0).all() and found.max() < size   # never an item of priority 0


def test_the_last_of_repeated_slots_wins(device):
    prios = TorchPriorities(8, torch.device(device))
    prios.set(torch.tensor([3, 1, 3, 3, 1], device=device),
              torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0], dtype=torch.float64, device=device))
    assert prios.leaves.cpu().tolist() == [0, 5, 0, 4, 0, 0, 0, 0]
