"""Simulated scaling curve: DQN samples/s vs actor nodes (1 to 64) on cluster-64x8gpu, and where the
learner becomes the bottleneck.

Layout (Ape-X style, fixed so that only the node count changes): 32 actors on every node
(each one core for its env, one for its inference, as the performance model counts
replicas), the replay on ``node0.gpu1``, the learner and the parameter publication on
``node0.gpu0``; transitions travel over 40GbE TCP. The env is charged a heavyweight
simulator's cost (``--env-ms`` per env step, default 4 ms, as benchmarks/optimizer_scale.py)
so that actors, not the learner, need most of the cluster; every other cost is the
Estimator's (modelled). The look-ahead window grows with the actors (two vector steps
per actor), since a one-round window caps in-flight steps at ``train_freq``.

Every figure printed is simulated (S) or modelled (M).

Run::

    /work/venv/bin/python benchmarks/sim_scaling.py [--env-ms 4] [--out docs/figures]
"""
from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pearl_py as pearl
from pearl_py.estimate import Estimator
from pearl_py.optimize.builder import build_problem
from pearl_py.optimize.model import Choice, evaluate
from pearl_py.platform import Platform
from pearl_py.protocol import KernelKind
from pearl_py.report import svg
from pearl_py.simulate import SimSchedule, simulate

NODES = (1, 2, 4, 8, 16, 20, 24, 32, 48, 64)
ACTORS_PER_NODE = 32
LEARNER = "node0.gpu0"


class HeavyEnv:
    """The Estimator, except that one env step costs ``env_s`` per environment on a CPU core (everything
    else, the variants offered included, is the Estimator's)."""

    def __init__(self, estimator: Estimator, env_s: float) -> None:
        self.estimator, self.env_s = estimator, env_s

    def __getattr__(self, name: str):
        return getattr(self.estimator, name)

    def cost(self, kernel, device, variant="reference", **options):
        cost = self.estimator.cost(kernel, device, variant, **options)
        if kernel.kind != KernelKind.ENV_STEP:
            return cost
        latency = self.env_s * kernel.workload.n_envs
        return dataclasses.replace(cost, latency_s=latency, energy_j=cost.energy_j * latency / cost.latency_s)


def first_nodes(platform: Platform, count: int) -> Platform:
    """The platform's first ``count`` nodes and the links among them."""
    keep = {f"node{i}" for i in range(count)}
    devices = {name: d for name, d in platform.devices.items() if d.node in keep}
    links = [(a, b, spec) for a, b, spec in platform.links if a in devices and b in devices]
    return Platform(f"{platform.name}[{count} nodes]", devices, links, platform.description)


def point(algo, cluster: Platform, estimator, nodes: int) -> dict:
    problem = build_problem(algo.protocol(), first_nodes(cluster, nodes), estimator)
    actors = f"pool:epyc-7742x{nodes}" if nodes > 1 else "node0.cpu"
    replicas = ACTORS_PER_NODE * nodes
    assignment = {"env_step": Choice(actors, replicas=replicas), "inference": Choice(actors, replicas=replicas),
                  "replay_insert": Choice("node0.gpu1"), "replay_sample": Choice("node0.gpu1"),
                  "learner_update": Choice(LEARNER), "param_sync": Choice(LEARNER)}
    model = evaluate(problem, assignment)
    cfg = algo.config
    steps = max(40 * cfg.train_freq, 20 * replicas) * cfg.n_envs
    lookahead = max(1, -(-2 * replicas // cfg.train_freq))
    sim = simulate(problem, assignment, SimSchedule.from_config(cfg, steps, learning_starts=0,
                                                                lookahead_rounds=lookahead), trace=False)
    return {"nodes": nodes, "model": model.samples_per_s, "model_bottleneck": model.bottleneck,
            "sim": sim.samples_per_s, "sim_bottleneck": sim.bottleneck,
            "learner_busy": sim.utilization.get(LEARNER, 0.0), "power_w": sim.power_w}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env-ms", type=float, default=4.0)
    parser.add_argument("--out", help="write scaling.md (table + inline SVG curve) here")
    args = parser.parse_args()
    algo = pearl.DQN("CartPole-v1", n_envs=8, train_freq=64, gradient_steps=8, batch_size=512, net_arch=[256, 256])
    cluster = Platform.load("cluster-64x8gpu")
    estimator = HeavyEnv(Estimator(), args.env_ms * 1e-3)
    rows = [point(algo, cluster, estimator, n) for n in NODES]
    lines = ["| actor nodes | samples/s (S) | bottleneck (S) | learner busy (S) | power (S) | samples/s (M) |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['nodes']} | {r['sim']:,.0f} | {r['sim_bottleneck']} | {100 * r['learner_busy']:.0f}% | "
                     f"{r['power_w'] / 1e3:,.1f} kW | {r['model']:,.0f} |")
    crossing = next((r["nodes"] for r in rows if r["sim_bottleneck"] == LEARNER), None)
    verdict = (f"The learner ({LEARNER}) becomes the bottleneck at {crossing} actor nodes (simulated): "
               f"beyond it, more nodes add no samples/s." if crossing else
               "The learner never becomes the bottleneck up to 64 nodes (simulated).")
    print("\n".join(lines) + "\n\n" + verdict)
    if args.out:
        points = [(float(r["nodes"]), r["sim"], f"{r['nodes']} nodes", r["nodes"] == crossing) for r in rows]
        plot = svg.scatter(points, "actor nodes (32 actors each)", "samples per second (simulated)",
                           "DQN on cluster-64x8gpu: simulated samples/s vs actor nodes")
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "scaling.md").write_text("\n".join(lines) + f"\n\n{verdict}\n\n{plot}\n")
        print(f"wrote {out / 'scaling.md'}")


if __name__ == "__main__":
    main()
