"""Per-kernel wall-clock timing, the "measured" column of every report, and how parts of a run add up.

Example::

    >>> timer = KernelTimer()
    >>> with timer(ENV_STEP):
    ...     envs.step(actions)
    >>> timer.summary()[ENV_STEP]["calls"]
    1
"""
from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any


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

    def summary(self) -> dict[str, dict[str, float]]:
        """``{kernel: {calls, total_s, mean_s, source}}``, every figure measured."""
        return {
            name: {"calls": self.calls[name], "total_s": self.seconds[name],
                   "mean_s": self.seconds[name] / max(self.calls[name], 1), "source": "measured"}
            for name in sorted(self.seconds)
        }


def merge_kernel_times(parts: Iterable[Mapping[str, Mapping[str, Any]]],
                       modelled_s: Mapping[str, float]) -> dict[str, dict[str, Any]]:
    """Per-kernel times summed over ``parts`` (processes, workers, earlier sessions of a resumed run).

    A kernel in ``modelled_s`` ran on a simulated device (the FPGA: executed on the CPU): its
    ``total_s`` is charged at its modelled latency per call and marked ``source: modelled``, and
    the CPU's own time is kept as ``cpu_total_s``; every other figure is measured.

    Example::

        >>> merge_kernel_times([learner_timer.summary(), actor_times], {"replay_sample": 2e-6})["replay_sample"]
        {'calls': 24576, 'total_s': 0.049, 'mean_s': 2e-06, 'source': 'modelled', 'cpu_total_s': 1.21}
    """
    totals: dict[str, list[float]] = {}
    for part in parts:
        for kernel, t in part.items():
            calls, seconds = totals.setdefault(kernel, [0, 0.0])
            totals[kernel] = [calls + int(t["calls"]), seconds + t.get("cpu_total_s", t["total_s"])]
    out: dict[str, dict[str, Any]] = {}
    for kernel in sorted(totals):
        calls, seconds = totals[kernel]
        if kernel in modelled_s:
            out[kernel] = {"calls": calls, "total_s": calls * modelled_s[kernel], "mean_s": modelled_s[kernel],
                           "source": "modelled", "cpu_total_s": seconds}
        else:
            out[kernel] = {"calls": calls, "total_s": seconds, "mean_s": seconds / max(calls, 1), "source": "measured"}
    return out
