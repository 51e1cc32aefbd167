"""GPU smoke test: profile this machine's GPU, plan DQN and DDPG onto it, run, and check every kernel ran as planned.

On a machine with CUDA it (1) runs ``pearl profile --quick`` (the CPU, then every local GPU with
synchronized timing, power from the counters that read) into the machine's cache; (2) plans DQN
(CartPole, prioritized replay) and DDPG (Pendulum) on ``Platform.local()`` with the learner, inference
and the replay pinned to ``gpu0`` (the replay as a TorchReplayBuffer beside the learner), once per
protocol mode: the serial executor and the parallel runtime; (3) runs each for ``--steps`` env steps;
(4) prints, per kernel, the predicted and measured time per call and where it ran, and per device
the run's joules with their source; (5) exits 1, loudly, if any kernel executed on another device
than its plan's (``RunResult.executed_on``, read from what the run built, against the plan). Without
CUDA it says so and exits 0 (the GPU paths are tested on the CPU through fakes: ``pytest``;
``pytest -m gpu`` runs this on a GPU machine).

    python benchmarks/gpu_smoke.py                 # a few thousand steps each
    python benchmarks/gpu_smoke.py --steps 5000 --out runs/gpu-smoke
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import torch

import pearl_py as pearl
from pearl_py.estimate.profiler import profile
from pearl_py.plan import Plan
from pearl_py.platform import Platform
from pearl_py.protocol.kernel import (
    INFERENCE,
    LEARNER_UPDATE,
    PARAM_SYNC,
    PRIORITY_UPDATE,
    REPLAY_INSERT,
    REPLAY_SAMPLE,
)
from pearl_py.report.measured import kernel_rows
from pearl_py.runtime.kernel_devices import kernel_devices

ON_GPU = (LEARNER_UPDATE, INFERENCE, REPLAY_INSERT, REPLAY_SAMPLE, PRIORITY_UPDATE, PARAM_SYNC)
"""Kernels the smoke plans pin to the GPU (param_sync: the copy out of the learner's memory)."""


def algorithms() -> dict[str, pearl.DQN | pearl.DDPG]:
    return {"dqn": pearl.DQN("CartPole-v1", prioritized_replay=True, net_arch=[256, 256], batch_size=64,
                             learning_starts=500, train_freq=64, gradient_steps=16, buffer_size=50_000),
            "ddpg": pearl.DDPG("Pendulum-v1", prioritized_replay=True, net_arch=[400, 300], batch_size=256,
                               learning_starts=500, buffer_size=50_000)}


def gpu_plan(algorithm, serialized: bool, steps: int) -> Plan:
    """The optimizer's plan on this machine with the learner, inference and the replay pinned to gpu0."""
    protocol = algorithm.protocol(serialized=serialized)
    pins = {k.name: "gpu0" for k in protocol.kernels() if k.name in ON_GPU}
    return pearl.plan(protocol, Platform.local(), "throughput", constraints={"pin": pins}, horizon=steps)


def check(plan: Plan, result) -> list[str]:
    """Every kernel that executed on another device than its plan's, in words."""
    planned = {k: str(d) for k, d in kernel_devices(plan).items()}
    return [f"{k}: planned on {plan.placements[k].device} ({planned[k]}), executed on {result.executed_on.get(k)}"
            for k in plan.placements if result.executed_on.get(k) != planned[k]]


def report(name: str, plan: Plan, result) -> None:
    print(f"\n== {name}: {plan.mode} plan ({result.backend}), {result.env_steps} steps in {result.wall_seconds:.1f} s, "
          f"{result.samples_per_second:,.0f} samples/s measured")
    print(f"  {'kernel':<16} {'device / variant':<24} {'predicted / call':<26} {'measured / call':<22} executed on")
    for row in kernel_rows(plan, result.to_dict()):
        print(f"  {row[0]:<16} {row[1]:<24} {row[2]:<26} {row[3]:<22} {result.executed_on.get(row[0], '?')}")
    for device, entry in (result.energy.get("devices") or {}).items():
        how = entry.get("counter") if entry["source"] == "measured" else entry.get("reason")
        print(f"  energy {device:<8} {entry['joules']:10.1f} J  {entry['source']:<8} ({how})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=3_000, help="env steps per run (default 3000)")
    parser.add_argument("--out", help="keep the runs' folders here (default: a temporary folder)")
    parser.add_argument("--no-profile", action="store_true", help="use the cached calibration as it is")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("gpu_smoke: no CUDA device here (torch.cuda.is_available() is False): nothing to check on a GPU. "
              "The GPU paths are tested on the CPU through fakes (pytest); run this on a machine with CUDA.")
        return 0
    print(f"gpu_smoke: {torch.cuda.device_count()} CUDA device(s), gpu0 is {torch.cuda.get_device_name(0)}")
    if not args.no_profile:
        calibration = profile(quick=True, log=lambda line: print(f"  {line}", flush=True))
        print(f"calibration written to {calibration.save()}")
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="pearl-gpu-smoke-") as tmp:
        root = Path(args.out) if args.out else Path(tmp)
        for name, algorithm in algorithms().items():
            for serialized in (True, False):
                plan = gpu_plan(algorithm, serialized, args.steps)
                out = root / f"{name}-{plan.mode}"
                result = pearl.train(algorithm, total_steps=args.steps, seed=0, plan=plan, out=out, eval_episodes=2,
                                     progress=False)
                report(name, plan, result)
                failures += [f"{name} ({plan.mode}): {problem}" for problem in check(plan, result)]
    if failures:
        print("\ngpu_smoke: FAILED: kernels did not run where their plan put them:", file=sys.stderr)
        for line in failures:
            print(f"  {line}", file=sys.stderr)
        return 1
    print("\ngpu_smoke: every kernel ran on its planned device")
    return 0


if __name__ == "__main__":
    sys.exit(main())
