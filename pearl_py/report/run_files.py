"""What a run's folder adds to its report, beside ``result.json``: the learning curve (episodes.csv), the loss
and exploration curves (train.csv), the hyperparameters (policy.json), the best evaluated policy
(best_policy.json), and when and by which command the report was written.

Example::

    >>> record = run_record(Path("runs/dqn"), result.to_dict())
    >>> record["train_curves"]["loss_q"][-1]
    (50000, 0.0132)
    >>> record["provenance"]["command"]
    'pearl run examples/configs/dqn_cartpole.yaml --auto --out runs/dqn'
"""
from __future__ import annotations

import datetime
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from pearl_py.report.curve import MAX_POINTS, learning_curve, session_rows, thin
from pearl_py.version import __version__

TRAIN_CURVE_PREFIXES = ("loss_", "exploration_rate")
"""The train.csv columns the report draws: the algorithm's losses (on-policy: with the entropy, approx_kl,
clip_fraction and learning rate, logged beside them) and the exploration rate."""


def train_curves(run_dir: Path, max_points: int = MAX_POINTS) -> dict[str, list[tuple[int, float]]]:
    """``{column: [(step, value), ...]}`` of train.csv's loss and exploration columns (measured), every session's
    rows in order, at most ``max_points`` per column; empty cells (a loss not computed that round) left out."""
    curves: dict[str, list[tuple[int, float]]] = {}
    for row in session_rows(Path(run_dir), "train.csv"):
        for column, cell in row.items():
            if column.startswith(TRAIN_CURVE_PREFIXES) and cell not in ("", None):
                curves.setdefault(column, []).append((int(row["step"]), float(cell)))
    return {column: thin(points, max_points) for column, points in curves.items()}


def command_line(argv: list[str] | None = None) -> str:
    """The command that ran, as a shell would take it: ``pearl run ...`` for the CLI, else the script and its
    arguments (``python -m pearl_py.cli`` runs show as ``pearl``)."""
    argv = list(sys.argv if argv is None else argv)
    if not argv:
        return ""
    first = Path(argv[0])
    program = "pearl" if first.name == "pearl" or (first.name == "__main__.py" and first.parent.name == "cli") \
        else f"python {argv[0]}" if first.suffix == ".py" else argv[0]
    return " ".join([program, *(shlex.quote(a) for a in argv[1:])])


def _json(file: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(file.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def run_record(run_dir: Path, result: dict[str, Any]) -> dict[str, Any]:
    """``result`` (a result.json dict) with what the run folder holds for the report: ``learning_curve``,
    ``train_curves``, ``hyperparameters`` (policy.json's config), ``best_policy`` (best_policy.json's
    ``best_evaluation``, None without one) and ``provenance`` (pearl_py version, date, command line)."""
    run_dir = Path(run_dir)
    policy = _json(run_dir / "policy.json") or {}
    best = _json(run_dir / "best_policy.json") or {}
    provenance = {"pearl_py_version": __version__, "command": command_line(),
                  "written": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    return result | {"learning_curve": learning_curve(run_dir), "train_curves": train_curves(run_dir),
                     "hyperparameters": policy.get("config", {}), "best_policy": best.get("best_evaluation"),
                     "provenance": provenance}
