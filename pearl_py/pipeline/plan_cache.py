"""The ``auto`` plan a run made, kept for the next run with the same inputs (``pearl run --auto``).

An ``auto`` plan is a function of the algorithm (class, env, config), the run's length and objective, this machine's
platform and cached calibration, and pearl_py's own code and data. A run whose inputs all hash as an earlier run's
reuses the plan that run made, read from ``$PEARL_CACHE_DIR/plans/plan-<key>.pickle``, instead of deriving the protocol
(a probe learner) and solving the assignment again; any change of an input is another key, so a new plan. The key
folds in:

- the algorithm's class, env id, config and env spec (their ``repr``; an algorithm whose ``repr`` holds an object's
  address, such as a function, is never reused);
- ``objective``, ``total_steps``, ``one_process``, ``dedicated``;
- the cached calibration's file (named by this machine and install) and bytes (a run that would profile first has
  none: it plans, then keeps);
- the local platform (:meth:`Platform.to_dict` and every device's spec: cores, memory, ...);
- pearl_py's source, device catalogue and estimator files (path, size and modification time of each), and every
  ``PEARL_*`` environment variable.

The plan is kept as the object itself (a pickle, as numba keeps its cache): a reused plan writes plan.yaml, plan.json
and prediction.json byte for byte as the run that made it (``Plan.from_dict`` reads a float field's ``2000`` as
``2000.0``).

Example::

    >>> key = plan_key(algo, "throughput", 50_000, one_process=True, dedicated=False)
    >>> found = reused_plan(key)            # None the first time
    >>> keep_plan(key, plan)                # PosixPath('~/.cache/pearl_py/plans/plan-3f2a....pickle')
    >>> reused_plan(key)[0] == plan
    True
"""
from __future__ import annotations

import hashlib
import json
import os
import pickle
from pathlib import Path
from typing import Any

from pearl_py.fileio import atomic_write_bytes
from pearl_py.plan import Plan
from pearl_py.platform import Platform
from pearl_py.resources import devices_dir, estimators_dir

_PACKAGE = Path(__file__).resolve().parents[1]


def plan_key(algorithm: Any, objective: str, total_steps: int | None, *, one_process: bool,
             dedicated: bool) -> str | None:
    """The hash of every input of ``algorithm``'s ``auto`` plan (module docstring); None where the plan cannot be
    reused: no calibration is cached yet, or the algorithm's ``repr`` is not stable across processes."""
    from pearl_py.estimate.calibration import default_path

    identity = repr((type(algorithm).__module__, type(algorithm).__qualname__, algorithm.env_id, algorithm.config,
                     algorithm.spec))
    calibration = default_path()
    if " at 0x" in identity or not calibration.is_file():
        return None
    platform = Platform.local()
    digest = hashlib.sha256()
    for part in (identity, objective, total_steps, one_process, dedicated, str(calibration),
                 json.dumps(platform.to_dict(), sort_keys=True, default=str), [device.spec for device in platform],
                 _code_stamp(),
                 sorted((name, value) for name, value in os.environ.items() if name.startswith("PEARL_"))):
        digest.update(repr(part).encode() + b"\0")
    digest.update(calibration.read_bytes())
    return digest.hexdigest()[:20]


def _code_stamp() -> list[tuple[str, int, int]]:
    """``(path, size, mtime_ns)`` of every file the planning reads or runs: pearl_py's source and its data."""
    stamp = []
    for folder in (_PACKAGE, devices_dir(), estimators_dir()):
        for root, dirs, files in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith((".py", ".yaml", ".yml", ".json")):
                    status = os.stat(os.path.join(root, name))
                    stamp.append((os.path.join(root, name), status.st_size, status.st_mtime_ns))
    return stamp


def plan_path(key: str) -> Path:
    """Where the plan of ``key`` is kept."""
    from pearl_py.estimate.calibration import cache_dir

    return cache_dir() / "plans" / f"plan-{key}.pickle"


def reused_plan(key: str | None) -> tuple[Plan, Path] | None:
    """The plan kept under ``key`` and its file, or None (none kept, or a file this pearl_py cannot read: it is
    planned again and overwritten)."""
    if key is None:
        return None
    path = plan_path(key)
    try:
        plan = pickle.loads(path.read_bytes())
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError, TypeError):
        return None
    return (plan, path) if isinstance(plan, Plan) else None


def keep_plan(key: str | None, plan: Plan) -> Path | None:
    """Keep ``plan`` under ``key`` (None: not kept) for the next run with the same inputs; returns its file."""
    if key is None:
        return None
    path = plan_path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, pickle.dumps(plan))
    return path
