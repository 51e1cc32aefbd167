"""What the runtime's child processes cost on this machine: starting one, and one handshake with it.

The start timed is a spawned process importing both actor modules and signalling that its loop may start (the
fastest of ``repeats``: ``calibration.meta["process_start_s"]``); the child then answers ``HANDSHAKES`` wake-ups
through the runtime's :class:`~pearl_py.runtime.parallel.process.Doorbell` (the median round trip:
``calibration.meta["round_trip_s"]``). Why and how they are charged: docs/cost-models.md §8.

Example::

    >>> times = time_child_process(repeats=2)      # ~1.6 s and ~0.1 ms on the 2-core VM
    >>> calibration.meta[PROCESS_START_KEY], calibration.meta[ROUND_TRIP_KEY] = times.start_s, times.round_trip_s
"""
from __future__ import annotations

import multiprocessing as mp
import statistics
import time
from dataclasses import dataclass
from typing import Any

START_TIMEOUT_S = 120.0
"""Longest wait for one timed process to start (a busy machine); past it the figures are not recorded."""
HANDSHAKES = 200
"""Round trips timed with each child."""
WAIT_S = 5.0
"""Longest wait for one answer of the child."""


@dataclass(frozen=True)
class ChildTimes:
    """The fastest start of a child process and the median round trip of a handshake with it, in seconds."""

    start_s: float
    round_trip_s: float


def _child(ready: Any, ping: Any, pong: Any) -> None:
    """The timed child: what an actor imports before its loop, the signal, then an answer to every wake-up."""
    import pearl_py.runtime.parallel.actor  # noqa: F401  the off-policy actor's imports
    import pearl_py.runtime.parallel.on_policy_actor  # noqa: F401  the on-policy actor's

    ready.set()
    for _ in range(HANDSHAKES):
        if not ping.wait(WAIT_S):
            return
        pong.ring()


def time_child_process(repeats: int = 2) -> ChildTimes | None:
    """Fastest wall seconds from spawning a process to its signal over ``repeats`` starts, and the median round trip
    of a wake-up and its answer (None if a child did not start or answer in time)."""
    from pearl_py.runtime.parallel.process import Doorbell

    ctx = mp.get_context("spawn")
    best, trips = None, []
    for _ in range(repeats):
        ready, ping, pong = ctx.Event(), Doorbell(), Doorbell()
        proc = ctx.Process(target=_child, args=(ready, ping, pong), daemon=True)
        start = time.perf_counter()
        proc.start()
        try:
            if not ready.wait(START_TIMEOUT_S):
                return None
            seconds = time.perf_counter() - start
            for _ in range(HANDSHAKES):
                sent = time.perf_counter()
                ping.ring()
                if not pong.wait(WAIT_S):
                    return None
                trips.append(time.perf_counter() - sent)
        finally:
            proc.join(START_TIMEOUT_S)
            if proc.is_alive():
                proc.kill()
                proc.join()
        best = seconds if best is None else min(best, seconds)
    return ChildTimes(best, statistics.median(trips))
