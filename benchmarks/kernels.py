"""Learner-update kernels side by side on this machine: eager reference vs the fast CPU variants.

For the zoo shapes of DQN (CartPole, batch 64, MLP [256, 256]), DDPG and TD3 (Pendulum,
batch 256, actor and critics [400, 300]) and SAC (Pendulum, batch 256, actor and critics
[256, 256]; the TD3 and SAC algorithms are built from examples/configs/*_pendulum.yaml) it
prints, per variant, the time of one update (median over repeats, CPU time of this thread
and wall time; TD3's average over its policy_delay period: its actor runs every other
update), the speed-up over eager, the FLOP-bound time (the workload's FLOPs from
``algo.protocol().kernel("learner_update").workload.flops``: every dense layer call the
real update makes, forward and backward, plus 12 per Adam-updated parameter, averaged over
the period; over the matmul rate measured here, in this run, on the workload's largest
GEMM), the first call's time (the compile, with the inductor cache as it is, and cold in a
fresh cache) and the peak resident memory of a process doing only that (``/usr/bin/time
-v``). One torch thread. A variant slower than eager is named at the end: the planner,
calibrated on this machine, then keeps the reference or compiled variant for that
algorithm (docs/kernels.md).

Run::

    python benchmarks/kernels.py                 # ~6-10 minutes on 2 cores
    python benchmarks/kernels.py --no-memory     # skip the /usr/bin/time child processes
    python benchmarks/kernels.py --workloads TD3 SAC --variants reference fused   # the twin-critic rows only
    python benchmarks/kernels.py --inference-only   # only the inference rows (~40 s)

Inference rows: the DQN zoo acting net (CartPole, MLP [256, 256], epsilon-greedy), the
DDPG and TD3 zoo actors (Pendulum, [400, 300], tanh + the zoo's noise_std 0.1) and the SAC
zoo actor (Pendulum, [256, 256], squashed Gaussian), ``reference`` vs ``fused`` (the numba
act), microseconds per call at batch 1 and 16 (median wall time, explore=True).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

import pearl_py as pearl
from learner_threads import random_batches
from pearl_py.algorithms import Algorithm, Learner
from pearl_py.kernels.fused_cpu import make_fused_cpu
from pearl_py.kernels.learner_update import make_compiled, make_reference

VARIANTS: dict[str, Callable[[Learner], Callable]] = {
    "reference": make_reference,
    "compiled": make_compiled,
    "compiled+autotune": lambda learner: make_compiled(learner, {"max_autotune": True}),
    "fused": make_fused_cpu,
}
"""The registered CPU variants, and the inductor max-autotune setting the choice was measured against.
``fused``: the whole step in one numba function (DQN, DDPG, TD3, SAC; its "compile" is numba's, cached on disk)."""

CONFIGS = Path(__file__).resolve().parents[1] / "examples" / "configs"


def workloads() -> dict[str, Algorithm]:
    return {
        "DQN CartPole b64 [256,256]": pearl.DQN("CartPole-v1", batch_size=64, net_arch=[256, 256],
                                                learning_rate=2.3e-3, target_update_interval=10),
        "DDPG Pendulum b256 [400,300]": pearl.DDPG("Pendulum-v1"),
        "TD3 Pendulum b256 [400,300]": pearl.load_config(CONFIGS / "td3_pendulum.yaml").make_algorithm(),
        "SAC Pendulum b256 [256,256]": pearl.load_config(CONFIGS / "sac_pendulum.yaml").make_algorithm(),
    }


def matmul_rate(m: int, k: int, n: int, repeats: int) -> float:
    """Median FLOP/s of an ``(m, k) @ (k, n)`` float32 matmul on this thread (CPU time)."""
    a, b = torch.randn(m, k), torch.randn(k, n)
    calls = max(20, int(2e8 / (2 * m * k * n)))
    times = []
    for _ in range(repeats):
        start = time.thread_time()
        for _ in range(calls):
            torch.mm(a, b)
        times.append((time.thread_time() - start) / calls)
    return 2 * m * k * n / statistics.median(times)


@dataclass
class Timing:
    cpu_s: float
    wall_s: float
    first_call_s: float | None


def time_variants(algo: Algorithm, names: list[str], repeats: int) -> dict[str, Timing]:
    """Interleaved timing: every repeat times every variant, so load changes hit all alike."""
    batches = random_batches(algo, 16)
    updates, first = {}, {}
    for name in names:
        torch.manual_seed(0)
        update = VARIANTS[name](Learner(algo))
        start = time.perf_counter()
        update(batches[0])
        first[name] = None if name == "reference" else time.perf_counter() - start
        updates[name] = update
    workload = algo.protocol().kernel("learner_update").workload
    calls = max(10, int(0.3 / (workload.flops / 5e10)))
    calls = -(-calls // workload.period) * workload.period   # whole periods: TD3's actor runs every other update
    cpu: dict[str, list[float]] = {n: [] for n in names}
    wall: dict[str, list[float]] = {n: [] for n in names}
    for _ in range(repeats):
        for name, update in updates.items():
            for b in batches[:3]:
                update(b)
            c0, w0 = time.thread_time(), time.perf_counter()
            for i in range(calls):
                update(batches[i % len(batches)])
            cpu[name].append((time.thread_time() - c0) / calls)
            wall[name].append((time.perf_counter() - w0) / calls)
    return {n: Timing(statistics.median(cpu[n]), statistics.median(wall[n]), first[n]) for n in names}


def inference_rows(repeats: int) -> list[str]:
    """µs per act call, reference vs fused, batch 1 and 16, interleaved like :func:`time_variants`."""
    import numpy as np

    from pearl_py.kernels.inference import make_fused
    from pearl_py.kernels.inference import make_reference as make_act

    rows = []
    zoo = workloads()
    for label, algo in {"DQN CartPole [256,256]": zoo["DQN CartPole b64 [256,256]"],
                        "DDPG Pendulum [400,300]": pearl.DDPG("Pendulum-v1", noise_std=0.1),
                        "TD3 Pendulum [400,300]": zoo["TD3 Pendulum b256 [400,300]"],
                        "SAC Pendulum [256,256]": zoo["SAC Pendulum b256 [256,256]"]}.items():
        torch.manual_seed(0)
        nets = Learner(algo).nets
        acts = {"reference": make_act(algo, nets), "fused": make_fused(algo, nets)}
        for batch in (1, 16):
            obs = np.random.default_rng(0).standard_normal((batch, algo.spec.obs_dim), dtype=np.float32)
            times: dict[str, list[float]] = {n: [] for n in acts}
            for _ in range(repeats):
                for name, act in acts.items():
                    for _ in range(20):
                        act(obs, explore=True, progress=0.05)
                    start = time.perf_counter()
                    for _ in range(500):
                        act(obs, explore=True, progress=0.05)
                    times[name].append((time.perf_counter() - start) / 500)
            ref, fused = statistics.median(times["reference"]), statistics.median(times["fused"])
            rows.append(f"{label:26s} {batch:5d} {ref * 1e6:14.1f} {fused * 1e6:10.1f} {ref / fused:9.1f}x")
    return rows


def print_inference(repeats: int) -> None:
    print(f"\n{'inference':26s} {'batch':>5s} {'reference us':>14s} {'fused us':>10s} {'speed-up':>10s}")
    print("\n".join(inference_rows(repeats)))
    print("us: median wall time per act call (explore=True), one torch thread.")


def child(workload: str, variant: str, updates: int) -> None:
    """Build one variant and run ``updates`` updates; print the first call's time as JSON."""
    torch.set_num_threads(1)
    algo = workloads()[workload]
    batches = random_batches(algo, 16)
    update = VARIANTS[variant](Learner(algo))
    start = time.perf_counter()
    update(batches[0])
    first = time.perf_counter() - start
    for i in range(updates):
        update(batches[i % len(batches)])
    print(json.dumps({"first_call_s": first}))


def measure_child(workload: str, variant: str, cold_cache: bool) -> tuple[float, float]:
    """Peak RSS (MB) and first-call seconds of a child process running one variant."""
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as cache:
        if cold_cache:
            env["TORCHINDUCTOR_CACHE_DIR"] = cache
        proc = subprocess.run(["/usr/bin/time", "-v", sys.executable, __file__, "--child", workload, variant],
                              capture_output=True, text=True, env=env, check=True)
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr).group(1))
    first = json.loads(proc.stdout.strip().splitlines()[-1])["first_call_s"]
    return rss_kb / 1024, first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--no-memory", action="store_true", help="skip peak-memory child processes")
    parser.add_argument("--inference-only", action="store_true", help="only the inference rows")
    parser.add_argument("--workloads", nargs="+", metavar="ALGO", help="only the workloads whose label starts "
                        "with one of these (DQN, DDPG, TD3, SAC)")
    parser.add_argument("--child", nargs=2, metavar=("WORKLOAD", "VARIANT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child, updates=200)
        return
    torch.set_num_threads(1)
    from pearl_py.kernels.numba_blas import BLAS_SOURCES
    print(f"fused kernels' sgemm: {BLAS_SOURCES}")
    if args.inference_only:
        print_inference(args.repeats)
        return
    header = (f"{'workload':30s} {'variant':18s} {'cpu ms':>8s} {'wall ms':>8s} {'vs eager':>8s} "
              f"{'bound ms':>8s} {'/bound':>7s} {'1st call s':>10s} {'cold s':>7s} {'peak MB':>8s}")
    rows, slower = [], []
    chosen = {label: algo for label, algo in workloads().items()
              if not args.workloads or label.split()[0] in args.workloads}
    for label, algo in chosen.items():
        workload = algo.protocol().kernel("learner_update").workload
        biggest = max(workload.layers, key=lambda layer: layer.forward_flops)
        rate = matmul_rate(biggest.batch, biggest.n_in, biggest.n_out, args.repeats)
        bound = workload.flops / rate
        timings = time_variants(algo, args.variants, args.repeats)
        print(f"{label}: {workload.flops / 1e6:.1f} MFLOP per update; matmul "
              f"{biggest.batch}x{biggest.n_in}x{biggest.n_out} at {rate / 1e9:.1f} GFLOP/s -> "
              f"FLOP-bound {bound * 1e3:.3f} ms", flush=True)
        eager = timings["reference"].cpu_s if "reference" in timings else float("nan")
        for name, t in timings.items():
            rss, cold = (float("nan"), None) if args.no_memory else measure_child(
                label, name, name not in ("reference", "fused"))
            first = "-" if t.first_call_s is None else f"{t.first_call_s:.1f}"
            cold_s = "-" if cold is None or name in ("reference", "fused") else f"{cold:.1f}"
            rows.append(f"{label:30s} {name:18s} {t.cpu_s * 1e3:8.3f} {t.wall_s * 1e3:8.3f} "
                        f"{eager / t.cpu_s:7.2f}x {bound * 1e3:8.3f} {t.cpu_s / bound:6.2f}x "
                        f"{first:>10s} {cold_s:>7s} {rss:8.0f}")
            if name != "reference" and t.cpu_s >= eager:
                slower.append(f"{name} on {label} ({t.cpu_s * 1e3:.3f} ms vs eager {eager * 1e3:.3f} ms)")
    print()
    print(header)
    print("\n".join(rows))
    print("\ncpu ms: median CPU time of this thread per update (wall ms: elapsed; the machine is shared). "
          "vs eager and /bound use cpu ms.\n1st call s: first update incl. compile with the inductor cache as "
          "found; cold s: the same in a fresh cache (child process). peak MB: max RSS of a child process "
          "building the variant and running 200 updates (/usr/bin/time -v).")
    for entry in slower:
        print(f"does not pay here: {entry}; a calibrated plan keeps eager or compiled for it")
    print_inference(args.repeats)


if __name__ == "__main__":
    main()
