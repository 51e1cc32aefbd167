"""The priority tree on a torch device: sums and minima of the priorities, each operation vectorized over a batch.

The same n-ary tree as :class:`~pearl_py.replay.segment_tree.PriorityTree` (the level
sizes of :func:`~pearl_py.replay.segment_tree.level_sizes`: every level below the root a
multiple of ``fanout``, so ``level.view(-1, fanout)`` lists its groups of siblings, and
row ``g`` of that view are the children of node ``g`` one level up), held in two flat
``float64`` tensors on one device: ``sums`` (every level, root first; the leaves, its
last level, are the priorities) and ``mins`` (the inner levels). Only the first ``size``
leaves are items (the slots a ring has written); the others are 0 and never count for
the minimum.

Every operation works on whole batches, level by level, in a fixed number of torch
calls per level and without reading anything back to the host, so it queues on a GPU
without waiting: an update writes the leaves and recomputes the parents of all changed
nodes of a level at once (gathering their groups of children, ``B x fanout``); a
descent moves all targets one level down at once. Work per call is
``O(B * fanout * depth)`` with ``depth = ceil(log_fanout(capacity))``; the number of
torch calls is ``O(depth)``.

A parent's sum is the last of its children's running sums (``cumsum``), the very
operation the descent applies to the same children, so a group's total as the descent
sees it is the parent's stored value; inner nodes are always recomputed from their
children, never adjusted by a delta, so nothing drifts.

Example::

    >>> tree = TorchPriorityTree(capacity=5, fanout=2, device=torch.device("cpu"))
    >>> tree.fill(0, 4, torch.tensor(1.0, dtype=torch.float64), size=4)      # four items of priority 1
    >>> tree.set(torch.tensor([0, 3, 3]), torch.tensor([1.0, 9.0, 2.0], dtype=torch.float64), size=4)
    >>> float(tree.total), float(tree.min)                                  # the last write to slot 3 won
    (5.0, 1.0)
    >>> tree.find(torch.tensor([0.5, 4.5], dtype=torch.float64)).tolist()    # prefix sums 0.5 and 4.5
    [0, 3]
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from pearl_py.replay.segment_tree import level_sizes

Nodes = torch.Tensor | slice
"""Nodes of one level: an int64 tensor of positions (repeats allowed) or a contiguous range."""


class TorchPriorityTree:
    """Sums and minima of the priorities of the first ``size`` leaves, in float64 tensors on ``device``."""

    def __init__(self, capacity: int, fanout: int, device: torch.device) -> None:
        self.capacity = capacity
        self.fanout = fanout
        self.device = device
        sizes = level_sizes(capacity, fanout)
        self.depth = len(sizes) - 1
        sums = torch.zeros(sum(sizes), dtype=torch.float64, device=device)
        mins = torch.full((sum(sizes[:-1]),), math.inf, dtype=torch.float64, device=device)
        self.sums = list(sums.split(sizes))
        """Every level's sums, root first: ``sums[d][k]`` is node ``k`` of level ``d``."""
        self.mins = list(mins.split(sizes[:-1]))
        """The inner levels' minima over their items, root first (``+inf`` where there are none)."""
        self.leaves = self.sums[-1]
        """The priorities (``capacity`` items, padded with zeros to a multiple of ``fanout``)."""
        self._offsets = torch.arange(fanout, device=device)
        self._below = torch.tensor(-math.inf, dtype=torch.float64, device=device)

    @property
    def total(self) -> torch.Tensor:
        """The sum of all priorities (the root), a 0-d tensor on the device."""
        return self.sums[0][0]

    @property
    def min(self) -> torch.Tensor:
        """The smallest priority of an item (``+inf`` before any), a 0-d tensor on the device."""
        return self.mins[0][0]

    def set(self, indices: torch.Tensor, values: torch.Tensor, size: int) -> None:
        """``leaves[indices] = values`` in order (the last write to a slot wins), then repair the ancestors.

        ``indices`` (int64) must already be items (``0 <= i < size``; callers validate).
        Repeated slots are resolved without a loop: a stable sort puts each slot's writes
        in call order, and every write of a slot takes the value of its last one, so the
        scatter writes equal values wherever it writes a slot more than once.
        """
        slots, order = torch.sort(indices, stable=True)
        last = torch.searchsorted(slots, slots, right=True) - 1        # the end of each run of equal slots
        self.leaves[slots] = values[order[last]]
        self._repair(slots, size)

    def fill(self, start: int, stop: int, value: torch.Tensor, size: int) -> None:
        """Set the leaves ``[start, stop)`` (``stop <= size``) to the 0-d tensor ``value`` and repair the ancestors."""
        self.leaves[start:stop].fill_(value)
        self._repair(slice(start, stop), size)

    def rebuild(self, size: int) -> None:
        """Recompute every inner node from the leaves (after loading leaves in bulk)."""
        self._repair(slice(0, self.leaves.numel()), size)

    def _repair(self, changed: Nodes, size: int) -> None:
        """Recompute the ancestors of the ``changed`` leaves, level by level bottom up.

        Each level gathers the groups of children of the changed nodes' parents (one row
        each; a parent named more than once gets equal rows, so its repeated writes agree)
        and writes their sums and minima into the level above.
        """
        f = self.fanout
        for level in range(self.depth, 0, -1):
            parents = _parents(changed, f)
            children = self.sums[level].view(-1, f)[parents]
            self.sums[level - 1][parents] = children.cumsum(1)[:, -1]
            if level == self.depth:
                lows = self._item_minima(children, parents, size)
            else:
                lows = self.mins[level].view(-1, f)[parents].amin(1)
            self.mins[level - 1][parents] = lows
            changed = parents

    def _item_minima(self, leaves: torch.Tensor, parents: Nodes, size: int) -> torch.Tensor:
        """Each row's minimum over its leaves that are items (position below ``size``); ``+inf`` for none."""
        if size == self.leaves.numel():                    # every leaf is an item: no mask
            return leaves.amin(1)
        f = self.fanout
        if isinstance(parents, slice):
            positions = torch.arange(parents.start * f, parents.stop * f, device=self.device).view(-1, f)
        else:
            positions = parents[:, None] * f + self._offsets
        return leaves.masked_fill(positions >= size, math.inf).amin(1)

    def find(self, targets: torch.Tensor) -> torch.Tensor:
        """Leaf ``i`` (int64) for each float64 target ``u`` with ``sum(leaves[:i]) <= u < sum(leaves[:i+1])``.

        All targets descend together. In a group, the child is the number of running
        sums ``<= u``, and the running sum before it is subtracted from ``u``. A target at
        or above its group's total (rounding, or a caller's target >= the root) is first
        moved to the largest double below that total, which selects the group's last
        positive child: a leaf of value 0 is never returned while the total is positive.
        """
        f = self.fanout
        u = targets
        nodes = torch.zeros(targets.shape, dtype=torch.int64, device=self.device)
        for level in range(1, self.depth + 1):
            running = self.sums[level].view(-1, f)[nodes].cumsum(1)
            u = torch.minimum(u, running[:, -1].nextafter(self._below))
            child = (running <= u[:, None]).sum(1)
            u = u - F.pad(running[:, :-1], (1, 0)).gather(1, child[:, None])[:, 0]
            nodes = nodes * f + child
        return nodes


def _parents(nodes: Nodes, fanout: int) -> Nodes:
    """The parents of ``nodes`` in the level above (a range stays a range)."""
    if isinstance(nodes, slice):
        return slice(nodes.start // fanout, (nodes.stop - 1) // fanout + 1)
    return nodes // fanout
