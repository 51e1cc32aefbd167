"""The README job under a light neighbour, three ways side by side: ``--auto``, and its plan forced to 1 and to 2
learner threads (issue 27's "Must show").

A neighbour process sleeps 5 ms and spins 0.5 ms in a loop (about a tenth of a core) for the whole benchmark, as
an editor, a browser or a test run would. Each way is a whole ``pearl run`` process (imports, envs, training,
evaluation):

* ``auto``: ``pearl run CONFIG --auto`` (the plan the optimizer picks; the run's monitor may correct it);
* ``1 thread`` / ``2 threads``: the ``auto`` run's own plan.yaml with the learner's threads set, ``--no-adapt``.

The ways take turns within each repeat, so a change in the machine's load hits all of them. Printed per run:
the process's wall seconds, training samples/s (measured), the plan's predicted samples/s and, after a
correction, the prediction recomputed for the run as executed, measured over predicted, the corrections, the
learner threads at the end, peak resident memory and the load average (1 min) before and after. Then per way
the median samples/s and its ratio to the better forced plan's (the issue asks ``--auto`` within 10%).

``--auto`` profiles this machine first when it has no calibration (minutes): run ``pearl profile`` beforehand,
or the first ``auto`` run's process time includes it.

Run::

    python benchmarks/plans_under_load.py                          # the README job, 3 repeats (~3 minutes)
    python benchmarks/plans_under_load.py --steps 3000 --repeats 1 --plan PLAN.yaml   # a smoke run
    python benchmarks/plans_under_load.py --no-neighbour             # the same on a quiet machine
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from pearl_py.profile.neighbour import LIGHT_SLEEP_S, LIGHT_SPIN_S, neighbour

README_JOB = Path(__file__).resolve().parents[1] / "examples" / "configs" / "dqn_cartpole.yaml"
WAYS = ("auto", "1 thread", "2 threads")


def pearl_run(args: list[str]) -> tuple[float, float, int]:
    """``pearl run ARGS`` as a child process: (wall seconds, peak resident MiB of the process, exit code)."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "pearl_py.cli", "run", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    stderr = proc.stderr.read()
    proc.stderr.close()
    if proc.returncode != 0:
        print(stderr[-2000:], file=sys.stderr)
    return wall, usage.ru_maxrss / 1024, proc.returncode


def forced_plan(plan_yaml: Path, threads: int, out: Path) -> Path:
    """``plan_yaml`` (with its prediction.json beside it) with the learner's threads set to ``threads``."""
    data = yaml.safe_load(plan_yaml.read_text())
    data["placements"]["learner_update"]["replicas"] = threads
    out.mkdir(parents=True, exist_ok=True)
    (out / "plan.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    prediction = plan_yaml.parent / "prediction.json"
    if prediction.is_file():
        (out / "prediction.json").write_text(prediction.read_text())
    return out / "plan.yaml"


def row(way: str, folder: Path, wall: float, peak: float, load: tuple[float, float]) -> dict[str, Any]:
    result = json.loads((folder / "result.json").read_text())
    prediction = result["plan"].get("prediction") or {}
    predicted = (prediction.get("figures") or {}).get("samples_per_s")
    executed = (result.get("prediction_as_executed") or {}).get("samples_per_s", predicted)
    corrections = result.get("corrections") or []
    threads = corrections[-1]["after"]["threads"] if corrections else \
        result["plan"]["placements"]["learner_update"]["replicas"]
    return {"way": way, "wall": wall, "sps": result["samples_per_second"], "predicted": predicted,
            "executed": executed, "corrections": len(corrections), "threads": threads, "peak": peak, "load": load,
            "changes": "; ".join(f"{c['step']}: {c['change']}" for c in corrections)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=str(README_JOB))
    parser.add_argument("--steps", type=int, default=None, help="env steps (default: the config's)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-neighbour", dest="neighbour", action="store_false")
    parser.add_argument("--keep", default=None, help="keep the run folders here (default: a temporary folder)")
    parser.add_argument("--plan", default=None, help="run this plan.yaml as the 'auto' way (adapting, as --auto "
                        "does) instead of solving one: a saved --auto plan, or a smoke run without a calibration")
    args = parser.parse_args()
    common = ["--seed", str(args.seed), "--overwrite"] + (["--steps", str(args.steps)] if args.steps else [])
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, (neighbour("light") if args.neighbour else contextlib.nullcontext()):
        root = Path(args.keep or tmp)
        steps = args.steps or "the config's"
        print(f"{Path(args.config).name}, seed {args.seed}, {steps} steps; neighbour: "
              + (f"sleeps {LIGHT_SLEEP_S * 1e3:g} ms, spins {LIGHT_SPIN_S * 1e3:g} ms" if args.neighbour else "none"))
        print(f"{'run':<16}{'process s':>10}{'samples/s':>11}{'predicted':>11}{'as run':>9}{'meas/pred':>10}"
              f"{'threads':>8}{'peak MiB':>9}{'load':>12}  corrections")
        for repeat in range(args.repeats):
            for way in WAYS:
                folder = root / f"r{repeat}-{way.replace(' ', '')}"
                if way == "auto":
                    extra = ["--plan", args.plan] if args.plan else ["--auto"]
                else:
                    plan = forced_plan(root / f"r{repeat}-auto" / "plan.yaml", int(way[0]), root / f"plan-{way[0]}")
                    extra = ["--plan", str(plan), "--no-adapt"]
                before = os.getloadavg()[0]
                wall, peak, code = pearl_run([args.config, *extra, "--out", str(folder), *common])
                if code != 0:
                    raise SystemExit(f"{way}: pearl run exited {code}")
                rows.append(r := row(way, folder, wall, peak, (before, os.getloadavg()[0])))
                ratio = r["sps"] / r["executed"] if r["executed"] else float("nan")
                print(f"{way + f' #{repeat + 1}':<16}{wall:>10.1f}{r['sps']:>11,.0f}{r['predicted'] or 0:>11,.0f}"
                      f"{r['executed'] or 0:>9,.0f}{ratio:>10.2f}{r['threads']:>8}{peak:>9,.0f}"
                      f"{r['load'][0]:>6.2f}-{r['load'][1]:<5.2f}  {r['changes'] or '-'}", flush=True)
    medians = {way: statistics.median(r["sps"] for r in rows if r["way"] == way) for way in WAYS}
    best_forced = max(medians["1 thread"], medians["2 threads"])
    print("medians (samples/s, measured): " + ", ".join(f"{way} {s:,.0f}" for way, s in medians.items())
          + f"; auto / better forced plan: {medians['auto'] / best_forced:.2f}")


if __name__ == "__main__":
    main()
