"""Optimizer at cluster scale: both objectives' solver, time, gap and bound on 8 to 64 nodes of cluster-64x8gpu.

Each node is one 64-core EPYC 7742 and 8 A100s (the first N nodes of the catalogue's cluster-64x8gpu).
Workloads:

* ``heavy-dqn``: DQN with 8 envs per actor and the environment charged a heavyweight simulator's cost
  (``--env-ms`` per env step, default 4 ms: a robotics simulator at ~250 steps/s per core), so that
  actors, not the learner, need most of the cluster (over 1000 actor replicas);
* ``dqn_cartpole`` and ``ddpg_pendulum``: the example configs as ``pearl plan`` builds them
  (run length as the horizon).

Every cost is the Estimator's (modelled; calibrated where this machine's calibration applies). For each
workload, scale and objective it prints ``solve(problem, objective, time_limit_s=5)``'s solver, its
wall-clock seconds, the gap to the proven bound and that bound (as samples/s or samples/J), with the
machine's load average (1 min) beside it: the machine is shared, so a time means little without it.

Run::

    /work/venv/bin/python benchmarks/optimizer_scale.py [--nodes 8 16 32 64] [--env-ms 4] [--time-limit 5]
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from sim_scaling import HeavyEnv, first_nodes

import pearl_py as pearl
from pearl_py.estimate import Estimator
from pearl_py.optimize.builder import build_problem
from pearl_py.optimize.milp import milp_size
from pearl_py.optimize.solve import solve
from pearl_py.platform import Platform
from pearl_py.run_config import load_config

CONFIGS = Path(__file__).resolve().parents[1] / "examples" / "configs"


def workloads(env_ms: float):
    """``(name, protocol, estimator, horizon)`` of every workload."""
    heavy = pearl.DQN("CartPole-v1", n_envs=8, train_freq=64, batch_size=256, net_arch=[256, 256])
    yield "heavy-dqn", heavy.protocol(), HeavyEnv(Estimator(use_cache=False), env_ms * 1e-3), None
    for name in ("dqn_cartpole", "ddpg_pendulum"):
        config = load_config(str(CONFIGS / f"{name}.yaml"))
        yield name, config.make_algorithm().protocol(), Estimator(), config.settings.total_steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[8, 16, 32, 64])
    parser.add_argument("--env-ms", type=float, default=4.0)
    parser.add_argument("--time-limit", type=float, default=5.0)
    args = parser.parse_args()

    cluster = Platform.load("cluster-64x8gpu")
    print(f"{os.cpu_count()} CPUs; load average at start {os.getloadavg()[0]:.2f} (1 min)")
    print("| workload | nodes | objective | solver | seconds | gap | proven bound | plan | load |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, protocol, estimator, horizon in workloads(args.env_ms):
        for nodes in args.nodes:
            platform = cluster if nodes == 64 else first_nodes(cluster, nodes)
            problem = build_problem(protocol, platform, estimator, horizon=horizon)
            for objective in ("throughput", "power"):
                started = time.perf_counter()
                sol = solve(problem, objective, time_limit_s=args.time_limit)
                seconds = time.perf_counter() - started
                unit = "samples/s" if objective == "throughput" else "samples/J"
                rate = sol.performance.samples_per_s if objective == "throughput" else sol.performance.samples_per_j
                bound = f"{1 / sol.bound:,.1f} {unit}" if sol.bound > 0 else "none"
                print(f"| {name} | {nodes} | {objective} | {sol.solver} | {seconds:.2f} | {sol.gap:.2%} | {bound} | "
                      f"{rate:,.1f} {unit}, {sol.performance.power_w:,.0f} W | {os.getloadavg()[0]:.2f} |", flush=True)
        print(f"({name}: MILP size {milp_size(problem)} at {args.nodes[-1]} nodes)")


if __name__ == "__main__":
    main()
