"""A run's kernels in their steady state beside the plan's per-call prediction, from the run's own files.

A report's "measured per call" is the mean over the whole run, its first calls included; this reads the run's
``train.csv`` (each log window's mean ms per call of each kernel) and prints each kernel's median over every window
after the first, beside the per-call figure the plan predicted (``result.json``'s plan, as the report shows it) and
their ratio. docs/gpu.md's steady-state comparison of the lent H200's step d is this script's output.

Run::

    python benchmarks/steady_state.py benchmarks/results/device_check_h200_2026-11-27/d_dqn_minatar
    python benchmarks/steady_state.py runs/dqn
"""
from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from pathlib import Path

from pearl_py.plan import Plan
from pearl_py.report.content import predicted_call

PREFIX, SUFFIX = "time_", "_ms"
"""train.csv's column of a kernel's mean ms per call in a window: ``time_<kernel>_ms``."""


def steady_medians(train_csv: Path) -> dict[str, float]:
    """Seconds per call of each kernel: the median over the windows after the first (empty cells: no call)."""
    with open(train_csv, newline="") as f:
        rows = list(csv.DictReader(f))
    kernels = [c[len(PREFIX):-len(SUFFIX)] for c in (rows[0] if rows else {}) if c.startswith(PREFIX) and c.endswith(SUFFIX)]
    medians = {}
    for kernel in kernels:
        values = [float(v) for row in rows[1:] if (v := row[f"{PREFIX}{kernel}{SUFFIX}"])]
        if values:
            medians[kernel] = statistics.median(values) / 1e3
    return medians


def table(run_dir: Path) -> list[tuple[str, str, float, float | None, str]]:
    """``(kernel, device / variant, steady-state s per call, predicted s per call, its source)`` per planned
    kernel the run logged."""
    plan = Plan.from_dict(json.loads((run_dir / "result.json").read_text())["plan"])
    medians = steady_medians(run_dir / "train.csv")
    rows = []
    for kernel, placement in plan.placements.items():
        if kernel in medians:
            predicted, source = predicted_call(plan, kernel)
            rows.append((kernel, f"{placement.device} / {placement.variant}", medians[kernel], predicted, source))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run_dir", type=Path, help="a run's folder: result.json and train.csv")
    run_dir = parser.parse_args().run_dir
    missing = [name for name in ("result.json", "train.csv") if not (run_dir / name).is_file()]
    if missing:
        print(f"{run_dir}: no {' or '.join(missing)} (a `pearl run` folder holds both)", file=sys.stderr)
        raise SystemExit(2)
    print(f"{run_dir}: per call, steady state (median of the log windows after the first, measured) against the plan")
    print(f"{'kernel':<16} {'device / variant':<24} {'steady us':>10} {'predicted us':>13} {'ratio':>6}")
    for kernel, where, steady, predicted, source in table(run_dir):
        ratio = f"{steady / predicted:5.2f}x" if predicted else "     -"
        shown = f"{predicted * 1e6:10.1f} ({source[0]})" if predicted is not None else f"{'-':>13}"
        print(f"{kernel:<16} {where:<24} {steady * 1e6:10.1f} {shown:>13} {ratio}")


if __name__ == "__main__":
    main()
