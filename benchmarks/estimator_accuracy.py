"""Estimator accuracy on this CPU: calibrate on one grid, predict and measure a held-out grid.

Every kernel kind is calibrated exactly as ``pearl profile`` does (grid of
:func:`pearl_py.estimate.profiler.calibration_grid`), then measured at batch sizes,
layer widths, buffer capacities and copy sizes that were never calibrated
(:func:`heldout_grid`). Prints median and worst absolute percentage error per kind.

Usage::

    /work/venv/bin/python benchmarks/estimator_accuracy.py          # ~1 minute on a 2-core VM
"""
from __future__ import annotations

import statistics
import sys
import time

from pearl_py.estimate.calibration import Calibration, machine_fingerprint, model_key
from pearl_py.estimate.estimator import Estimator
from pearl_py.estimate.profiler import KINDS, calibration_grid, fit_measurements, heldout_grid, measure
from pearl_py.platform import Platform
from pearl_py.protocol import Kernel, KernelKind

TARGET_PCT = 15.0


def main() -> int:
    start = time.perf_counter()
    calibration = Calibration(machine_fingerprint())
    heldout = {}
    for kind in KINDS:
        for env_id, model in fit_measurements(kind, measure(kind, "reference", calibration_grid(kind))).items():
            calibration.models[model_key(kind, "reference", env_id)] = model
        heldout[kind] = measure(kind, "reference", heldout_grid(kind))
    estimator = Estimator(calibration)
    cpu = Platform.local().device("cpu")

    print(f"{'kernel kind':<32} {'model':<10} {'points':>6} {'median |err|':>13} {'max |err|':>10}")
    failed = False
    rows: dict[str, list[float]] = {}
    for kind, measured in heldout.items():
        for workload, seconds in measured:
            cost = estimator.cost(Kernel(kind, KernelKind(kind), workload, rate=1.0), cpu)
            assert cost.source == "calibrated"
            key = model_key(kind, "reference", getattr(workload, "env_id", None) if kind == "env_step" else None)
            rows.setdefault(key, []).append(abs(cost.latency_s - seconds) / seconds * 100)
    for key, errors in rows.items():
        median = statistics.median(errors)
        failed |= median > TARGET_PCT
        print(f"{key:<32} {calibration.models[key].form:<10} {len(errors):>6} {median:>12.1f}% {max(errors):>9.1f}%")
    print(f"(held-out points only; CPU time of one core, torch single-threaded; {time.perf_counter() - start:.0f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
