"""``pearl profile [--quick] [--out PATH]``: calibrate the cost models on this machine's CPU and CUDA GPUs.

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
    """Calibrate every kernel kind on this CPU and each CUDA GPU, and cache (or write to ``out``) the fitted models
    with the power measured where a counter reads it."""
    start = time.perf_counter()
    print(f"calibrating this machine ({'quick' if quick else 'full'} grid): the CPU single-threaded, then every "
          "CUDA GPU (synchronized timing); power from the energy counters that read ...", flush=True)
    calibration = profile(quick=quick, log=lambda line: print(line, flush=True))
    for device, entry in calibration.meta.get("energy", {}).items():
        if entry["source"] == "measured":
            print(f"{device}: power measured ({entry['counter']}): idle {entry['idle_w']:.1f} W, "
                  f"{len(entry['kernels'])} kernel variants' dynamic power")
        else:
            print(f"{device}: power modelled ({entry['reason']})")
    path = calibration.save(out)
    print(f"calibration written to {path} in {time.perf_counter() - start:.1f} s")
    return 0
