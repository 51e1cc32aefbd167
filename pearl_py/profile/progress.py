"""``pearl profile``'s progress: the phase it is in, points done of all, and about how long is left.

A phase first builds one kernel per point (networks, optimizers, envs; a variant's one-off setup, a compile)
and then times its points pass after pass, so the time left has three paces, each over what is done so far and
applied to what is left of its own: seconds per timed point; seconds per build less its compile, which every
build pays; and seconds per compile, which only the builds of a compiling variant (numba's, ``setup_cached``)
pay (docs/cost-models.md says why three).

Example::

    >>> progress = ProfileProgress(total_points=412, phases=14, log=print, total_builds=140, total_compiled=40)
    >>> progress.phase("learner_update/fused", points=60, compiles=True)
    [1/14] learner_update/fused: 60 points (0/412 done, 0:00 elapsed)
    >>> progress.built(compile_s=6.8)   # after each kernel built, with the compile it paid (its ``setup_s``)
    >>> progress.point()       # after each timed point; prints a line every ``every_s`` seconds
    >>> progress.part = "light neighbour"   # what the builds and points after it are counted under
    >>> progress.breakdown(total_s=95.0)
    'grid: 60 builds 12%, 412 points 61%; light neighbour: 6 builds 1%, 36 points 5%; the rest (fits, loops, ...) 21%'

Each build's and point's seconds run from the mark before it (a phase's start, the previous build or point), so a
neighbour process's start falls to the build or point after it.
"""
from __future__ import annotations

import time
from collections.abc import Callable

from pearl_py.runtime.run_log import clock

PROFILE_EVERY_S = 15.0
"""Seconds between progress lines within a phase."""


class ProfileProgress:
    """Counts built kernels and timed points over the whole profile and reports them through ``log``."""

    def __init__(self, total_points: int, phases: int, log: Callable[[str], None],
                 every_s: float = PROFILE_EVERY_S, total_builds: int = 0, total_compiled: int = 0) -> None:
        self.total, self.phases, self.log, self.every_s = total_points, phases, log, every_s
        self.total_builds, self.total_compiled = total_builds, total_compiled
        """All builds, and those of them that compile (a compiling variant's phases)."""
        self.done = self.builds = self.compiled = 0
        self.phase_index = 0
        self.name = ""
        self.compiling = False
        """Whether the current phase's builds compile (count into :attr:`compiled`)."""
        self._start = self._last = self._mark = time.perf_counter()
        self._build_s = self._compile_s = self._point_s = 0.0
        """Seconds spent building (less the compiles), compiling and timing so far (each build's and point's since
        the mark before it: a phase's start or the previous build or point)."""
        self.part = "grid"
        """What the builds and points are counted under in :meth:`breakdown` (the profiler names its steps)."""
        self._spent: dict[str, dict[str, list[float]]] = {}
        """``{part: {"builds" | "points": [count, seconds]}}``."""

    def left_s(self) -> float | None:
        """Seconds the points, builds and compiles left would take, each at its own pace so far (None before the
        first point: no pace of timing yet; a pace not seen yet counts 0)."""
        if not self.done:
            return None
        build_pace = self._build_s / self.builds if self.builds else 0.0
        compile_pace = self._compile_s / self.compiled if self.compiled else 0.0
        return (self._point_s / self.done * (self.total - self.done)
                + build_pace * max(self.total_builds - self.builds, 0)
                + compile_pace * max(self.total_compiled - self.compiled, 0))

    def _figures(self) -> str:
        left = self.left_s()
        return (f"{self.done}/{self.total} points done, {clock(time.perf_counter() - self._start)} elapsed"
                + (f", about {clock(left)} left" if left is not None else ""))

    def phase(self, name: str, points: int, compiles: bool = False) -> None:
        """A phase of ``points`` timed points starts; ``compiles``: its builds compile (counted in
        ``total_compiled``)."""
        self.phase_index += 1
        self.name, self.compiling = name, compiles
        self._last = self._mark = time.perf_counter()
        self.log(f"[{self.phase_index}/{self.phases}] {name}: {points} points ({self._figures()})")

    def _since_mark(self) -> float:
        now = time.perf_counter()
        seconds, self._mark = now - self._mark, now
        return seconds

    def dropped(self, points: int, builds: int = 0, compiled: int = 0) -> None:
        """``points`` and ``builds`` (``compiled`` of them compiling) of the current phase will not be done (a refused
        model's): out of the totals."""
        self.total -= points
        self.total_builds -= builds
        self.total_compiled -= compiled

    def counted(self, points: int, builds: int = 0, compiled: int = 0) -> None:
        """``points`` and ``builds`` (``compiled`` of them compiling) not in the totals will be done after all (a
        phase expected to be refused that runs, a slowdown timed again): into the totals."""
        self.dropped(-points, -builds, -compiled)

    def _count(self, what: str, seconds: float) -> float:
        tally = self._spent.setdefault(self.part, {}).setdefault(what, [0, 0.0])
        tally[0] += 1
        tally[1] += seconds
        return seconds

    def built(self, compile_s: float = 0.0) -> None:
        """A kernel was built; ``compile_s``: the seconds of it its compile took (its ``setup_s``), counted at the
        compiles' pace where the phase compiles (else the build's own)."""
        self.builds += 1
        seconds = self._count("builds", self._since_mark())
        if self.compiling:
            compile_s = min(max(compile_s, 0.0), seconds)
            self.compiled += 1
            self._compile_s += compile_s
            seconds -= compile_s
        self._build_s += seconds

    def point(self) -> None:
        self.done += 1
        self._point_s += self._count("points", self._since_mark())
        now = time.perf_counter()
        if now - self._last >= self.every_s:
            self._last = now
            self.log(f"    {self.name}: {self._figures()}")

    def breakdown(self, total_s: float) -> str:
        """Counts and shares of ``total_s`` (the whole profile's seconds) per part, builds and points apart, and the
        rest (fits, the loop and process-start timings, neighbours stopping)."""
        total_s = max(total_s, 1e-9)
        parts, counted = [], 0.0
        for part, tallies in self._spent.items():
            parts.append(f"{part}: " + ", ".join(f"{int(n)} {what} {seconds / total_s:.0%}"
                                                 for what, (n, seconds) in tallies.items()))
            counted += sum(seconds for _, seconds in tallies.values())
        return "; ".join(parts + [f"the rest (fits, loops, ...) {max(total_s - counted, 0.0) / total_s:.0%}"])
