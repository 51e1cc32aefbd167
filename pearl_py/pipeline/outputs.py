"""Output and resume folders, checked before any work: usable, not an earlier run's unless asked, not finished.

* :func:`check_output_dir`: ``--out`` must be a folder this user can create or write, outside ``/proc`` and
  ``/sys``; a file, a path under a file, a read-only or foreign folder is a :class:`UserError` naming the
  path and the reason.
* :func:`check_run_dir`: a folder that already holds files is not a new run's unless ``overwrite`` (the CLI's
  ``--overwrite``): pearl_py refuses rather than writing a numbered folder beside it (as the zoo does),
  because the user named this folder (or the default ``runs/<config>-seed<S>``) and scripts read results
  from it; a silent ``-2`` would leave them reading the old run.
* :func:`clear_run_state` (with ``overwrite``, once every check passed and just before the run starts):
  removes everything an earlier run wrote (``RUN_STATE``: result, policy, checkpoints, logs, plan and report,
  ``sessionN/``), so no stale file sits beside the new run's; files of the user's own are kept.
* :func:`claim_run_dir`: the one rule of the CLI and ``pearl.train`` for a run's folder: it is locked for the
  run (``.pearl-run.lock``, an ``flock`` that names the holder's pid; the lock of a dead process is free, so
  it is taken over), a second run into it is refused naming that pid, an earlier run's folder is refused
  unless ``overwrite``, and :meth:`RunFolder.clear` clears it only once every other check passed.
* :func:`check_resume_dir`: ``--resume DIR`` must hold an interrupted run (its checkpoint); a finished one
  (its ``result.json``) is reported and left as it is.

Example::

    >>> check_output_dir(Path("/proc/runs"))
    UserError: --out /proc/runs: under /proc, a kernel file system that holds no files of yours
    >>> check_run_dir(Path("runs/dqn"), overwrite=False)
    UserError: --out runs/dqn: the folder already holds a run (result.json, train.csv, ...); pass --overwrite ...
    >>> check_resume_dir(Path("runs/dqn"))      # a finished run: its result.json data
    {'algorithm': 'dqn', 'env': 'CartPole-v1', 'env_steps': 50000, ...}
    >>> with claim_run_dir(Path("runs/dqn"), overwrite=True) as folder:   # while another run writes there
    UserError: --out runs/dqn: a run of process 4121 is writing there (runs/dqn/.pearl-run.lock); ...
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pearl_py.errors import UserError
from pearl_py.runtime.parallel.checkpoint import checkpoint_dir

KERNEL_TREES = (Path("/proc"), Path("/sys"))
"""Kernel file systems: nothing of a run can be written there."""
RESULT_FILE = "result.json"
RUN_STATE = (RESULT_FILE, "checkpoint", "checkpoints", "tensorboard", "policy.pt", "policy.json", "best_policy.pt",
             "best_policy.json", "episodes.csv", "train.csv", "plan.yaml", "plan.json", "prediction.json", "report.md",
             "report.html")
"""What :func:`clear_run_state` removes (with every ``sessionN`` folder): all a run writes."""
LOCK_FILE = ".pearl-run.lock"
"""The lock of a run's folder (:func:`claim_run_dir`); it holds the pid of the run's process."""


@dataclass(frozen=True)
class FolderFlags:
    """How errors name the output folder and the overwrite switch: the CLI's flags or ``pearl.train``'s arguments."""

    out: str = "--out"
    overwrite: str = "--overwrite"


PYTHON_FLAGS = FolderFlags("out", "overwrite=True")
SHOWN = 4
"""Names of existing files an error lists."""


def check_output_dir(path: str | Path, flag: str = "--out") -> Path:
    """``path`` as given, when it is (or can be made) a folder this user may write files in; else a UserError."""
    path = Path(path)
    try:
        resolved = path.resolve()
        for tree in KERNEL_TREES:
            if resolved == tree or tree in resolved.parents:
                raise UserError(f"{flag} {path}: under {tree}, a kernel file system that holds no files of yours")
        if path.exists() and not path.is_dir():
            raise UserError(f"{flag} {path}: a file, not a folder")
        existing = resolved
        while not existing.exists():
            existing = existing.parent
    except OSError as exc:  # a parent this user may not even look into
        raise UserError(f"{flag} {path}: cannot be inspected ({exc.strerror})") from None
    if not existing.is_dir():
        raise UserError(f"{flag} {path}: {existing} is a file, so no folder can be made under it")
    if not os.access(existing, os.W_OK | os.X_OK):
        what = "the folder" if existing == resolved else f"{existing}, where it would be made,"
        raise UserError(f"{flag} {path}: {what} is not writable by this user (or is on a read-only file system)")
    return path


def check_run_dir(path: str | Path, overwrite: bool, flags: FolderFlags = FolderFlags()) -> Path:
    """:func:`check_output_dir`, and unless ``overwrite``: the folder is new or empty (but for its lock)."""
    flag = flags.out
    path = check_output_dir(path, flag)
    present = sorted(p.name for p in path.iterdir() if p.name != LOCK_FILE) if path.is_dir() else []
    if present and not overwrite:
        ours = [name for name in present if _is_run_state(name) or name.endswith((".csv", ".md", ".html"))]
        what = "a run" if ours else "other files"
        shown = ", ".join(present[:SHOWN]) + (", ..." if len(present) > SHOWN else "")
        raise UserError(f"{flag} {path}: the folder already holds {what} ({shown}); pass {flags.overwrite} to "
                        f"replace the run in it, or choose another {flag}")
    return path


@dataclass
class RunFolder:
    """A run's output folder, locked for the run by :func:`claim_run_dir`."""

    path: Path
    overwrite: bool
    """Whether :meth:`clear` removes an earlier run's files (``overwrite``, and not a resume in place)."""

    def clear(self) -> list[str]:
        """Once every check passed, just before the run starts: remove an earlier run's files (when overwriting)."""
        return clear_run_state(self.path) if self.overwrite else []


