"""What every child process of a run does first and last: the shared process boilerplate.

Children start with ``spawn``, ignore Ctrl-C, die with their parent and leave their traceback in a file the
supervisor reads (:func:`child_process`); a :class:`ProcessGuard` kills them and unlinks the run's segments when the
run's process dies without closing it (docs/runtime.md, "Faults and exits").

Example (the body of an actor or server entry point)::

    >>> def run_server(spec):
    ...     with child_process(spec.error_file, threads=1):
    ...         serve(spec)
    >>> guard = ProcessGuard.start("pearl-1234-ab12cd34")      # the run's process, before any child
    >>> proc.start(); guard.watch(proc.pid)
    >>> guard.close()                                          # the run ended normally: nothing to do
"""
from __future__ import annotations

import contextlib
import ctypes
import logging
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import traceback
from collections.abc import Iterator
from multiprocessing import shared_memory
from multiprocessing.connection import Connection
from pathlib import Path

import torch

from pearl_py.kernels.affinity import release_child


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (no orphans after a hard kill); exit at once if
    the parent already died (this process was re-parented before it got here)."""
    if sys.platform.startswith("linux"):
        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    parent = mp.parent_process()
    if parent is not None and os.getppid() != parent.pid:
        os._exit(EXIT_ORPHANED)


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

    The shared data stays the truth: a ring only ends a wait early, and stale rings only cost the reader one more
    look (``wait`` swallows every ring pending when it wakes); docs/runtime.md, Doorbell. Pass it to child
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

    def wait(self, timeout: float) -> bool:
        """Return after a ring (swallowing any more pending; True) or after ``timeout`` seconds (False)."""
        if not self._sem.acquire(timeout=timeout):
            return False
        while self._sem.acquire(False):
            pass
        return True


GUARD_SOURCE = r"""
import os, signal, sys
for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # the run's process decides; EOF is the only end
    signal.signal(number, signal.SIG_IGN)
shm, prefix, children, done = sys.argv[1], sys.argv[2], {}, False
for line in sys.stdin:
    order, _, argument = line.strip().partition(" ")
    if order == "watch":
        pid, started = argument.split()
        children[int(pid)] = started
    elif order == "done":
        done = True
if not done:
    for pid, started in children.items():
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[19] == started:  # the same process, not a reused pid
                    os.kill(pid, signal.SIGKILL)
        except (OSError, IndexError):
            pass
    try:
        names = os.listdir(shm)
    except OSError:
        names = []
    for name in names:
        if name.startswith(prefix):
            try:
                os.unlink(os.path.join(shm, name))
            except OSError:
                pass
"""
"""The guard's program: orders on stdin (``watch PID STARTTIME``, ``done``); at EOF without
``done`` it SIGKILLs the watched processes still alive and unlinks ``SHM_DIR/PREFIX*``."""

log = logging.getLogger("pearl_py.runtime.parallel")

SHM_DIR = Path("/dev/shm")
EXIT_ORPHANED = 70
"""Exit code of a child that found its parent gone when it started."""


class ProcessGuard:
    """The watchdog of one run's child processes and shared memory; see the module docstring."""

    def __init__(self, process: subprocess.Popen, prefix: str) -> None:
        self._process = process
        self.prefix = prefix

    @classmethod
    def start(cls, prefix: str) -> ProcessGuard:
        """Start the guard of the segments named ``prefix*`` (``-I -S``: no site, no pearl_py, no torch)."""
        process = subprocess.Popen([sys.executable, "-I", "-S", "-c", GUARD_SOURCE, str(SHM_DIR), prefix],
                                   stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, close_fds=True)
        return cls(process, prefix)

    @property
    def pid(self) -> int:
        return self._process.pid

    def watch(self, pid: int) -> None:
        """Kill process ``pid`` (a child just started) should the run's process die without :meth:`close`; only if
        it is still that process (same start time), never a later one given its pid."""
        started = start_time(pid)
        if started is not None:
            self._send(f"watch {pid} {started}")

    def close(self) -> None:
        """The run ended and cleaned up after itself: the guard exits without doing anything. Idempotent."""
        if self._process.stdin is not None and not self._process.stdin.closed:
            self._send("done")
            self._process.stdin.close()
        self._process.wait()

    def _send(self, order: str) -> None:
        try:
            self._process.stdin.write(order + "\n")
            self._process.stdin.flush()
        except (BrokenPipeError, ValueError):  # the guard is gone (killed by someone): nothing left to tell it
            pass


def start_time(pid: int) -> str | None:
    """Process ``pid``'s start time in clock ticks since boot (``/proc/PID/stat`` field 22), None if it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def sweep_stale_segments(prefix: str) -> list[str]:
    """Unlink the segments ``prefix-<pid>-*`` of runs whose process ``pid`` is gone (logged); the names removed."""
    removed = []
    try:
        names = os.listdir(SHM_DIR)
    except OSError:
        return removed
    for name in names:
        owner = name[len(prefix) + 1:].split("-", 1)[0] if name.startswith(prefix + "-") else ""
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            try:
                (SHM_DIR / name).unlink()
                removed.append(name)
            except OSError:  # another user's, or gone meanwhile
                pass
    if removed:
        log.warning("removed %d shared-memory segments of runs that were killed (%s, ...)", len(removed), removed[0])
    return removed


PROBE_TIMEOUT_S = 300.0
"""Longest wait for the memory probe to start and report (its imports take seconds on a busy machine)."""


def measure_child_memory() -> float | None:
    """Private memory (bytes) of a run child that started and imported what an actor imports: what one more
    actor or server costs before it does any work (measured; None where ``/proc`` cannot tell)."""
    context = mp.get_context("spawn")
    reader, writer = context.Pipe(duplex=False)
    proc = context.Process(target=_report_memory, args=(writer,), name="pearl-memory-probe", daemon=True)
    proc.start()
    writer.close()
    try:
        return reader.recv() if reader.poll(PROBE_TIMEOUT_S) else None
    except EOFError:  # the probe died before it reported
        return None
    finally:
        reader.close()
        proc.join(PROBE_TIMEOUT_S)
        if proc.is_alive():
            proc.kill()
            proc.join()
        proc.close()


def _report_memory(writer: Connection) -> None:
    die_with_parent()
    import pearl_py.runtime.parallel.actor  # noqa: F401  (an actor's imports, before it starts)

    torch.set_num_threads(1)
    torch.ones(1).add_(1)  # torch's allocator and thread pool, as every actor's first step sets them up
    writer.send(private_memory_bytes())
    writer.close()


def private_memory_bytes(pid: int | str = "self") -> float | None:
    """Memory of process ``pid`` no other process shares (``Private_Clean + Private_Dirty`` of
    ``/proc/PID/smaps_rollup``, Linux 4.14+); None where it cannot be read."""
    try:
        lines = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in lines if ":" in line)
    try:
        return float(sum(int(fields[k].split()[0]) * 1024 for k in ("Private_Clean", "Private_Dirty")))
    except (KeyError, ValueError, IndexError):
        return None


def unlink_segment(name: str) -> None:
    """Remove shared-memory segment ``name`` if it still exists (a crashed child's leftover)."""
    try:
        segment = shared_memory.SharedMemory(name=name)
    except FileNotFoundError:
        return
    segment.close()
    segment.unlink()
