"""``pearl profile``'s progress: the phase it is in, points done of all, and about how long is left.

The time left is the time per point so far times the points left (points of different kinds
cost differently, so it is rough early on and firms up).

Example::

    >>> progress = ProfileProgress(total_points=412, log=print)
    >>> progress.phase("learner_update/reference", points=60)
    [1/14] learner_update/reference: 60 points (0/412 done, 0:00 elapsed)
    >>> progress.point()       # after each point; prints a line every ``every_s`` seconds
"""
from __future__ import annotations

import time
from collections.abc import Callable

from pearl_py.runtime.run_log import clock

PROFILE_EVERY_S = 15.0
"""Seconds between progress lines within a phase."""


class ProfileProgress:
    """Counts timed points over the whole profile and reports them through ``log``."""

    def __init__(self, total_points: int, phases: int, log: Callable[[str], None],
                 every_s: float = PROFILE_EVERY_S) -> None:
        self.total, self.phases, self.log, self.every_s = total_points, phases, log, every_s
        self.done = 0
        self.phase_index = 0
        self.name = ""
        self._start = self._last = time.perf_counter()

    def left_s(self) -> float | None:
        """Seconds the points left would take at the pace so far (None before the first point)."""
        if not self.done:
            return None
        return (time.perf_counter() - self._start) / self.done * (self.total - self.done)

    def _figures(self) -> str:
        left = self.left_s()
        return (f"{self.done}/{self.total} points done, {clock(time.perf_counter() - self._start)} elapsed"
                + (f", about {clock(left)} left" if left is not None else ""))

    def phase(self, name: str, points: int) -> None:
        self.phase_index += 1
        self.name = name
        self._last = time.perf_counter()
        self.log(f"[{self.phase_index}/{self.phases}] {name}: {points} points ({self._figures()})")

    def point(self) -> None:
        self.done += 1
        now = time.perf_counter()
        if now - self._last >= self.every_s:
            self._last = now
            self.log(f"    {self.name}: {self._figures()}")
