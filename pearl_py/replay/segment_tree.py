"""The priority tree: an n-ary sum tree and min tree over one shared level of leaves (the priorities).

Three flat ``float64`` arrays, levels root first, so the tree can sit in shared memory
(pass ``buffers``): ``values`` (every node's sum; the leaves, its last level, are the
priorities), ``prefix`` (within each group of ``fanout`` siblings, their running sums:
what the proportional descent compares a target with) and ``mins`` (each inner node's
minimum over its children). Level ``d`` has ``fanout`` times as many nodes as level
``d - 1``, padded to a multiple of ``fanout`` with zero leaves (see :func:`level_bounds`). Only the first ``size``
leaves are items: the slots written so far, which a ring fills from slot 0; the others
are 0 and never count for the minimum. Updates, fills, rebuilds and the descent run in
the compiled kernels of :mod:`pearl_py.replay.kernels`.

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


class PriorityTree:
    """Sums (with in-group running sums) and minima of the priorities of the first ``size`` leaves.

    ``buffers``, when given, holds the three arrays :meth:`arrays` describes, used in
    place (for shared memory); they are reset unless ``initialized`` says they already
    hold a valid tree (when attaching to one).
    """

    def __init__(self, capacity: int, fanout: int = 16, buffers: dict[str, np.ndarray] | None = None,
                 initialized: bool = False) -> None:
        self.capacity = capacity
        self.fanout = fanout
        self.depth = len(level_sizes(capacity, fanout)) - 1
        specs = self.arrays(capacity, fanout)
        if buffers is None:
            buffers = {name: np.empty(shape, dtype) for name, (dtype, shape) in specs.items()}
        for name, (dtype, shape) in specs.items():
            array = buffers[name]
            if array.shape != shape or array.dtype != dtype:
                raise ValueError(f"buffers[{name!r}] must be {np.dtype(dtype)} of shape {shape}, "
                                 f"got {array.dtype} {array.shape}")
        self.values, self.prefix, self.mins = buffers["sum_tree"], buffers["prefix"], buffers["min_tree"]
        if not initialized:
            self.values.fill(0.0)
            self.prefix.fill(0.0)
            self.mins.fill(np.inf)
        self.bounds = level_bounds(capacity, fanout)
        """Where each level starts in ``values`` and ``prefix`` (and, last, their length), as the kernels take it."""
        self.levels = [self.values[lo:hi] for lo, hi in zip(self.bounds[:-1], self.bounds[1:])]
        self.leaves = self.levels[-1]

    @staticmethod
    def arrays(capacity: int, fanout: int) -> dict[str, tuple[type, tuple[int, ...]]]:
        """The arrays a tree of this shape needs (name: dtype, shape), for laying out shared storage."""
        bounds = level_bounds(capacity, fanout)
        nodes, inner = int(bounds[-1]), int(bounds[-2])
        return {"sum_tree": (np.float64, (nodes,)), "prefix": (np.float64, (nodes,)), "min_tree": (np.float64, (inner,))}

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
        kernels.set_leaves(self.values, self.prefix, self.mins, self.bounds, self.fanout,
                           np.asarray(indices, dtype=np.int64), np.asarray(values, dtype=np.float64), size)

    def fill(self, start: int, stop: int, value: float, size: int) -> None:
        """Set the contiguous leaves ``[start, stop)`` (``stop <= size``) to ``value`` and repair the ancestors."""
        kernels.fill(self.values, self.prefix, self.mins, self.bounds, self.fanout, start, stop, float(value), size)

    def rebuild(self, size: int) -> None:
        """Recompute every inner node from the leaves (after loading leaves in bulk)."""
        kernels.rebuild(self.values, self.prefix, self.mins, self.bounds, self.fanout, size)

    def find(self, targets: np.ndarray) -> np.ndarray:
        """Leaf index ``i`` for each target ``u`` with ``sum(leaves[:i]) <= u < sum(leaves[:i+1])``.

        Targets should lie in ``[0, total)``; one at or above the total (rounding)
        maps to the last leaf with a positive value. Leaves of value 0 are never
        returned while the total is positive. ``targets`` is not modified.
        """
        targets = np.asarray(targets, dtype=np.float64)
        out = np.empty(targets.shape, dtype=np.int64)
        kernels.find(self.prefix, self.bounds, self.fanout, targets.ravel(), out.reshape(-1))
        return out
