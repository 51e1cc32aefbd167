"""A second process beside a measurement: an actor of the parallel runtime waiting for room, or a busy loop.

A learner update at more than one thread is timed with an actor-like process running, because
that is what it shares the machine with in every parallel run: the actor sleeps on its doorbell
until the learner raises the rate limiter's limit (once per update at the DDPG zoo's one update
per step), then works ~30 us (Pendulum's step and the fused act) and sleeps again. Each wake-up
may take a core from one of the update's threads, and the other thread then waits for it at the
next GEMM; timing without the actor overstated the 2-thread gain (docs/kernels.md).

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


def _run(kind: str, stop) -> None:
    if kind == "spin":
        while not stop.is_set():
            pass
        return
    while not stop.wait(WORK_EVERY_S):  # the doorbell rings once per update
        start = time.perf_counter()
        while time.perf_counter() - start < WORK_S:
            pass


@contextlib.contextmanager
def neighbour(kind: str = "actor") -> Iterator[None]:
    """Run a neighbour process (``actor``: wakes once per ``WORK_EVERY_S`` and works ``WORK_S``; ``spin``:
    never sleeps) meanwhile."""
    if kind not in KINDS:
        raise ValueError(f"neighbour kind must be one of {KINDS}, got {kind!r}")
    ctx = mp.get_context("spawn")
    stop = ctx.Event()
    proc = ctx.Process(target=_run, args=(kind, stop), daemon=True)
    proc.start()
    try:
        yield
    finally:
        stop.set()
        proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join()
