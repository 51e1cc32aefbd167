"""The loop's small kernels after a large learner update: in a loop against alone, per inference variant.

DDPG on Pendulum-v1 in the serial executor (one process, one torch thread, the ``fused`` learner update, one
update per env step from ``--learning-starts`` on), with a small learner (``[16]``) and the zoo's large one
(``[400, 300]``), each with the ``reference`` and the ``fused`` inference. Per kernel it prints the measured
seconds per call in the loop beside the calibrated cost of one call alone (``Estimator.kernel_cost``: this
machine's ``pearl profile``), and the loop's own work per vector step. What it shows on the 2-core VM: after a
large update every small kernel runs 2-5x its cost alone, the torch reference inference most (its code path
is long), which the estimator's in-loop excess (calibrated with small learners) does not charge.

Run (one job at a time on the machine; the load average is printed)::

    python benchmarks/loop_refill.py [--steps 3000] [--learning-starts 1000]
"""
from __future__ import annotations

import argparse
import os

import torch

import pearl_py as pearl
from pearl_py.estimate import Estimator
from pearl_py.pipeline.train import make_executor
from pearl_py.platform import Platform
from pearl_py.protocol.kernel import LOOP_WORK

ARCHS = ([16], [400, 300])
INFERENCE_VARIANTS = ("reference", "fused")


def run_case(arch: list[int], inference: str, steps: int, learning_starts: int, estimator: Estimator) -> str:
    """One serial DDPG run; its kernels' in-loop seconds per call against alone, as one line."""
    algo = pearl.DDPG("Pendulum-v1", net_arch=arch, learning_starts=learning_starts, batch_size=256, noise_std=0.1)
    protocol = algo.protocol(serialized=True)
    plan = pearl.Plan.single_device(protocol)
    plan.placements["learner_update"] = pearl.Placement("cpu", "fused", 1)
    plan.placements["inference"] = pearl.Placement("cpu", inference, 1)
    result = make_executor(algo, plan, 0, progress=False, eval_episodes=0).run(steps)
    cpu = Platform.local().by_kind("cpu")[0]
    cells = []
    for name, timing in result.kernel_times.items():
        if not timing["calls"] or (name not in protocol and name != LOOP_WORK):
            continue
        in_loop = timing["total_s"] / timing["calls"] * 1e6
        if name == LOOP_WORK:
            cells.append(f"loop {in_loop:.1f} us")
            continue
        alone = estimator.kernel_cost(protocol.kernel(name), cpu, plan.placements[name].variant).latency_s * 1e6
        cells.append(f"{name} {in_loop:.1f} us ({in_loop / alone:.1f}x alone)")
    return f"| {arch} | {inference} | " + "; ".join(cells) + f" | {os.getloadavg()[0]:.2f} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--learning-starts", type=int, default=1000)
    args = parser.parse_args()
    torch.set_num_threads(1)
    estimator = Estimator()
    print(f"{os.cpu_count()} CPUs; load {os.getloadavg()[0]:.2f} at start; per call in the loop (measured) and its "
          "ratio to the calibrated cost alone")
    print("| learner | inference | kernels in the loop | load |")
    print("|---|---|---|---|")
    for arch in ARCHS:
        for inference in INFERENCE_VARIANTS:
            print(run_case(arch, inference, args.steps, args.learning_starts, estimator), flush=True)


if __name__ == "__main__":
    main()
