"""``pearl profile [--quick] [--out PATH]``: calibrate the cost models on this machine's CPU.

Example::

    $ pearl profile --quick
    learner_update/reference         linear    cv error   2.1%  (18 points, 2.4s)
    ...
    calibration written to ~/.cache/pearl_py/calibration-1a2b3c4d5e6f.json in 31.2 s
"""
from __future__ import annotations

import time

from pearl_py.estimate.profiler import profile


def profile_main(out: str | None, quick: bool) -> int:
    """Calibrate every kernel kind on this CPU and cache (or write to ``out``) the fitted models."""
    start = time.perf_counter()
    print(f"calibrating this CPU single-threaded ({'quick' if quick else 'full'} grid) ...", flush=True)
    calibration = profile(quick=quick, log=lambda line: print(line, flush=True))
    path = calibration.save(out)
    print(f"calibration written to {path} in {time.perf_counter() - start:.1f} s")
    return 0
