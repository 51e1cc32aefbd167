"""User-facing errors: one clear message naming what is wrong and where.

The CLI prints a :class:`UserError` as one line and exits with code 2; a
traceback is only ever shown for a bug in pearl_py itself.

Example::

    >>> raise ConfigError("must be > 0, got -3", key="hyperparameters.batch_size",
    ...                   file="dqn.yaml", line=7)
    ConfigError: dqn.yaml:7: hyperparameters.batch_size: must be > 0, got -3
"""
from __future__ import annotations

import errno


class UserError(Exception):
    """A mistake in what the user gave pearl_py (a file, a flag, a value). CLI exit code 2."""

    exit_code = 2


class ConfigError(UserError):
    """A bad value or key in a YAML file, located by file, line and key path."""

    def __init__(self, message: str, *, key: str | None = None, file: str | None = None,
                 line: int | None = None) -> None:
        self.key = key
        self.file = file
        self.line = line
        self.reason = message
        where = ""
        if file:
            where = f"{file}:{line}: " if line else f"{file}: "
        what = f"{key}: " if key else ""
        super().__init__(f"{where}{what}{message}")


class PlanningError(UserError):
    """No plan satisfies the constraints; the message names the kernel and the constraint."""


DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
"""``OSError`` numbers of a full disk or an exhausted quota."""


class DiskFull(UserError):
    """A file could not be written for want of space; the files written before it are complete (atomic writes)."""

    def __init__(self, path: object, exc: OSError) -> None:
        super().__init__(f"cannot write {path}: {exc.strerror or 'no space left on device'}; the files written "
                         "before it are complete, this one was not written (free some space and run again)")
