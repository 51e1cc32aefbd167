"""Array-backed n-ary segment trees: a sum tree for proportional sampling, a min tree for p_min.

All levels live root first in one flat ``float64`` array, so a tree can sit in shared
memory (pass ``buffer``); ``levels`` are numpy views of it. Level ``d`` has ``fanout``
times as many nodes as level ``d - 1``, padded with the reduction's identity (0 for
sums, +inf for minima); the leaves are the last level. Updates, fills, rebuilds and
the proportional descent run in the compiled kernels of :mod:`pearl_py.replay.kernels`.

Example::

    >>> tree = SumTree(capacity=5, fanout=2)
    >>> tree.update(np.array([0, 3, 3]), np.array([1.0, 9.0, 2.0]))   # last write wins
    >>> tree.total
    3.0
    >>> tree.find(np.array([0.5, 1.5]))          # prefix sums 0.5 and 1.5
    array([0, 3])
    >>> mins = MinTree(capacity=5, fanout=2)
    >>> mins.update(np.array([0, 3]), np.array([1.0, 2.0]))
    >>> mins.total
    1.0
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


def tree_nodes(capacity: int, fanout: int) -> int:
    """Total node count of the flat array a tree of this shape needs."""
    return sum(level_sizes(capacity, fanout))


class SegmentTree:
    """An n-ary tree whose every inner node is ``reduce`` of its children.

    Subclasses fix the reduction (``reduce``, ``np.add`` or ``np.minimum``: what the
    kernels compute, as a numpy ufunc), its ``identity`` and ``is_min``.
    ``buffer``, when given, is a float64 array of ``tree_nodes(capacity, fanout)``
    elements the tree uses in place (for shared memory); it is reset unless
    ``initialized`` says it already holds a valid tree (when attaching to one).
    """

    reduce: np.ufunc
    identity: float
    is_min: bool

    def __init__(self, capacity: int, fanout: int = 2, buffer: np.ndarray | None = None,
                 initialized: bool = False) -> None:
        sizes = level_sizes(capacity, fanout)
        self.capacity = capacity
        self.fanout = fanout
        self.depth = len(sizes) - 1
        if buffer is None:
            buffer = np.empty(sum(sizes), dtype=np.float64)
        elif buffer.shape != (sum(sizes),) or buffer.dtype != np.float64:
            raise ValueError(f"buffer must be float64 of shape ({sum(sizes)},), got {buffer.dtype} {buffer.shape}")
        if not initialized:
            buffer.fill(self.identity)
        self.flat = buffer
        self.bounds = np.cumsum((0,) + sizes).astype(np.uint64)
        """Where each level starts in ``flat`` (and, last, its length), as the kernels take it."""
        self.levels = [buffer[lo:hi] for lo, hi in zip(self.bounds[:-1], self.bounds[1:])]
        self.leaves = self.levels[-1]

    @property
    def total(self) -> float:
        """The reduction over all leaves (the root)."""
        return float(self.flat[0])

    def update(self, indices: np.ndarray, values: np.ndarray) -> None:
        """Set ``leaves[indices] = values`` and repair the ancestors; on duplicates the last write wins.

        Indices must already be valid leaf positions (callers validate).
        """
        kernels.set_leaves(self.flat, self.bounds, self.fanout, np.asarray(indices, dtype=np.int64),
                           np.asarray(values, dtype=np.float64), self.is_min)

    def fill(self, start: int, stop: int, value: float) -> None:
        """Set the contiguous leaves ``[start, stop)`` to ``value`` and repair the ancestors."""
        kernels.fill(self.flat, self.bounds, self.fanout, start, stop, float(value), self.is_min)

    def rebuild(self) -> None:
        """Recompute every inner node from the leaves (after loading leaves in bulk)."""
        kernels.rebuild(self.flat, self.bounds, self.fanout, self.is_min)


class SumTree(SegmentTree):
    """Segment tree of sums; ``find`` draws leaves proportionally to their values."""

    reduce = np.add
    identity = 0.0
    is_min = False

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


class MinTree(SegmentTree):
    """Segment tree of minima; its root is the smallest leaf (unused leaves are +inf)."""

    reduce = np.minimum
    identity = np.inf
    is_min = True
