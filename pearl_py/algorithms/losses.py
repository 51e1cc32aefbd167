"""Loss pieces shared by the value-based algorithms.

Example::

    >>> target = td_target(batch, next_value, gamma=0.99)
    >>> loss = weighted_mean(F.mse_loss(q, target, reduction="none"), batch)
"""
from __future__ import annotations

import torch

from pearl_py.algorithms.off_policy.learner import TensorBatch


def td_target(batch: TensorBatch, next_value: torch.Tensor, gamma: float) -> torch.Tensor:
    """One-step bootstrapped target ``r + gamma * (1 - terminated) * V(s')``."""
    return batch.rewards + gamma * (1.0 - batch.dones) * next_value


def weighted_mean(per_item: torch.Tensor, batch: TensorBatch) -> torch.Tensor:
    """Importance-weighted mean of a per-item loss (weights are 1 for uniform replay)."""
    return (batch.weights * per_item).mean()
