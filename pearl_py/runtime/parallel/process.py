"""What every child process of a run does first and last: the shared process boilerplate.

Actors and servers start with ``spawn``, ignore Ctrl-C (the learner process decides how
the run ends and stops them), die with their parent (``PR_SET_PDEATHSIG``), run with a
fixed number of torch threads, and leave their traceback in a file the supervisor reads
when they fail. A :class:`Doorbell` wakes a process waiting on shared memory as soon as
another wrote what it waits for.

Example (the body of an actor or server entry point)::

    >>> def run_server(spec):
    ...     with child_process(spec.error_file, threads=1):
    ...         serve(spec)
"""
from __future__ import annotations

import contextlib
import ctypes
import multiprocessing as mp
import signal
import sys
import traceback
from collections.abc import Iterator
from multiprocessing import shared_memory
from pathlib import Path

import torch

from pearl_py.kernels.affinity import release_child


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (no orphans after a hard kill)."""
    if sys.platform.startswith("linux"):
        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


@contextlib.contextmanager
def child_process(error_file: str, threads: int) -> Iterator[None]:
    """Set up a child process of the run; on an exception write its traceback to ``error_file`` and re-raise."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent()
    release_child()
    torch.set_num_threads(threads)
    try:
        yield
    except BaseException:
        Path(error_file).write_text(traceback.format_exc())
        raise


class Doorbell:
    """A wake-up hint between processes: the writer rings after writing, the reader waits when idle.

    The shared data stays the truth: a ring only ends a wait early, and stale rings only
    cost the reader one more look (``wait`` swallows every ring pending when it wakes).
    A blocked reader is woken by the kernel within microseconds, where polling with
    sleeps costs a millisecond per round trip on a busy machine. Pass it to child
    processes in their spec (it pickles only while a process is being spawned).

    Example::

        >>> bell = Doorbell()
        >>> ring.put(**rows); bell.ring()                 # writer
        >>> while not ring.pending():                     # reader
        ...     bell.wait(0.05)
    """

    def __init__(self) -> None:
        self._sem = mp.get_context("spawn").Semaphore(0)

    def ring(self) -> None:
        """Wake the reader; a ring already pending is enough (rings do not pile up while nobody waits)."""
        try:
            if self._sem.get_value() > 0:
                return
        except NotImplementedError:  # macOS has no sem_getvalue: a pile of rings costs the reader one drain
            pass
        self._sem.release()

    def wait(self, timeout: float) -> None:
        """Return after a ring (swallowing any more pending) or after ``timeout`` seconds."""
        if self._sem.acquire(timeout=timeout):
            while self._sem.acquire(False):
                pass


def unlink_segment(name: str) -> None:
    """Remove shared-memory segment ``name`` if it still exists (a crashed child's leftover)."""
    try:
        segment = shared_memory.SharedMemory(name=name)
    except FileNotFoundError:
        return
    segment.close()
    segment.unlink()
