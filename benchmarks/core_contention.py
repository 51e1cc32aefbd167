"""How much do this machine's cores slow each other? The same serial run alone, then two at once.

Each copy is a single-threaded serial DQN CartPole run (zoo hyperparameters, ``--steps``
env steps) in its own process. Printed per kernel: mean seconds per call alone, with a
twin running on the other core, and the ratio. A ratio near 1 means the cores are
independent, so overlapping actors with the learner pays off fully; measure it on a quiet
machine, since any other load shows up as contention.

    python benchmarks/core_contention.py --steps 10000
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time


def worker(steps: int) -> None:
    import pearl_py as pearl
    from pearl_py.runtime.serial import SerialExecutor

    algo = pearl.load_config("examples/configs/dqn_cartpole.yaml").make_algorithm()
    result = SerialExecutor(algo, seed=0, eval_episodes=0, progress=False).run(steps)
    print(json.dumps({k: v["mean_s"] for k, v in result.kernel_times.items()}))


def run(copies: int, steps: int) -> list[dict[str, float]]:
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", "--steps", str(steps)],
                              stdout=subprocess.PIPE, text=True) for _ in range(copies)]
    return [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.steps)
        return
    start = time.perf_counter()
    alone = run(1, args.steps)[0]
    paired = run(2, args.steps)
    print(f"{'kernel':<16} {'alone us':>9} {'paired us':>10} {'paired/alone':>13}   (measured, {args.steps} steps)")
    ratios = []
    for kernel in sorted(alone):
        both = sum(p[kernel] for p in paired) / 2
        ratios.append(both / alone[kernel])
        print(f"{kernel:<16} {alone[kernel] * 1e6:9.1f} {both * 1e6:10.1f} {ratios[-1]:13.2f}")
    ratios.sort()
    print(f"median slowdown with the other core busy: {ratios[len(ratios) // 2]:.2f} "
          f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
