"""How an overlapped plan's kernels share one device: the work per sample each of its processes does (the actors',
the learner's), and the seconds per sample the device needs for all of it (docs/optimizer.md, "busy seconds").

Kept below the optimizer and the runtime, which both compose a plan's work this way: the optimizer to value a plan
(:mod:`pearl_py.optimize.model`), the run's monitor to weigh the other mode from what it measured
(:mod:`pearl_py.runtime.monitor`).
"""
from __future__ import annotations

from dataclasses import dataclass


ACTORS, OTHER, CORES, IN_SERIES = "actors", "other", "cores", "in series"
"""What binds a device of several units (:meth:`DeviceWork.binding`)."""


@dataclass
class DeviceWork:
    """The work per sample an overlapped plan puts on one physical device, by the processes that do it.

    The actor processes each run their share of every replicable kernel's calls in turn (``actor_s``: one
    actor's work per sample); one more process runs the other kernels on the device in turn (``other_s``: the
    learner's, the replay's); ``core_s`` is the core-seconds of both (a replicable kernel's calls over all its
    replicas; a threaded kernel's latency at ``j`` threads times ``j``).

        >>> work = DeviceWork(); work.add(40e-6, replicable=True, count=1); work.add(25e-6, False, 1)
        >>> round(work.busy_s(units=2) * 1e6), round(work.busy_s(units=1) * 1e6)
        (40, 65)
    """

    actor_s: float = 0.0
    other_s: float = 0.0
    core_s: float = 0.0
    actors: int = 0
    threads: int = 0
    """Threads of the threaded kernels running more than one (0 when none does)."""

    def add(self, load: float, replicable: bool, count: int) -> None:
        """A kernel's busy seconds per sample on this device; ``count``: its replicas on the device, or its
        threads (a non-replicable kernel)."""
        self.core_s += load * count
        if replicable:
            self.actor_s += load
            self.actors = max(self.actors, count)
        else:
            self.other_s += load
            self.threads += count if count > 1 else 0

    def oversubscribed(self, units: int) -> bool:
        """Whether a multi-threaded kernel's threads share cores with the actors: its threads then wait for
        an actor at every parallel section (docs/optimizer.md), so nothing on the device overlaps."""
        return self.threads > 1 and self.actors + self.threads > units

    def busy_s(self, units: int) -> float:
        """Seconds per sample the device needs: each process's own work in series, and the cores' share of
        all of it (an OS shares ``units`` cores among more processes); everything in series when
        oversubscribed. One unit: the sum of the work (every process takes turns)."""
        if self.oversubscribed(units):
            return self.actor_s + self.other_s
        return max(self.actor_s, self.other_s, self.core_s / units)

    def binding(self, units: int) -> str:
        """What sets :meth:`busy_s`: ``in series`` (oversubscribed), ``actors`` (one actor's work), ``other`` (the
        other process's) or ``cores`` (more processes than cores: their work over the cores)."""
        if self.oversubscribed(units):
            return IN_SERIES
        parts = {ACTORS: self.actor_s, OTHER: self.other_s, CORES: self.core_s / units}
        return max(parts, key=parts.get)

    def unit_busy_s(self, units: int) -> float:
        """Core-seconds per sample over the cores the processes use at once (the actors, and the other
        process's threads), at most ``units``."""
        used = self.actors + (max(self.threads, 1) if self.other_s > 0 else 0)
        return self.core_s / max(min(used, units), 1)
