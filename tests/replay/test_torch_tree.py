"""TorchPriorityTree agrees with the numpy PriorityTree: leaves, sums, minima and the descent.

On the CPU device a group's running sums are the same left-to-right float64 additions as
the numpy tree's, so totals and descents agree bit for bit; on CUDA the scan may add in
another order, so there they agree to rounding.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from pearl_py.replay.segment_tree import PriorityTree
from pearl_py.replay.torch_tree import TorchPriorityTree


@pytest.mark.parametrize("capacity,fanout", [(5, 2), (100, 16), (1000, 3), (4096, 16), (16, 16), (17, 16)])
def test_updates_and_descent_match_the_numpy_tree(device, capacity, fanout):
    exact = device == "cpu"
    rng = np.random.default_rng(capacity)
    size = capacity - capacity // 3
    reference = PriorityTree(capacity, fanout)
    tree = TorchPriorityTree(capacity, fanout, torch.device(device))
    reference.fill(0, size, 1.0, size)
    tree.fill(0, size, torch.tensor(1.0, dtype=torch.float64, device=device), size)
    for _ in range(20):
        slots, values = rng.integers(0, size, 50), rng.exponential(1.0, 50)
        values[::7] = 0.0
        reference.update(slots, values, size)
        tree.set(torch.from_numpy(slots).to(device), torch.from_numpy(values).to(device), size)
    np.testing.assert_array_equal(tree.leaves.cpu().numpy(), reference.leaves)
    assert float(tree.min) == reference.min
    assert float(tree.total) == pytest.approx(reference.total, rel=0 if exact else 1e-13)
    targets = rng.uniform(0.0, reference.total, 10_000)
    targets[:3] = [reference.total, np.nextafter(reference.total, 0.0), 0.0]
    found = tree.find(torch.from_numpy(targets).to(device)).cpu().numpy()
    expected = reference.find(targets)
    if exact:
        np.testing.assert_array_equal(found, expected)
    else:
        assert np.mean(found == expected) > 0.999
    assert (reference.leaves[found] > 0).all() and found.max() < size


def test_rebuild_gives_the_tree_the_updates_built(device):
    rng = np.random.default_rng(1)
    tree = TorchPriorityTree(300, 4, torch.device(device))
    tree.fill(0, 250, torch.tensor(2.0, dtype=torch.float64, device=device), 250)
    tree.set(torch.from_numpy(rng.integers(0, 250, 100)).to(device),
             torch.from_numpy(rng.exponential(1.0, 100)).to(device), 250)
    rebuilt = TorchPriorityTree(300, 4, torch.device(device))
    rebuilt.leaves.copy_(tree.leaves)
    rebuilt.rebuild(250)
    for a, b in zip(tree.sums + tree.mins, rebuilt.sums + rebuilt.mins):
        assert torch.equal(a, b)
