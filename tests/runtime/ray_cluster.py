"""A real two-raylet Ray cluster on this machine for the Ray backend's tests, as a user starts one.

``ray start --head`` on a free port, a second raylet joined with ``ray start --address`` (each with its own
logical CPUs), both under a temporary folder; when the tests are done, the processes of this cluster alone are
stopped (those whose command line names the folder, and their children): ``ray stop`` would stop every Ray
cluster of the machine, another test run's included. Ray's token
authentication is turned off explicitly (``RAY_AUTH_MODE=disabled``) for both: a head started without
the variable turns it on by itself, and then a raylet or driver that joins by address is refused.

Example (a pytest fixture)::

    >>> with two_raylet_cluster(tmp_path, cpus_per_raylet=2) as address:
    ...     RayExecutor(algo, plan, seed=0, address=address).run(3000)
"""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

START_TIMEOUT_S = 180
STOP_TIMEOUT_S = 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


CLUSTER_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


def _ray(*args: str, timeout: float) -> None:
    cli = Path(sys.executable).with_name("ray")
    done = subprocess.run([str(cli), *args], env={**os.environ, **CLUSTER_ENV}, capture_output=True, text=True,
                          timeout=timeout)
    if done.returncode:
        raise RuntimeError(f"ray {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")


@contextlib.contextmanager
def two_raylet_cluster(tmp: Path, cpus_per_raylet: int = 2) -> Iterator[str]:
    """Start the head and a second raylet; yield the head's address; stop both."""
    port = free_port()
    address = f"127.0.0.1:{port}"
    try:
        _ray("start", "--head", f"--port={port}", f"--num-cpus={cpus_per_raylet}", "--include-dashboard=false",
             f"--temp-dir={tmp}", "--disable-usage-stats", timeout=START_TIMEOUT_S)
        _ray("start", f"--address={address}", f"--num-cpus={cpus_per_raylet}", timeout=START_TIMEOUT_S)
        yield address
    finally:
        _stop_processes_under(tmp)


def _stop_processes_under(tmp: Path) -> None:
    """SIGKILL the processes whose command line names ``tmp`` (this cluster's GCS, raylets, agents) and their
    descendants (its workers), then wait until they are gone."""
    table = {}  # pid -> (parent pid, command line), read from /proc
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                table[int(entry.name)] = (parent, (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
    mine, pid = set(), os.getpid()  # this process and its ancestors are spared, whatever their command line says
    while pid in table and pid not in mine:
        mine.add(pid)
        pid = table[pid][0]
    doomed = {pid for pid, (_, cmdline) in table.items() if str(tmp) in cmdline} - mine
    while True:
        more = {pid for pid, (parent, _) in table.items() if parent in doomed} - doomed - mine
        if not more:
            break
        doomed |= more
    for pid in doomed:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while any(Path(f"/proc/{pid}").exists() and "Z" not in _state(pid) for pid in doomed) and \
            time.monotonic() < deadline:
        time.sleep(0.1)


def _state(pid: int) -> str:
    with contextlib.suppress(OSError, IndexError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return "Z"
