"""Files written whole or not at all: a crash never leaves a half-written result behind.

Example::

    >>> atomic_write_text(Path("out/result.json"), json.dumps(result))
"""
from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

from pearl_py.errors import DISK_FULL_ERRNOS, DiskFull

TMP_SUFFIX = ".tmp"
"""Suffix of the temporary file a write goes to before its rename (``.<name>.<random>.tmp``)."""


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, fsync it, then rename it into place.

    The file gets the permissions any file the user creates gets (``0666`` less the umask), as ``open`` would
    give it; ``tempfile.mkstemp`` would leave it ``0600``. A full disk (or quota) is a
    :class:`~pearl_py.errors.DiskFull` naming ``path``; the earlier file of that name, if any, is left whole.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = _create_beside(path)
    except OSError as exc:
        raise _disk_full(path, exc) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _disk_full(path, exc) from None
        raise


def _disk_full(path: Path, exc: OSError) -> OSError | DiskFull:
    """``exc`` as a :class:`DiskFull` naming ``path`` when it says the disk is full; else ``exc`` itself."""
    return DiskFull(path, exc) if exc.errno in DISK_FULL_ERRNOS else exc


def _create_beside(path: Path) -> tuple[int, str]:
    """A new, empty temporary file ``.<name>.<random>.tmp`` beside ``path``, created with mode 0666 (the
    umask applies), opened for writing."""
    for _ in range(100):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}{TMP_SUFFIX}"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666), str(tmp)
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def atomic_write_json(path: Path, data: Any) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=False) + "\n")
