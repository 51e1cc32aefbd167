"""Simulator vs measured: run the local parallel backend, then simulate the same plan with the run's
measured per-kernel latencies, and compare samples/s (whole run, start-up phase included).

Each case runs ``--repeats`` times; timings are noisy on a shared machine, so compare the
ratio within one run, never across runs. Every run figure is measured; every simulator
figure is simulated (from measured latencies).

Run::

    /work/venv/bin/python benchmarks/sim_vs_measured.py [--steps 8000] [--repeats 2]
"""
from __future__ import annotations

import argparse
import os

import pearl_py as pearl
from pearl_py.plan import Placement, Plan
from pearl_py.runtime.parallel import ParallelExecutor
from pearl_py.simulate.measured import simulate_measured

SYNC_EVERY = 4
CASES = {
    # the zoo's CartPole DQN: the learner process is the bottleneck
    "zoo DQN (learner-bound)": dict(train_freq=256, gradient_steps=128, batch_size=64, learning_starts=1000,
                                    net_arch=[256, 256]),
    # one update per 64 steps: the actor process is the bottleneck
    "light learner (actor-bound)": dict(train_freq=64, gradient_steps=1, batch_size=64, learning_starts=1000,
                                        net_arch=[64, 64]),
}


def run_case(hyper: dict, steps: int, seed: int) -> tuple[float, float, str]:
    algo = pearl.DQN("CartPole-v1", **hyper)
    plan = Plan.single_device(algo.protocol())
    plan.placements.update(env_step=Placement("cpu", replicas=1), inference=Placement("cpu", replicas=1))
    result = ParallelExecutor(algo, plan, seed=seed, sync_every=SYNC_EVERY, eval_episodes=1).run(steps)
    sim = simulate_measured(algo, plan, result, units=os.cpu_count() or 1, sync_every=SYNC_EVERY)
    return result.samples_per_second, sim.run_samples_per_s, sim.bottleneck


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8000)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    print(f"{'case':30s} {'measured/s':>11s} {'simulated/s':>12s} {'sim/measured':>13s}")
    for name, hyper in CASES.items():
        for seed in range(args.repeats):
            measured, simulated, _ = run_case(hyper, args.steps, seed)
            print(f"{name:30s} {measured:11,.0f} {simulated:12,.0f} {simulated / measured - 1:+12.1%}")


if __name__ == "__main__":
    main()
