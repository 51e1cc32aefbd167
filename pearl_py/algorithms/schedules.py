"""Schedules over training progress (0 at the start, 1 at the end).

Example::

    >>> linear_schedule(1.0, 0.05, fraction=0.1, progress=0.05)
    0.525
"""
from __future__ import annotations


def linear_schedule(start: float, end: float, fraction: float, progress: float) -> float:
    """Linear from ``start`` to ``end`` over the first ``fraction`` of training, then ``end``."""
    if fraction <= 0 or progress >= fraction:
        return end
    return start + (end - start) * max(progress, 0.0) / fraction
