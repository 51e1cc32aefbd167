"""Samplers: which stored items a batch draws, and their importance-sampling weights.

:class:`UniformSampler` draws slots uniformly with replacement. :class:`PrioritizedSampler`
implements proportional prioritized replay (Schaul et al., "Prioritized Experience
Replay", ICLR 2016): item ``i`` has priority ``p_i = (|delta_i| + eps)^alpha``, is drawn
with probability ``P(i) = p_i / sum_k p_k`` by stratified sampling on a sum tree, and
carries the weight ``w_i = (N * P(i))^-beta / max_j w_j``, where
``max_j w_j = (N * p_min / sum_k p_k)^-beta`` comes from a min tree. New items get
the largest priority seen so far, so each is replayed at least once soon.

Example::

    >>> rng = np.random.default_rng(0)
    >>> sampler = PrioritizedSampler.create(capacity=4, alpha=1.0, eps=0.0, fanout=2)
    >>> sampler.on_write(0, 4)                                  # four new items, priority 1 each
    >>> sampler.update(np.array([0, 1, 2, 3]), np.array([1.0, 1.0, 1.0, 5.0]))
    >>> idx, w = sampler.sample(4, size=4, beta=1.0, rng=rng)
    >>> idx.tolist(), [round(float(x), 3) for x in w]         # item 3 holds 5/8 of the mass
    ([1, 2, 3, 3], [1.0, 1.0, 0.2, 0.2])
"""
from __future__ import annotations

import numpy as np

from pearl_py.replay.segment_tree import MinTree, SumTree, ancestors, last_writes, tree_nodes


def anneal_beta(beta: float, beta_final: float, progress: float) -> float:
    """Linear IS-exponent schedule of Schaul et al. (2016): ``beta`` at progress 0 to ``beta_final`` at 1.

    >>> anneal_beta(0.4, 1.0, 0.5)
    0.7
    """
    progress = min(max(progress, 0.0), 1.0)
    return beta + (beta_final - beta) * progress


class UniformSampler:
    """Every written slot equally likely; weights are all ones."""

    def sample(self, batch_size: int, size: int, beta: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``batch_size`` slot indices drawn with replacement from ``[0, size)``, and unit weights."""
        return rng.integers(0, size, batch_size, dtype=np.int64), np.ones(batch_size, dtype=np.float32)


class PrioritizedSampler:
    """Proportional prioritization on a sum tree plus a min tree over the same leaves.

    ``max_seen`` is a one-element float64 array holding the largest ``|delta| + eps``
    ever given (initially 1, as in the paper); like the trees it may live in shared memory.
    """

    def __init__(self, sums: SumTree, mins: MinTree, max_seen: np.ndarray, alpha: float, eps: float) -> None:
        self.sums = sums
        self.mins = mins
        self.max_seen = max_seen
        self.alpha = alpha
        self.eps = eps

    @classmethod
    def create(cls, capacity: int, alpha: float, eps: float, fanout: int) -> PrioritizedSampler:
        """A sampler on freshly allocated private arrays."""
        return cls(SumTree(capacity, fanout), MinTree(capacity, fanout), np.ones(1), alpha, eps)

    @staticmethod
    def arrays(capacity: int, fanout: int) -> dict[str, tuple[type, tuple[int, ...]]]:
        """The arrays a sampler of this shape needs, for laying out shared storage."""
        nodes = tree_nodes(capacity, fanout)
        return {"sum_tree": (np.float64, (nodes,)), "min_tree": (np.float64, (nodes,)), "max_seen": (np.float64, (1,))}

    def priority(self, deltas: np.ndarray) -> np.ndarray:
        """Stored priority ``(|delta| + eps)^alpha`` of raw TD errors."""
        return (np.abs(deltas, dtype=np.float64) + self.eps) ** self.alpha

    def on_write(self, start: int, stop: int) -> None:
        """Give the new slots ``[start, stop)`` the largest priority seen so far."""
        value = float(self.max_seen[0]) ** self.alpha
        self.sums.fill(start, stop, value)
        self.mins.fill(start, stop, value)

    def update(self, indices: np.ndarray, deltas: np.ndarray) -> None:
        """Store ``(|delta| + eps)^alpha`` at ``indices`` (last one wins on duplicates)."""
        raw = np.abs(deltas, dtype=np.float64) + self.eps
        nodes, values = last_writes(indices, raw**self.alpha)
        self.sums.leaves[nodes] = values
        self.mins.leaves[nodes] = values
        depth = self.sums.depth
        for level, (parents, children) in enumerate(ancestors(nodes, self.sums.fanout, depth)):
            self.sums.repair(depth - 1 - level, parents, children)
            self.mins.repair(depth - 1 - level, parents, children)
        self.max_seen[0] = max(float(self.max_seen[0]), float(raw.max()))

    def sample(self, batch_size: int, size: int, beta: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Stratified proportional draw: one target uniformly in each of ``batch_size`` equal slices of the mass."""
        total = self.sums.total
        targets = (np.arange(batch_size) + rng.random(batch_size)) * (total / batch_size)
        indices = self.sums.find(targets)
        probs = self.sums.leaves[indices] / total
        max_weight = (size * self.mins.total / total) ** -beta
        weights = (size * probs) ** -beta / max_weight
        return indices, weights.astype(np.float32)