@contextlib.contextmanager
def claim_run_dir(path: str | Path, *, overwrite: bool, continues: bool = False,
                  flags: FolderFlags = FolderFlags()) -> Iterator[RunFolder]:
    """Hold ``path`` for one run: usable (:func:`check_output_dir`), locked against a second run (a UserError
    naming the pid of the run in it), and, unless the run ``continues`` there (a resume in place), holding no
    earlier run unless ``overwrite``. The lock is released on leaving; the folders this call made (``path`` and
    parents) are removed again when the run left nothing in them (an error before it started)."""
    path = check_output_dir(path, flags.out)
    made = [folder for folder in (path, *path.parents) if not folder.exists()]  # the leaf first
    path.mkdir(parents=True, exist_ok=True)
    fd = None
    try:
        fd = _lock(path, flags.out)
        if not continues:
            check_run_dir(path, overwrite, flags)
        yield RunFolder(path, overwrite and not continues)
    finally:
        if fd is not None:
            (path / LOCK_FILE).unlink(missing_ok=True)  # before the unlock: a waiting run then locks a new file
            os.close(fd)
        for folder in made:
            if not folder.is_dir() or any(folder.iterdir()):
                break
            folder.rmdir()


def _lock(path: Path, flag: str) -> int:
    """An open descriptor of ``path/LOCK_FILE`` holding its ``flock`` and this process's pid; a UserError naming
    the holder's pid when another process holds it. The kernel drops the lock of a process that died, so a
    stale lock file is simply locked again (taken over)."""
    file = path / LOCK_FILE
    while True:
        fd = os.open(file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise UserError(f"{flag} {path}: a run of process {holder} is writing there ({file}); wait for it to "
                            f"end or choose another {flag}") from None
        try:
            current = os.stat(file).st_ino
        except FileNotFoundError:
            current = None
        if current != os.fstat(fd).st_ino:  # its holder removed it as we opened it: lock the new one
            os.close(fd)
            continue
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        return fd


def clear_run_state(path: str | Path) -> list[str]:
    """Remove an earlier run's state from ``path`` (see the module docstring); the names removed."""
    path = Path(path)
    if not path.is_dir():
        return []
    removed = []
    for entry in sorted(path.iterdir()):
        if not _is_run_state(entry.name):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
        removed.append(entry.name)
    return removed


def check_resume_dir(path: str | Path) -> dict[str, Any] | None:
    """None when ``path`` holds an interrupted run's checkpoint; the ``result.json`` data when it holds a
    finished run (``--resume`` then changes nothing); a UserError when it holds neither."""
    path = Path(path)
    if not path.is_dir():
        raise UserError(f"--resume {path}: " + ("a file, not a run folder" if path.exists() else "no such folder"))
    result = path / RESULT_FILE
    if result.is_file():
        try:
            data = json.loads(result.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise UserError(f"--resume {path}: {result} is not a result pearl_py wrote ({exc})") from None
        if not isinstance(data, dict) or not {"algorithm", "env", "seed", "env_steps"} <= set(data):
            raise UserError(f"--resume {path}: {result} is not a result pearl_py wrote (it lacks algorithm, env, "
                            "seed or env_steps)")
        return data
    checkpoint = checkpoint_dir(path) / "checkpoint.pt"
    if not checkpoint.is_file():
        raise UserError(f"--resume {path}: no checkpoint there ({checkpoint}): only an interrupted run can be "
                        "resumed (a parallel run's stop checkpoint, or a periodic one: checkpoint_freq)")
    return None


def _is_run_state(name: str) -> bool:
    return name in RUN_STATE or (name.startswith("session") and name[len("session"):].isdigit())
