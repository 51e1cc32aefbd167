"""Seconds per vector step of each env_step backend (``pearl_py.kernels.env_step``) that can step the env here,
timed as ``pearl profile`` times them (the process's CPU time per call, median of 7 chunks), with the load
average beside them: on a loaded machine the figures are labelled "under load" and are no speed claim.

Run::

    python benchmarks/env_backends.py [--env CartPole-v1] [--envs 1 8 16]
"""
from __future__ import annotations

import argparse
import os

from pearl_py import kernels
from pearl_py.profile.microbench import OFF_POLICY, BenchPoint, build, time_call
from pearl_py.protocol.kernel import ENV_STEP


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--envs", type=int, nargs="+", default=[1, 8, 16])
    args = parser.parse_args()
    load = os.getloadavg()[0]
    label = f"under load (load average {load:.1f} on {os.cpu_count()} CPUs)" if load > 0.5 else f"load {load:.1f}"
    print(f"env_step of {args.env}, us per vector step, {label}")
    for variant in kernels.REGISTRY.variants(ENV_STEP, "cpu"):
        why = variant.available()[1] or (variant.env_support(args.env) if variant.env_support else None)
        if why:
            print(f"  {variant.name:<14} not run: {why}", flush=True)
            continue
        timed = [time_call(build(ENV_STEP, variant.name, BenchPoint(ENV_STEP, env_id=args.env, batch=n), OFF_POLICY)[1])
                 for n in args.envs]
        print(f"  {variant.name:<14} " + "  ".join(f"{n} envs {s * 1e6:8.1f}" for n, s in zip(args.envs, timed)), flush=True)


if __name__ == "__main__":
    main()
