"""A second process beside a measurement: an actor of the parallel runtime waiting for room, or a busy loop.

A learner update at more than one thread is timed beside an actor-like process, what it shares the machine with
in every parallel run (docs/cost-models.md §2; docs/kernels.md, "The learner update at two threads"). The context
returns only once the neighbour runs its loop: its start-up is never inside a timed pass.

Example::

    >>> with neighbour("actor") as beside:
    ...     assert beside.ready.is_set()          # started before any timing
    ...     seconds = time_call(call, clock=time.perf_counter)
"""
from __future__ import annotations

import contextlib
import multiprocessing as mp
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

KINDS = ("actor", "spin", "light")
WORK_EVERY_S = 6.8e-3
"""An actor-like neighbour works once per this long: one DDPG zoo update (fused, one thread, this VM)."""
WORK_S = 30e-6
"""...for this long: one Pendulum step and one fused act."""
LIGHT_SLEEP_S, LIGHT_SPIN_S = 5e-3, 0.5e-3
"""A light neighbour (an editor, a browser, a test run: about a tenth of a core) sleeps this long, then spins this
long, in a loop: the neighbour a calibration's spread is measured beside (issue 27)."""
READY_TIMEOUT_S = 120.0
"""Longest wait for the neighbour to start (a spawned interpreter importing torch; seconds under load)."""
STOP_TIMEOUT_S = 60.0
"""Longest wait for a started neighbour to stop before it is killed."""


def _run(kind: str, stop: Any, ready: Any) -> None:
    ready.set()  # the loop starts now: everything before was start-up
    if kind == "spin":
        while not stop.is_set():
            pass
        return
    sleep_s, spin_s = (LIGHT_SLEEP_S, LIGHT_SPIN_S) if kind == "light" else (WORK_EVERY_S, WORK_S)
    while not stop.wait(sleep_s):  # an actor's doorbell rings once per update
        start = time.perf_counter()
        while time.perf_counter() - start < spin_s:
            pass


class NeighbourNotStarted(RuntimeError):
    """The neighbour did not start in time: the machine is too busy to time anything beside another process (the
    profile refuses that multi-thread model, as it refuses one the load distorts)."""


@dataclass(frozen=True)
class Neighbour:
    """The running neighbour: its process and the event it set when its loop began."""

    process: Any
    ready: Any


@contextlib.contextmanager
def neighbour(kind: str = "actor", ready_timeout_s: float = READY_TIMEOUT_S) -> Iterator[Neighbour]:
    """Run a neighbour process (``actor``: wakes once per ``WORK_EVERY_S`` and works ``WORK_S``; ``spin``:
    never sleeps; ``light``: sleeps ``LIGHT_SLEEP_S`` and spins ``LIGHT_SPIN_S`` in a loop) meanwhile; enters once it runs its loop (:class:`NeighbourNotStarted` if not within ``ready_timeout_s``)."""
    if kind not in KINDS:
        raise ValueError(f"neighbour kind must be one of {KINDS}, got {kind!r}")
    ctx = mp.get_context("spawn")
    stop, ready = ctx.Event(), ctx.Event()
    proc = ctx.Process(target=_run, args=(kind, stop, ready), daemon=True)
    proc.start()
    try:
        if not ready.wait(ready_timeout_s):
            raise NeighbourNotStarted(f"the {kind} neighbour process did not start within {ready_timeout_s:g} s: "
                                     "the machine is too busy to calibrate at more than one thread")
        yield Neighbour(proc, ready)
    finally:
        stop.set()
        proc.join(STOP_TIMEOUT_S)
        if proc.is_alive():
            proc.kill()
            proc.join()
