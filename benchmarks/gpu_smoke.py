"""GPU smoke test: profile this machine's GPU, plan DQN, DDPG and PPO onto it, run, check every kernel ran as planned.

On a machine with CUDA it (1) runs ``pearl profile --quick`` (the CPU, then every local GPU with
synchronized timing, power from the counters that read) into the machine's cache; (2) plans DQN
(CartPole, prioritized replay) and DDPG (Pendulum) on ``Platform.local()`` with the learner, inference
and the replay pinned to ``gpu0`` (the replay as a TorchReplayBuffer beside the learner), and PPO
(CartPole) with its learner there (its inference runs in the actors, beside their envs), once per
protocol mode: the serial executor and the parallel runtime; (3) runs each for ``--steps`` env steps;
(4) prints, per kernel, the predicted and measured time per call and where it ran, and per device
the run's joules with their source; (5) exits 1, loudly, if any kernel executed on another device
than its plan's (``RunResult.executed_on``, read from what the run built, against the plan). Without
CUDA it says so and exits 0 (the GPU paths are tested on the CPU through fakes: ``pytest``;
``pytest -m gpu`` runs this on a GPU machine). ``--device cpu`` pins the same kernels to the CPU
instead (the dry run of ``benchmarks/device_check.py``); ``--json`` writes each run's figures.

    python benchmarks/gpu_smoke.py                 # a few thousand steps each
    python benchmarks/gpu_smoke.py --steps 5000 --out runs/gpu-smoke
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import torch

import pearl_py as pearl
from pearl_py.profile.profiler import profile
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
ON_GPU_ON_POLICY = (LEARNER_UPDATE,)
"""On-policy: the learner only (inference runs in the actors, beside their envs: OnPolicyLayout)."""


def algorithms() -> dict[str, pearl.DQN | pearl.DDPG | pearl.PPO]:
    return {"dqn": pearl.DQN("CartPole-v1", prioritized_replay=True, net_arch=[256, 256], batch_size=64,
                             learning_starts=500, train_freq=64, gradient_steps=16, buffer_size=50_000),
            "ddpg": pearl.DDPG("Pendulum-v1", prioritized_replay=True, net_arch=[400, 300], batch_size=256,
                               learning_starts=500, buffer_size=50_000),
            "ppo": pearl.PPO("CartPole-v1", n_envs=8, n_steps=64, batch_size=64, n_epochs=4, net_arch=[256, 256])}


def gpu_plan(algorithm, serialized: bool, steps: int, device: str = "gpu0") -> Plan:
    """The optimizer's plan on this machine with the learner, inference and the replay pinned to ``device``."""
    protocol = algorithm.protocol(serialized=serialized)
    pinned = ON_GPU_ON_POLICY if getattr(algorithm, "family", "") == "on_policy" else ON_GPU
    pins = {k.name: device for k in protocol.kernels() if k.name in pinned}
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
    parser.add_argument("--device", default="gpu0", help="the device to pin to (default gpu0; cpu: a dry run)")
    parser.add_argument("--modes", choices=("both", "serialized"), default="both", help="protocol modes to run")
    parser.add_argument("--json", help="write each run's figures and problems here")
    parser.add_argument("--algorithms", nargs="+", choices=sorted(algorithms()), help="run only these")
    args = parser.parse_args(argv)
    if args.device != "cpu" and not torch.cuda.is_available():
        print("gpu_smoke: no CUDA device here (torch.cuda.is_available() is False): nothing to check on a GPU. "
              "The GPU paths are tested on the CPU through fakes (pytest); run this on a machine with CUDA.")
        return 0
    if args.device != "cpu":
        print(f"gpu_smoke: {torch.cuda.device_count()} CUDA device(s), gpu0 is {torch.cuda.get_device_name(0)}")
    if not args.no_profile:
        calibration = profile(quick=True, log=lambda line: print(f"  {line}", flush=True))
        print(f"calibration written to {calibration.save()}")
    failures: list[str] = []
    runs: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="pearl-gpu-smoke-") as tmp:
        root = Path(args.out) if args.out else Path(tmp)
        for name, algorithm in algorithms().items():
            if args.algorithms and name not in args.algorithms:
                continue
            for serialized in (True, False) if args.modes == "both" else (True,):
                plan = gpu_plan(algorithm, serialized, args.steps, args.device)
                out = root / f"{name}-{plan.mode}"
                result = pearl.train(algorithm, total_steps=args.steps, seed=0, plan=plan, out=out, eval_episodes=2,
                                     progress=False)
                report(name, plan, result)
                problems = check(plan, result)
                failures += [f"{name} ({plan.mode}): {problem}" for problem in problems]
                runs.append({"algorithm": name, "mode": plan.mode, "samples_per_s": result.samples_per_second,
                             "executed_on": result.executed_on, "problems": problems,
                             "kernels": kernel_rows(plan, result.to_dict())})
    if args.json:
        Path(args.json).write_text(json.dumps(runs, indent=1))
    if failures:
        print("\ngpu_smoke: FAILED: kernels did not run where their plan put them:", file=sys.stderr)
        for line in failures:
            print(f"  {line}", file=sys.stderr)
        return 1
    print("\ngpu_smoke: every kernel ran on its planned device")
    return 0


if __name__ == "__main__":
    sys.exit(main())
