"""How long the runtime takes to start a child process on this machine: ``pearl profile`` times it once.

Every plan that is not serialized runs actors (and possibly servers) as spawned processes: a fresh
interpreter that imports torch, numba and pearl_py's runtime before its loop runs. On the 2-core VM
this costs 2.0-2.6 s, as much as thousands of env steps, so the whole-run prediction charges it
(:mod:`pearl_py.optimize.whole_run`) and a short run may be faster in one process. The figure timed
here is a spawned process importing both actor modules (the off-policy and the on-policy actor's) and
signalling that its loop may start; the fastest of ``repeats`` starts is kept (others' load only adds
time), stored as ``calibration.meta["process_start_s"]``.

Example::

    >>> seconds = time_process_start(repeats=2)      # ~2.2 on the 2-core VM
    >>> calibration.meta[PROCESS_START_KEY] = seconds
"""
from __future__ import annotations

import multiprocessing as mp
import time
from typing import Any

PROCESS_START_KEY = "process_start_s"
"""``Calibration.meta`` key of the timed process start (seconds)."""
START_TIMEOUT_S = 120.0
"""Longest wait for one timed process to start (a busy machine); past it the figure is not recorded."""


def _imports_then_ready(ready: Any) -> None:
    """The timed child: what an actor imports before its loop, then the signal."""
    import pearl_py.runtime.parallel.actor  # noqa: F401  the off-policy actor's imports
    import pearl_py.runtime.parallel.on_policy_actor  # noqa: F401  the on-policy actor's
    ready.set()


def time_process_start(repeats: int = 2) -> float | None:
    """Fastest wall seconds from spawning a process to its signal over ``repeats`` starts (None if one timed out)."""
    ctx = mp.get_context("spawn")
    best = None
    for _ in range(repeats):
        ready = ctx.Event()
        proc = ctx.Process(target=_imports_then_ready, args=(ready,), daemon=True)
        start = time.perf_counter()
        proc.start()
        try:
            if not ready.wait(START_TIMEOUT_S):
                return None
            seconds = time.perf_counter() - start
        finally:
            proc.join(START_TIMEOUT_S)
            if proc.is_alive():
                proc.kill()
                proc.join()
        best = seconds if best is None else min(best, seconds)
    return best
