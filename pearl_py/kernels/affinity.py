"""Pin a multi-threaded learner update's threads to cores of their own (Linux).

A 2-thread update splits every GEMM between two threads that meet at its end. Unpinned, the
scheduler may put both on one core when another process wakes on the other (an actor taking
its step), and they stay there until the next load balancing (measured in docs/kernels.md, "The
learner update at two threads"). So while a learner runs ``n > 1`` threads, the calling thread (the one
that runs the update: it is the OpenMP master) is pinned to the first usable core and every
other thread of the process (torch's OpenMP workers, OpenBLAS's) to the other usable cores.
The other processes of the run stay free to run on any core: they may take the learner's
cores briefly, but never move its threads onto one core.

Children started while pinned inherit the caller's single core; :func:`release_child`
(called by every pearl_py child process at start) gives them every usable core again.

Example::

    >>> torch.set_num_threads(2)
    >>> with pinned_threads(2) as pinned:      # True where the platform allows pinning
    ...     for batch in batches:
    ...         update(batch)
"""
from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

import torch

from pearl_py.errors import UserError

CPUS_ENV = "PEARL_CPUS"
"""Usable cores before a learner pinned itself, for the children it starts meanwhile (comma separated)."""


def can_pin() -> bool:
    return hasattr(os, "sched_setaffinity") and os.path.isdir("/proc/self/task")


def usable_cpus() -> list[int]:
    """Cores this process may use: those recorded by a pinned parent, else its own affinity."""
    recorded = os.environ.get(CPUS_ENV)
    if recorded:
        try:
            return [int(c) for c in recorded.split(",")]
        except ValueError:
            raise UserError(f"environment variable {CPUS_ENV}={recorded!r}: expected comma-separated core numbers "
                            "such as '0,1' (pearl_py sets it for the processes a pinned learner starts; unset it)") \
                from None
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))


def _threads() -> list[int]:
    return [int(tid) for tid in os.listdir("/proc/self/task")]


def _set(tid: int, cpus: set[int]) -> None:
    try:
        os.sched_setaffinity(tid, cpus)
    except OSError:
        pass  # the thread ended meanwhile, or the system forbids these cores: it stays as it was


def _get(tid: int) -> set[int] | None:
    try:
        return os.sched_getaffinity(tid)
    except OSError:
        return None  # the thread ended meanwhile


def _start_workers() -> None:
    """Make torch's OpenMP team exist (it is started lazily, by the first parallel op)."""
    a = torch.ones(256, 256)
    with torch.no_grad():
        a @ a


@contextlib.contextmanager
def pinned_threads(n: int) -> Iterator[bool]:
    """Pin the calling thread to the first usable core and the process's other threads to the others
    meanwhile (yields whether it did).

    Nothing happens (yields False) for one thread, where pinning is not supported, or with
    fewer than ``n`` usable cores. Every thread's affinity is restored on exit, also when the
    body (or the pinning itself) raises; a core the system refuses leaves a thread as it was.
    """
    cpus = usable_cpus() if can_pin() else []
    if n <= 1 or len(cpus) < n:
        yield False
        return
    _start_workers()
    me = threading.get_native_id()
    recorded = os.environ.get(CPUS_ENV)
    before: dict[int, set[int]] = {}
    try:
        before = {tid: cores for tid in _threads() if (cores := _get(tid)) is not None}
        os.environ[CPUS_ENV] = ",".join(map(str, cpus))
        for tid in before:
            _set(tid, {cpus[0]} if tid == me else set(cpus[1:]))
        yield True
    finally:
        for tid in _threads():
            _set(tid, before.get(tid, set(cpus)))
        if recorded is None:
            os.environ.pop(CPUS_ENV, None)
        else:
            os.environ[CPUS_ENV] = recorded


def release_child() -> None:
    """In a child process: every usable core again (a pinned parent's single core is inherited)."""
    if can_pin() and os.environ.get(CPUS_ENV):
        for tid in _threads():  # OpenBLAS started its threads at import, on the inherited core
            _set(tid, set(usable_cpus()))


class LearnerThreads:
    """The threads a process's learner runs, changeable between updates: torch's intra-op threads, scipy's
    OpenBLAS threads (the fused kernels' small GEMMs) and the pinning of :func:`pinned_threads`, set together.

    A run's monitor (:mod:`pearl_py.runtime.monitor`) moves a learner between thread counts with it; the
    executor sets torch's threads to the plan's count, enters it (pinning them as :func:`pinned_threads`) and leaves
    it when the run ends (the pinning undone). ``pin=False`` (a Ray learner worker, whose node's cores other workers
    share) sets the threads without pinning them.

    Example::

        >>> with LearnerThreads(2) as threads:
        ...     update(batch)          # 2 threads, pinned
        ...     threads.set(1)
        ...     update(batch)          # 1 thread, unpinned
    """

    def __init__(self, n: int, pin: bool = True) -> None:
        self.n, self.pin = n, pin
        self._pinning: contextlib.ExitStack | None = None

    def set(self, n: int) -> None:
        """Run ``n`` threads from now on (nothing happens at the current count)."""
        if n == self.n and (self._pinning is not None or not self.pin):
            return
        self._unpin()
        if n != self.n:  # entered at the count the executor set; the kernels set scipy's BLAS to it when built
            torch.set_num_threads(n)
            from pearl_py.kernels.numba_blas import numba_available, set_blas_threads

            if numba_available()[0]:
                set_blas_threads(n)
        self.n = n
        if self.pin:
            self._pinning = contextlib.ExitStack()
            self._pinning.enter_context(pinned_threads(n))

    def _unpin(self) -> None:
        if self._pinning is not None:
            self._pinning.close()
            self._pinning = None

    def __enter__(self) -> LearnerThreads:
        self.set(self.n)
        return self

    def __exit__(self, *exc: object) -> None:
        self._unpin()
