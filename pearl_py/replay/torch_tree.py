"""The priorities on a torch device: one flat float64 tensor, sampled through its prefix sums.

The torch buffer's counterpart of :class:`~pearl_py.replay.segment_tree.PriorityTree`,
built for a GPU's cost, where every torch call is a kernel launch (~14 us measured on an
H200, far more than the work of a batch): no tree, so a call is a constant number of
launches whatever the capacity, and nothing is read back to the host.

- ``set``: one scatter (after a stable sort that makes the last write to a slot win);
- ``find``: one ``cumsum`` over the items' priorities and one ``searchsorted`` of the
  targets in it; ``total`` is that prefix sum's last element, ``min`` one reduction.

A sample so reads the ``size`` priorities twice (``O(C)`` bytes: 16 MB at ``C = 2^20``,
a few microseconds at a GPU's bandwidth) instead of descending a tree level by level in
``11`` launches per level. Sums are recomputed from the leaves at every call, never
adjusted by a delta, so nothing drifts.

Example::

    >>> prios = TorchPriorities(capacity=5, device=torch.device("cpu"))
    >>> prios.fill(0, 4, torch.tensor(1.0, dtype=torch.float64))          # four items of priority 1
    >>> prios.set(torch.tensor([0, 3, 3]), torch.tensor([1.0, 9.0, 2.0], dtype=torch.float64))
    >>> running = prios.running(size=4)
    >>> float(running[-1]), float(prios.min(size=4))                      # the last write to slot 3 won
    (5.0, 1.0)
    >>> prios.find(running, torch.tensor([0.5, 4.5], dtype=torch.float64)).tolist()
    [0, 3]
"""
from __future__ import annotations

import math

import torch


class TorchPriorities:
    """The priorities of ``capacity`` slots in a float64 tensor on ``device``; the first ``size`` are items."""

    def __init__(self, capacity: int, device: torch.device) -> None:
        self.leaves = torch.zeros(capacity, dtype=torch.float64, device=device)
        """The priorities (0 for slots not yet written)."""
        self._below = torch.tensor(-math.inf, dtype=torch.float64, device=device)   # nextafter's direction

    def set(self, indices: torch.Tensor, values: torch.Tensor) -> None:
        """``leaves[indices] = values`` in order (the last write to a slot wins).

        ``indices`` (int64) must already be items (callers validate). Repeated slots are
        resolved without a loop: a stable sort puts each slot's writes in call order, and
        every write of a slot takes the value of its last one, so the one scatter writes
        equal values wherever it writes a slot more than once (in no defined order on a GPU).
        """
        slots, order = torch.sort(indices, stable=True)
        last = torch.searchsorted(slots, slots, right=True) - 1        # the end of each run of equal slots
        self.leaves.index_put_((slots,), values[order[last]])

    def fill(self, start: int, stop: int, value: torch.Tensor) -> None:
        """Set the slots ``[start, stop)`` to the 0-d tensor ``value``."""
        self.leaves[start:stop].fill_(value)

    def running(self, size: int) -> torch.Tensor:
        """The prefix sums of the first ``size`` priorities (``running[-1]`` is their total), one ``cumsum``."""
        return self.leaves[:size].cumsum(0)

    def min(self, size: int) -> torch.Tensor:
        """The smallest priority of the first ``size`` items (a 0-d tensor on the device)."""
        return self.leaves[:size].amin()

    def find(self, running: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Item ``i`` (int64) for each float64 target ``u`` with ``running[i-1] <= u < running[i]``.

        A target at or above the total (rounding, or a caller's target >= the total) is first
        moved to the largest double below it, which selects the last positive item: an item of
        priority 0 (``running[i] == running[i-1]``) is never returned while the total is positive.
        """
        u = torch.minimum(targets, running[-1].nextafter(self._below))
        return torch.searchsorted(running, u, right=True)
