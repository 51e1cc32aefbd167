"""The local parallel runtime's layouts side by side: co-located replay, replay server, central inference.

Each (seed, mode) trains the config's algorithm for its total_steps in a fresh process
under ``/usr/bin/time -v``, with every kernel on the CPU (``Plan.single_device``,
``--actors`` actor processes, ``--variant`` for the learner update) and the mode forced
through the executor's options. Printed per run: training wall time, final eval return
(10 greedy episodes), updates, the largest single process's peak RSS (``/usr/bin/time``)
and the peak RSS of the whole process tree (learner, actors, servers; sampled every
0.2 s from /proc, shared pages counted once per process); then medians per mode, the
ratio to the first mode, the replay kernels' seconds (in whichever process ran them),
how long the learner waited for a served batch and the actors for a central action.

    python benchmarks/parallel_modes.py examples/configs/dqn_cartpole.yaml --seeds 0 1 2
    python benchmarks/parallel_modes.py examples/configs/dqn_cartpole.yaml --modes colocated server-relaxed
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

MODES = {
    "colocated": {"replay": "colocated", "inference": "actor"},
    "server": {"replay": "server", "inference": "actor"},
    "server-relaxed": {"replay": "server", "inference": "actor", "replay_order": "relaxed"},
    "central": {"replay": "colocated", "inference": "central"},
    "server+central": {"replay": "server", "inference": "central"},
}


REPLAY_KERNELS = ("replay_insert", "replay_sample", "priority_update")


def tree_rss_kib(root: int) -> int:
    """Resident KiB of ``root`` and all its descendants, now."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    tree, frontier = {root}, [root]
    while frontier:
        pid = frontier.pop()
        kids = [c for c, p in parents.items() if p == pid and c not in tree]
        tree.update(kids)
        frontier += kids
    total = 0
    for pid in tree:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total


def one(args: argparse.Namespace) -> None:
    """Child: one run; prints its figures as one JSON line."""
    import torch

    import pearl_py as pearl
    from pearl_py.runtime.parallel import ParallelExecutor

    torch.set_num_threads(1)
    cfg = pearl.load_config(args.config).with_overrides(total_steps=args.steps)
    algo = cfg.make_algorithm()
    plan = pearl.Plan.single_device(algo.protocol())
    plan.placements["env_step"] = pearl.Placement("cpu", replicas=args.actors)
    if args.variant:
        plan.placements["learner_update"] = pearl.Placement("cpu", args.variant)
    peak = [0]

    def sample() -> None:
        while True:
            peak[0] = max(peak[0], tree_rss_kib(os.getpid()))
            time.sleep(0.2)

    threading.Thread(target=sample, daemon=True).start()
    result = ParallelExecutor(algo, plan, args.seed, progress=False, **MODES[args.one]).run(cfg.settings.total_steps)
    seconds = {k: t["total_s"] for k, t in result.kernel_times.items()}
    print(json.dumps({"wall_s": result.wall_seconds, "eval": result.eval_return_mean, "updates": result.gradient_steps,
                      "env_steps": result.env_steps, "tree_mib": peak[0] / 1024, "layout": result.layout,
                      "replay_kernels_s": sum(seconds.get(k, 0.0) for k in REPLAY_KERNELS),
                      "replay_wait_s": seconds.get("replay_wait", 0.0),
                      "inference_request_s": seconds.get("inference_request", 0.0)}))


def measure(args: argparse.Namespace, mode: str, seed: int) -> dict:
    command = ["/usr/bin/time", "-v", sys.executable, __file__, args.config, "--one", mode, "--seed", str(seed),
               "--actors", str(args.actors)] + (["--variant", args.variant] if args.variant else []) \
        + (["--steps", str(args.steps)] if args.steps else [])
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    figures["max_process_mib"] = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)[1]) / 1024
    with open("/proc/loadavg") as f:
        figures["load"] = float(f.read().split()[0])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("config")
    parser.add_argument("--modes", nargs="+", choices=sorted(MODES), default=["colocated", "server", "central"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--actors", type=int, default=1)
    parser.add_argument("--variant", help="learner_update variant (default: reference)")
    parser.add_argument("--steps", type=int, help="override total_steps (quick looks only)")
    parser.add_argument("--one", choices=sorted(MODES), help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one(args)
        return
    rows: dict[str, list[dict]] = {m: [] for m in args.modes}
    print(f"{'mode':15} {'seed':>4} {'wall s':>7} {'eval':>6} {'updates':>7} {'max proc MiB':>12} "
          f"{'tree MiB':>8} {'load':>5}")
    for seed in args.seeds:
        for mode in args.modes:  # modes interleaved per seed: load changes hit every mode alike
            r = measure(args, mode, seed)
            rows[mode].append(r)
            print(f"{mode:15} {seed:>4} {r['wall_s']:7.1f} {r['eval']:6.1f} {r['updates']:7d} "
                  f"{r['max_process_mib']:12.0f} {r['tree_mib']:8.0f} {r['load']:5.1f}", flush=True)
    base = statistics.median(r["wall_s"] for r in rows[args.modes[0]])
    print(f"\nmedians ({len(args.seeds)} seeds); ratio = {args.modes[0]} wall / mode wall (> 1: faster)")
    for mode, runs in rows.items():
        wall = statistics.median(r["wall_s"] for r in runs)
        print(f"{mode:15} wall {wall:6.1f} s  ratio {base / wall:4.2f}"
              f"  eval {statistics.median(r['eval'] for r in runs):6.1f}"
              f"  max proc {statistics.median(r['max_process_mib'] for r in runs):5.0f} MiB"
              f"  tree {statistics.median(r['tree_mib'] for r in runs):5.0f} MiB"
              f"  replay kernels {statistics.median(r['replay_kernels_s'] for r in runs):5.1f} s"
              f"  learner waited for batches {statistics.median(r['replay_wait_s'] for r in runs):5.1f} s"
              f"  actors waited for actions {statistics.median(r['inference_request_s'] for r in runs):5.1f} s")


if __name__ == "__main__":
    main()
