"""The priority tree: an n-ary sum tree and min tree over one shared level of leaves (the priorities).

One flat ``float64`` array (so it can sit in shared memory: pass ``buffer``) holding ``values``,
``prefix`` and ``mins``; only the first ``size`` leaves are items. The compiled kernels of
:mod:`pearl_py.replay.kernels` update, fill, rebuild and descend it; docs/replay.md ("The priority
tree") has the layout.

Example::

    >>> tree = PriorityTree(capacity=5, fanout=2)
    >>> tree.fill(0, 4, 1.0, size=4)                          # four items of priority 1
    >>> tree.update(np.array([0, 3, 3]), np.array([1.0, 9.0, 2.0]), size=4)   # last write wins
    >>> tree.total, tree.min
    (5.0, 1.0)
    >>> tree.find(np.array([0.5, 4.5]))                       # prefix sums 0.5 and 4.5
    array([0, 3])
"""
from __future__ import annotations

import numpy as np

from pearl_py.replay import kernels


def level_sizes(capacity: int, fanout: int) -> tuple[int, ...]:
    """Node counts per level, root first; every level but the root is a multiple of ``fanout``.

    >>> level_sizes(5, 2)
    (1, 2, 4, 6)
    >>> len(level_sizes(2**20, 16)) - 1     # depth below the root
    5
    """
    if capacity < 1:
        raise ValueError(f"capacity must be >= 1, got {capacity}")
    if fanout < 2:
        raise ValueError(f"fanout must be >= 2, got {fanout}")
    sizes = []
    nodes = capacity
    while True:
        padded = -(-nodes // fanout) * fanout
        sizes.append(padded)
        nodes = padded // fanout
        if nodes == 1:
            sizes.append(1)
            return tuple(reversed(sizes))


def level_bounds(capacity: int, fanout: int) -> np.ndarray:
    """Where each level starts in a tree's flat arrays, root first, and (last) their length, as uint64.

    The root's level is padded to ``fanout`` slots, so every group of siblings starts
    at a multiple of ``fanout``: a group of 16 float64 is then exactly two 64-byte cache
    lines (in 64-byte-aligned storage) instead of three.

    >>> level_bounds(5, 2).tolist()
    [0, 2, 4, 8, 14]
    """
    sizes = level_sizes(capacity, fanout)
    return np.cumsum((0, fanout) + sizes[1:]).astype(np.uint64)


def tree_nodes(capacity: int, fanout: int) -> int:
    """Length of a tree's flat array: sums and running sums of every node, minima of the inner ones.

    >>> tree_nodes(5, 2)        # 14 nodes (root padded to 2), 8 of them inner
    36
    """
    bounds = level_bounds(capacity, fanout)
    return int(2 * bounds[-1] + bounds[-2])


class PriorityTree:
    """Sums (with in-group running sums) and minima of the priorities of the first ``size`` leaves.

    ``buffer``, when given, is a float64 array of ``tree_nodes(capacity, fanout)``
    elements the tree uses in place (for shared memory); it is reset unless
    ``initialized`` says it already holds a valid tree (when attaching to one).
    """

    def __init__(self, capacity: int, fanout: int = 16, buffer: np.ndarray | None = None,
                 initialized: bool = False) -> None:
        self.capacity = capacity
        self.fanout = fanout
        self.depth = len(level_sizes(capacity, fanout)) - 1
        self.bounds = level_bounds(capacity, fanout)
        """Where each level starts in ``values`` and ``prefix`` (and, last, their length), as the kernels take it."""
        length = tree_nodes(capacity, fanout)
        if buffer is None:
            buffer = np.empty(length, dtype=np.float64)
        elif buffer.shape != (length,) or buffer.dtype != np.float64:
            raise ValueError(f"buffer must be float64 of shape ({length},), got {buffer.dtype} {buffer.shape}")
        nodes = int(self.bounds[-1])
        self.flat = buffer
        """The whole tree, as the kernels take it."""
        self.values, self.prefix, self.mins = buffer[:nodes], buffer[nodes:2 * nodes], buffer[2 * nodes:]
        if not initialized:
            self.values.fill(0.0)
            self.prefix.fill(0.0)
            self.mins.fill(np.inf)
        self.levels = [self.values[lo:hi] for lo, hi in zip(self.bounds[:-1], self.bounds[1:])]
        self.leaves = self.levels[-1]

    @property
    def total(self) -> float:
        """The sum of all priorities (the root)."""
        return float(self.values[0])

    @property
    def min(self) -> float:
        """The smallest priority of an item (+inf before any)."""
        return float(self.mins[0])

    def update(self, indices: np.ndarray, values: np.ndarray, size: int) -> None:
        """Set ``leaves[indices] = values`` and repair the ancestors; on duplicates the last write wins.

        Indices must already be valid items (``0 <= i < size``; callers validate).
        """
        kernels.set_leaves(self.flat, self.bounds, self.fanout, np.asarray(indices, dtype=np.int64),
                           np.asarray(values, dtype=np.float64), size)

    def fill(self, start: int, stop: int, value: float, size: int) -> None:
        """Set the contiguous leaves ``[start, stop)`` (``stop <= size``) to ``value`` and repair the ancestors."""
        kernels.fill(self.flat, self.bounds, self.fanout, start, stop, float(value), size)

    def rebuild(self, size: int) -> None:
        """Recompute every inner node from the leaves (after loading leaves in bulk)."""
        kernels.rebuild(self.flat, self.bounds, self.fanout, size)

    def find(self, targets: np.ndarray) -> np.ndarray:
        """Leaf index ``i`` for each target ``u`` with ``sum(leaves[:i]) <= u < sum(leaves[:i+1])``.

        Targets should lie in ``[0, total)``; one at or above the total (rounding)
        maps to the last leaf with a positive value. Leaves of value 0 are never
        returned while the total is positive. ``targets`` is not modified.
        """
        targets = np.asarray(targets, dtype=np.float64)
        out = np.empty(targets.shape, dtype=np.int64)
        kernels.find(self.flat, self.bounds, self.fanout, targets.ravel(), out.reshape(-1))
        return out
