"""A real two-raylet Ray cluster on this machine for the Ray backend's tests, as a user starts one.

``ray start --head`` on a free port, a second raylet joined with ``ray start --address`` (each with its own
logical CPUs), both under a temporary folder; ``ray stop`` when the tests are done. Ray's token
authentication is turned off explicitly (``RAY_AUTH_MODE=disabled``) for both: a head started without
the variable turns it on by itself, and then a raylet or driver that joins by address is refused.

Example (a pytest fixture)::

    >>> with two_raylet_cluster(tmp_path, cpus_per_raylet=2) as address:
    ...     RayExecutor(algo, plan, seed=0, address=address).run(3000)
"""
from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
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
        _ray("stop", "--force", timeout=STOP_TIMEOUT_S)
