"""``pearl profile [--quick] [--out PATH] [--check]``: calibrate the cost models on this machine's CPU and CUDA
GPUs, or check that the cached calibration still holds.

Example::

    $ pearl profile --quick
    calibrating this CPU single-threaded (quick grid) ...
    [1/16] learner_update/compiled: 24 points (0/1134 points done, 0:00 elapsed)
        learner_update/compiled: 12/1134 points done, 0:15 elapsed, about 23:20 left
    learner_update/compiled          linear    cv error   2.1%  (8 points, 24.4s)
    ...
    calibration written to ~/.cache/pearl_py/calibration-1a2b3c4d5e6f-9f8e7d6c.json in 31.2 s
    $ pearl profile --check
    learner_update/reference  dqn [256, 256] batch 64   calibrated 1.270 ms  measured 1.312 ms  x1.03  holds
    ...
    the calibration holds: every point within 25% of it
"""
from __future__ import annotations

import time

from pearl_py.errors import UserError
from pearl_py.profile.profiler import profile


def profile_main(out: str | None, quick: bool, check: bool = False) -> int:
    """Calibrate every kernel kind on this CPU and each CUDA GPU, and cache (or write to ``out``) the fitted models
    with the power measured where a counter reads it; with ``check``, re-time a few points against the cached (or
    ``out``) calibration: exit 0 if it holds, 1 if not."""
    if check:
        return check_main(out)
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


def check_main(path: str | None) -> int:
    from pearl_py.estimate.calibration import Calibration, default_path
    from pearl_py.profile.check import TOLERANCE, check_calibration

    file = path or str(default_path())
    try:
        calibration = Calibration.load(file)
    except FileNotFoundError:
        raise UserError(f"{file}: no calibration to check: run `pearl profile` first") from None
    except (OSError, ValueError, KeyError) as exc:
        raise UserError(f"{file}: not a pearl_py calibration ({exc})") from None
    load = calibration.meta.get("load", {}).get("load_average_start")
    print(f"checking {file} (written {calibration.meta.get('written', '?')}"
          + (f", load average then {load:.1f}" if load is not None else ", load then not recorded") + ")",
          flush=True)
    rows = check_calibration(calibration, log=lambda line: print(line, flush=True))
    for row in rows:
        verdict = "holds" if row.holds else ("distorted by other processes" if row.distorted else "off")
        print(f"{row.key:<28} {_label(row.point):<28} calibrated {row.calibrated_s * 1e3:8.3f} ms  "
              f"measured {row.measured_s * 1e3:8.3f} ms  x{row.ratio:.2f}  {verdict}", flush=True)
    if rows and all(row.holds for row in rows):
        print(f"the calibration holds: every point within {TOLERANCE:.0%} of it")
        return 0
    print(f"the calibration does not hold (a point off by more than {TOLERANCE:.0%}, distorted, or none checked): "
          "re-run `pearl profile` on an idle machine")
    return 1


def _label(point) -> str:
    if point.kind == "env_step":
        return f"{point.env_id} x{point.batch}"
    if point.kind in ("learner_update", "inference"):
        arch = list(point.arch) if point.arch else [point.width] * point.depth
        return f"{point.algo} {arch} batch {point.batch}"
    return f"capacity {point.capacity} batch {point.batch}"
