"""Array-backed n-ary segment trees: a sum tree for proportional sampling, a min tree for p_min.

Every level is a contiguous numpy array and all levels live root first in one flat
``float64`` array, so a tree can sit in shared memory (pass ``buffer``). Level ``d``
has ``fanout`` times as many nodes as level ``d - 1``, padded with the reduction's
identity (0 for sums, +inf for minima); the leaves are the last level. All
operations are batched and vectorized level by level: an update of ``B`` leaves
costs ``depth`` rounds of a few numpy calls, never a Python loop over the batch.

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

_BELOW_ONE = 1.0 - 2.0**-40
"""Scale that keeps a sampling target strictly below its node's total despite rounding."""


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


def last_writes(indices: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct ``indices`` with, for each, the value of its last occurrence.

    >>> last_writes(np.array([3, 1, 3]), np.array([1.0, 2.0, 3.0]))
    (array([1, 3]), array([2., 3.]))
    """
    order = np.argsort(indices, kind="stable")
    ordered = indices[order]
    last = np.empty(ordered.shape, dtype=bool)
    last[-1:] = True
    np.not_equal(ordered[1:], ordered[:-1], out=last[:-1])
    return ordered[last], values[order[last]]


def ancestors(nodes: np.ndarray, fanout: int, depth: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """For sorted distinct leaf ``nodes``, bottom up: each level's distinct parents and their children.

    Children come as a ``(fanout, k)`` index array, so reductions run along the fast axis.

    >>> [(p.tolist(), c.tolist()) for p, c in ancestors(np.array([0, 3]), fanout=2, depth=2)]
    [([0, 1], [[0, 2], [1, 3]]), ([0], [[0], [1]])]
    """
    column = np.arange(fanout)[:, None]
    levels = []
    for _ in range(depth):
        nodes = nodes // fanout
        if nodes.size > 1:
            nodes = nodes[np.concatenate(([True], nodes[1:] != nodes[:-1]))]
        levels.append((nodes, nodes * fanout + column))
    return levels


class SegmentTree:
    """An n-ary tree whose every inner node is ``reduce`` of its children.

    Subclasses fix the reduction (``np.add`` or ``np.minimum``) and its identity.
    ``buffer``, when given, is a float64 array of ``tree_nodes(capacity, fanout)``
    elements the tree uses in place (for shared memory); it is reset unless
    ``initialized`` says it already holds a valid tree (when attaching to one).
    """

    reduce: np.ufunc
    identity: float

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
        bounds = np.cumsum((0,) + sizes)
        self.levels = [buffer[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:])]
        self.leaves = self.levels[-1]

    @property
    def total(self) -> float:
        """The reduction over all leaves (the root)."""
        return float(self.flat[0])

    def update(self, indices: np.ndarray, values: np.ndarray) -> None:
        """Set ``leaves[indices] = values`` and repair the ancestors; on duplicates the last write wins.

        Indices must already be valid leaf positions (callers validate).
        """
        nodes, values = last_writes(indices, values)
        self.leaves[nodes] = values
        for depth, (parents, children) in enumerate(ancestors(nodes, self.fanout, self.depth)):
            self.repair(self.depth - 1 - depth, parents, children)

    def repair(self, depth: int, parents: np.ndarray, children: np.ndarray) -> None:
        """Recompute ``levels[depth][parents]`` from the child nodes ``children`` (shape ``(fanout, k)``)."""
        below = self.levels[depth + 1]
        self.levels[depth][parents] = self.reduce.reduce(below[children], axis=0)

    def fill(self, start: int, stop: int, value: float) -> None:
        """Set the contiguous leaves ``[start, stop)`` to ``value`` and repair the ancestors."""
        self.leaves[start:stop] = value
        for depth in range(self.depth, 0, -1):
            start, stop = start // self.fanout, -(-stop // self.fanout)
            children = self.levels[depth].reshape(-1, self.fanout)
            self.levels[depth - 1][start:stop] = self.reduce.reduce(children[start:stop], axis=1)

    def rebuild(self) -> None:
        """Recompute every inner node from the leaves (after loading leaves in bulk)."""
        for depth in range(self.depth, 0, -1):
            children = self.levels[depth].reshape(-1, self.fanout)
            self.reduce.reduce(children, axis=1, out=self.levels[depth - 1][:len(children)])


class SumTree(SegmentTree):
    """Segment tree of sums; ``find`` draws leaves proportionally to their values."""

    reduce = np.add
    identity = 0.0

    def find(self, targets: np.ndarray) -> np.ndarray:
        """Leaf index ``i`` for each target ``u`` with ``sum(leaves[:i]) <= u < sum(leaves[:i+1])``.

        Targets should lie in ``[0, total)``; one at or above the total (rounding)
        maps to the last leaf with a positive value. Leaves of value 0 are never
        returned while the total is positive. ``targets`` is not modified.
        """
        u = np.array(targets, dtype=np.float64)
        nodes = np.zeros(u.shape, dtype=np.int64)
        column = np.arange(self.fanout)[:, None]
        for depth in range(1, self.depth + 1):
            nodes *= self.fanout
            prefix = self.levels[depth][nodes + column]      # (fanout, B): children of each node
            np.cumsum(prefix, axis=0, out=prefix)
            np.minimum(u, prefix[-1] * _BELOW_ONE, out=u)
            before = prefix <= u
            u -= np.max(prefix * before, axis=0)
            nodes += np.count_nonzero(before, axis=0)
        return nodes


class MinTree(SegmentTree):
    """Segment tree of minima; its root is the smallest leaf (unused leaves are +inf)."""

    reduce = np.minimum
    identity = np.inf
