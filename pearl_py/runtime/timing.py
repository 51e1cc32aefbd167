"""Per-kernel wall-clock timing, the "measured" column of every report.

Example::

    >>> timer = KernelTimer()
    >>> with timer("env_step"):
    ...     envs.step(actions)
    >>> timer.summary()["env_step"]["calls"]
    1
"""
from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager


class KernelTimer:
    """Accumulates seconds and call counts per kernel name."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)

    @contextmanager
    def __call__(self, kernel: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[kernel] += time.perf_counter() - start
            self.calls[kernel] += 1

    def add(self, kernel: str, seconds: float, calls: int = 1) -> None:
        self.seconds[kernel] += seconds
        self.calls[kernel] += calls

    def merge(self, other: KernelTimer) -> None:
        for name, seconds in other.seconds.items():
            self.add(name, seconds, other.calls[name])

    def summary(self) -> dict[str, dict[str, float]]:
        """``{kernel: {calls, total_s, mean_s}}``, every figure measured."""
        return {
            name: {"calls": self.calls[name], "total_s": self.seconds[name],
                   "mean_s": self.seconds[name] / max(self.calls[name], 1)}
            for name in sorted(self.seconds)
        }
