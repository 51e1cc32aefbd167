"""Optimizer at cluster scale: 64 nodes x (one 64-core EPYC 7742 + 8 A100s), over 1000 actor replicas.

The environment is charged a heavyweight simulator's cost (``--env-ms`` per env step,
default 4 ms: a robotics simulator at ~250 steps/s per core) so that actors, not the
learner, need most of the cluster; every other cost comes from the Estimator's models.
``solve(..., time_limit_s=5)`` runs the MILP when it is small enough and hands over to
the heuristic, with its gap to the best proven bound, when the MILP runs out of time.

Run::

    /work/venv/bin/python benchmarks/optimizer_scale.py [--env-ms 4] [--time-limit 5]
"""
from __future__ import annotations

import argparse
import dataclasses
import time

import pearl_py as pearl
from pearl_py.estimate import Estimator
from pearl_py.optimize.builder import build_problem
from pearl_py.optimize.milp import milp_size
from pearl_py.optimize.solve import solve
from pearl_py.platform import Platform
from pearl_py.protocol import KernelKind


class HeavyEnv:
    """The Estimator, except that one env step costs ``env_s`` per environment on a CPU core."""

    def __init__(self, estimator: Estimator, env_s: float) -> None:
        self.estimator, self.env_s = estimator, env_s

    def cost(self, kernel, device, variant="reference"):
        cost = self.estimator.cost(kernel, device, variant)
        if kernel.kind != KernelKind.ENV_STEP:
            return cost
        latency = self.env_s * kernel.workload.n_envs
        return dataclasses.replace(cost, latency_s=latency, energy_j=cost.energy_j * latency / cost.latency_s)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env-ms", type=float, default=4.0)
    parser.add_argument("--time-limit", type=float, default=5.0)
    args = parser.parse_args()

    platform = Platform.load("cluster-64x8gpu")
    algo = pearl.DQN("CartPole-v1", n_envs=8, train_freq=64, batch_size=256, net_arch=[256, 256])
    started = time.perf_counter()
    problem = build_problem(algo.protocol(), platform, HeavyEnv(Estimator(use_cache=False), args.env_ms * 1e-3))
    built = time.perf_counter() - started
    cores = sum(d.parallel_units for d in platform.by_kind("cpu"))
    print(f"platform {platform.name}: {len(platform)} devices, {cores} CPU cores, "
          f"{len(platform.by_kind('gpu'))} GPUs")
    print(f"problem: {len(problem.tasks)} kernels, {len(problem.options)} options over "
          f"{len([d for d in problem.devices.values() if problem_has_options(problem, d.name)])} placement targets "
          f"(symmetry-reduced + CPU pool), MILP size {milp_size(problem)}; built in {built:.2f} s")
    for objective in ("throughput", "power"):
        sol = solve(problem, objective, time_limit_s=args.time_limit)
        perf = sol.performance
        actors = {k: c for k, c in sol.assignment.items() if problem.task(k).replicable}
        replicas = sum(c.replicas for c in actors.values())
        print(f"\n[{objective}] solver={sol.solver} in {sol.seconds:.2f} s, optimal={sol.optimal}, "
              f"gap to bound={sol.gap:.2%}")
        print(f"  {perf.samples_per_s:,.0f} samples/s, {perf.samples_per_j:,.1f} samples/J, {perf.power_w:,.0f} W, "
              f"bottleneck {perf.bottleneck}")
        print(f"  actor replicas: {replicas} ("
              + ", ".join(f"{k} {c.replicas} on {c.device}" for k, c in actors.items()) + ")")
        print("  others: " + ", ".join(f"{k}@{c.device}" for k, c in sol.assignment.items() if k not in actors))


def problem_has_options(problem, device: str) -> bool:
    return any(d == device for (_, d, _) in problem.options)


if __name__ == "__main__":
    main()
