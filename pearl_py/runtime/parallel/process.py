"""What every child process of a run does first and last: the shared process boilerplate.

Actors and servers start with ``spawn``, ignore Ctrl-C (the learner process decides how
the run ends and stops them), die with their parent (``PR_SET_PDEATHSIG``), run with a
fixed number of torch threads, and leave their traceback in a file the supervisor reads
when they fail. :func:`idle` is their shared back-off while they wait on shared memory.

Example (the body of an actor or server entry point)::

    >>> def run_server(spec):
    ...     with child_process(spec.error_file, threads=1):
    ...         serve(spec)
"""
from __future__ import annotations

import contextlib
import ctypes
import signal
import sys
import time
import traceback
from collections.abc import Iterator
from multiprocessing import shared_memory
from pathlib import Path

import torch

SPIN_POLLS = 64
"""Polls that only yield the CPU before :func:`idle` starts sleeping."""
SLEEP_S = 0.0002
"""Sleep per poll after the spinning polls (Linux adds its timer slack, ~50 us)."""


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
    torch.set_num_threads(threads)
    try:
        yield
    except BaseException:
        Path(error_file).write_text(traceback.format_exc())
        raise


def idle(polls: int) -> int:
    """Back off after ``polls`` fruitless polls in a row; returns ``polls + 1`` (reset it to 0 on progress)."""
    if polls < SPIN_POLLS:
        time.sleep(0)
    else:
        time.sleep(SLEEP_S)
    return polls + 1


def unlink_segment(name: str) -> None:
    """Remove shared-memory segment ``name`` if it still exists (a crashed child's leftover)."""
    try:
        segment = shared_memory.SharedMemory(name=name)
    except FileNotFoundError:
        return
    segment.close()
    segment.unlink()
