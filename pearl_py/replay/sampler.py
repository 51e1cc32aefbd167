"""Samplers: which stored items a batch draws, and their importance-sampling weights.

:class:`UniformSampler` draws slots uniformly with replacement; :class:`PrioritizedSampler` is proportional
prioritized replay (Schaul et al., ICLR 2016) on a :class:`~pearl_py.replay.segment_tree.PriorityTree`, new
items getting the largest priority seen so far (docs/replay.md, "Formulas", has each formula and its source).
Both draw their uniforms from a :class:`~pearl_py.replay.pcg64.Stream` and copy the drawn rows of the five
stored fields (``sources``) into the caller's arrays (``targets``) in one compiled kernel call.

Example::

    >>> stream = Stream(seed=0)                                 # numpy's default_rng(0), drawn inside the kernels
    >>> sampler = PrioritizedSampler.create(capacity=4, alpha=1.0, eps=0.0, fanout=2)
    >>> sampler.on_write(0, 4, size=4)                          # four new items, priority 1 each
    >>> sampler.update(np.array([0, 1, 2, 3]), np.array([1.0, 1.0, 1.0, 5.0]), size=4)
    (0, 0)
    >>> items = np.arange(4.0)                                  # one stored field: the item number
    >>> out = np.empty(4)
    >>> idx, w = sampler.sample(4, size=4, beta=1.0, stream=stream.array, sources=(items,) * 5, targets=(out,) * 5)
    >>> idx.tolist(), [round(float(x), 3) for x in w], out.tolist()   # item 3 holds 5/8 of the mass
    ([1, 2, 3, 3], [1.0, 1.0, 0.2, 0.2], [1.0, 2.0, 3.0, 3.0])
"""
from __future__ import annotations

from functools import partial

import numpy as np

from pearl_py.replay import kernels
from pearl_py.replay.segment_tree import PriorityTree, tree_nodes

_INT64, _FLOAT32 = np.dtype(np.int64), np.dtype(np.float32)

Rows = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""obs, actions, rewards, next_obs, dones: stored arrays (capacity rows) or a batch's (batch rows)."""


class UniformSampler:
    """Every written slot equally likely; weights are all ones."""

    def sample(self, batch_size: int, size: int, beta: float, stream: np.ndarray, sources: Rows,
               targets: Rows) -> tuple[np.ndarray, np.ndarray]:
        """``batch_size`` slots drawn with replacement from ``[0, size)`` (``floor(u * size)``), unit weights.

        ``u`` comes from ``stream`` (a :class:`~pearl_py.replay.pcg64.Stream`'s array, advanced).
        Fills ``targets`` with the rows of the drawn slots.
        """
        indices, weights = np.empty(batch_size, _INT64), np.empty(batch_size, _FLOAT32)
        kernels.sample_uniform(stream, size, indices, weights, *sources, *targets)
        return indices, weights


class PrioritizedSampler:
    """Proportional prioritization on a :class:`PriorityTree` (sums and minima over the same leaves).

    ``max_seen`` is a one-element float64 array holding the largest ``|delta| + eps``
    ever given (initially 1, as in the paper); like the tree it may live in shared memory.
    """

    def __init__(self, tree: PriorityTree, max_seen: np.ndarray, alpha: float, eps: float) -> None:
        self.tree = tree
        self.max_seen = max_seen
        self.alpha = alpha
        self.eps = eps
        # The kernels with their fixed leading arguments bound once: each attribute lookup costs on the per-call path.
        self._update = partial(kernels.update_priorities, tree.flat, tree.bounds, tree.fanout, max_seen, alpha, eps)
        self._sample = partial(kernels.sample_prioritized, tree.flat, tree.bounds, tree.fanout)

    @classmethod
    def create(cls, capacity: int, alpha: float, eps: float, fanout: int) -> PrioritizedSampler:
        """A sampler on freshly allocated private arrays."""
        return cls(PriorityTree(capacity, fanout), np.ones(1), alpha, eps)

    @staticmethod
    def arrays(capacity: int, fanout: int) -> dict[str, tuple[type, tuple[int, ...]]]:
        """The arrays a sampler of this shape needs, for laying out shared storage."""
        return {"tree": (np.float64, (tree_nodes(capacity, fanout),)), "max_seen": (np.float64, (1,))}

    def on_write(self, start: int, stop: int, size: int) -> None:
        """Give the new slots ``[start, stop)`` the largest priority seen so far (``size``: items written now)."""
        self.tree.fill(start, stop, float(self.max_seen[0]) ** self.alpha, size)

    def update(self, indices: np.ndarray, td_errors_abs: np.ndarray, size: int) -> tuple[int, int]:
        """Store ``(|delta| + eps)^alpha`` at ``indices`` (last one wins on duplicates), unless the input is bad.

        ``indices`` is int64 and ``td_errors_abs`` float64 of the same length. Returns
        ``(kernels.OK, 0)``, or, changing nothing, the kernel's status for the first
        index outside ``[0, size)`` or NaN/infinite/negative value, and its position.
        """
        return self._update(indices, td_errors_abs, size)

    def sample(self, batch_size: int, size: int, beta: float, stream: np.ndarray, sources: Rows,
               targets: Rows) -> tuple[np.ndarray, np.ndarray]:
        """Stratified proportional draw: one target uniformly in each of ``batch_size`` equal slices of the mass.

        Returns the slots and their IS weights and fills ``targets`` with their rows.
        ``size`` (the ``N`` of the weight formula) cancels out of the normalized weights.
        """
        indices, weights = np.empty(batch_size, _INT64), np.empty(batch_size, _FLOAT32)
        self._sample(stream, beta, indices, weights, *sources, *targets)
        return indices, weights
