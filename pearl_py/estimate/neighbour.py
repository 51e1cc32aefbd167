"""A second process beside a measurement: an actor of the parallel runtime waiting for room, or a busy loop.

A learner update at more than one thread is timed with an actor-like process running, because
that is what it shares the machine with in every parallel run: the actor wakes every
``WAIT_S`` (the runtime actor's polling interval while the rate limiter holds it back) and works
~30 us per update (DDPG's Pendulum step and fused act). Each wake-up may take a core from one
of the update's threads, and the other thread then waits for it at the next GEMM; timing
without the actor overstated the 2-thread gain (docs/kernels.md).

Example::

    >>> with neighbour("actor"):
    ...     seconds = time_call(call, clock=time.perf_counter)
"""
from __future__ import annotations

import contextlib
import multiprocessing as mp
import time
from collections.abc import Iterator

KINDS = ("actor", "spin")
WORK_EVERY_S = 6.8e-3
"""An actor-like neighbour works once per this long: one DDPG zoo update (fused, one thread, this VM)."""
WORK_S = 30e-6
"""...for this long: one Pendulum step and one fused act."""


def _run(kind: str, stop, wake_s: float) -> None:
    next_work = time.perf_counter()
    while not stop.is_set():
        if kind == "spin":
            continue
        time.sleep(wake_s)
        now = time.perf_counter()
        if now >= next_work:
            while time.perf_counter() - now < WORK_S:
                pass
            next_work = now + WORK_EVERY_S


@contextlib.contextmanager
def neighbour(kind: str = "actor") -> Iterator[None]:
    """Run a neighbour process (``actor``: wakes every actor ``WAIT_S``; ``spin``: never sleeps) meanwhile."""
    if kind not in KINDS:
        raise ValueError(f"neighbour kind must be one of {KINDS}, got {kind!r}")
    from pearl_py.runtime.parallel.actor import WAIT_S

    ctx = mp.get_context("spawn")
    stop = ctx.Event()
    proc = ctx.Process(target=_run, args=(kind, stop, WAIT_S), daemon=True)
    proc.start()
    try:
        yield
    finally:
        stop.set()
        proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join()
