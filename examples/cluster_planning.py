"""Plan and simulate DQN on a 64-GPU cluster you don't have.

The platform is ``hetero-cluster-8x8gpu`` from the catalogue: 8 nodes of one EPYC 7742 and
8 A100s (64 GPUs), every worker joined to the head node over kernel TCP 40GbE and to the
head node's Alveo U250 over kernel-bypass 40GbE. The optimizer chooses the placement
(modelled figures); the discrete-event simulator then plays the plan with queues, the
rate limiter, parameter broadcasts and link contention (simulated figures), and the
report gets a "Simulated" section with a timeline of two steady-state rounds.

Run::

    /work/venv/bin/python examples/cluster_planning.py [--out out/cluster]
"""
from __future__ import annotations

import argparse

import pearl_py as pearl
from pearl_py.simulate.inputs import simulate_plan, with_simulation

PLATFORM = "hetero-cluster-8x8gpu"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="out/cluster")
    args = parser.parse_args()
    platform = pearl.Platform.load(PLATFORM)
    print(f"{PLATFORM}: {len(platform.by_kind('gpu'))} GPUs, {len(platform.by_kind('cpu'))} CPUs, "
          f"{len(platform.by_kind('fpga'))} FPGA")
    algo = pearl.DQN("CartPole-v1", n_envs=8, train_freq=64, gradient_steps=8, batch_size=512,
                     prioritized_replay=True, net_arch=[256, 256])
    plan = pearl.plan(algo, platform, objective="throughput")
    p = plan.prediction
    print(f"plan (modelled): {p.samples_per_s:,.0f} samples/s, bottleneck {p.bottleneck}")
    for kernel, place in plan.placements.items():
        print(f"  {kernel:16s} -> {place.device} x{place.replicas} ({place.variant})")
    sim = simulate_plan(plan, algo, platform)
    print(f"simulated: {sim.samples_per_s:,.0f} samples/s ({sim.samples_per_s / p.samples_per_s - 1:+.1%} vs "
          f"modelled), bottleneck {sim.bottleneck}, {sim.power_w:,.0f} W, {sim.samples_per_j:,.1f} samples/J")
    busiest = list(sim.utilization.items())[:5]
    print("simulated utilization: " + ", ".join(f"{name} {u:.0%}" for name, u in busiest))
    paths = pearl.export_plan(with_simulation(plan, sim), args.out)
    print(f"wrote {paths['html']} (with the simulated timeline)")


if __name__ == "__main__":
    main()
