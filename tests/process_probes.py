"""Leak probes the tests share: this process's live and unreaped children, and its shared-memory segments.

Example::

    before = children()
    ...                                   # a run, a refused command
    assert children() - before == set() and zombies() == set() and shm_segments() == set()
"""
from __future__ import annotations

import os
from multiprocessing import resource_tracker
from pathlib import Path


def _child_states() -> dict[int, str]:
    """The state letter (``/proc/PID/stat``: R, S, Z, ...) of each child process of this one, by pid."""
    states = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:  # exited while listed
                continue
            if int(fields[1]) == os.getpid():
                states[int(entry.name)] = fields[0]
    return states


def children(tracker: bool = False) -> set[int]:
    """Pids of this process's live child processes. Multiprocessing's resource tracker lives as long as the
    interpreter (pytest's), started by whichever spawn comes first, so it counts only with ``tracker=True``."""
    live = {pid for pid, state in _child_states().items() if state != "Z"}
    return live if tracker else live - {resource_tracker._resource_tracker._pid}


def zombies() -> set[int]:
    """Pids of this process's children that exited and were never reaped."""
    return {pid for pid, state in _child_states().items() if state == "Z"}


def shm_segments() -> set[str]:
    """Shared-memory segments of pearl_py runs started by this process."""
    return {p.name for p in Path("/dev/shm").glob(f"pearl-{os.getpid()}-*")}
