"""The acting loop per transition, part by part: env step, inference, replay insert and the loop's own work.

Runs a config's off-policy algorithm (default: the README job, zoo DQN on CartPole-v1) in the serial
executor with the fused inference and learner at one thread (what ``--auto`` picks on a 2-core machine), and
prints each acting part's measured microseconds per transition (its seconds over the env steps), their sum,
and the learner's share beside them; then the same parts of one single-transition replay insert, by the
compiled pass (the collectors' exact arrays) and by the converting path (anything else). The loop row is
what no kernel took (bookkeeping, logs, the schedule) over every step, training rounds included.

Run (one job at a time on the machine; the load average is printed)::

    python benchmarks/acting_loop.py [CONFIG] [--steps 20000] [--repeats 3]
"""
from __future__ import annotations

import argparse
import os
import timeit

import numpy as np
import torch

import pearl_py as pearl
from pearl_py.pipeline.train import make_executor
from pearl_py.protocol.kernel import ENV_STEP, INFERENCE, LEARNER_UPDATE, LOOP_WORK, REPLAY_INSERT
from pearl_py.replay import ReplayBuffer

ACTING = (ENV_STEP, INFERENCE, REPLAY_INSERT, LOOP_WORK)


def acting_parts(config: str, steps: int) -> dict[str, float]:
    """One serial run of ``config`` for ``steps`` env steps: microseconds per transition of each part."""
    algo = pearl.load_config(config).make_algorithm()
    plan = pearl.Plan.single_device(algo.protocol(serialized=True))
    for kind in (INFERENCE, LEARNER_UPDATE):
        plan.placements[kind] = pearl.Placement("cpu", "fused", 1)
    result = make_executor(algo, plan, 0, progress=False, eval_episodes=0).run(steps)
    parts = {name: result.kernel_times[name]["total_s"] / result.env_steps * 1e6
             for name in (*ACTING, LEARNER_UPDATE) if name in result.kernel_times}
    parts["acting"] = sum(parts.get(name, 0.0) for name in ACTING)
    return parts


def insert_paths(number: int = 20_000) -> dict[str, float]:
    """Microseconds per single-transition ``ReplayBuffer.add``: the compiled pass and the converting path."""
    obs, actions, rewards = np.zeros((1, 4), np.float32), np.zeros(1, np.int64), np.ones(1, np.float32)
    terminated = np.zeros(1, bool)
    with ReplayBuffer(100_000, (4,)) as buffer:
        exact = (obs, actions, rewards, obs, terminated)
        converted = (obs.astype(np.float64), actions, rewards, obs.astype(np.float64), terminated)
        buffer.add(*exact)   # compiles (or loads) the kernel outside the clock
        return {name: timeit.timeit(lambda args=args: buffer.add(*args), number=number) / number * 1e6
                for name, args in (("compiled", exact), ("converting", converted))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", nargs="?", default="examples/configs/dqn_cartpole.yaml")
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    columns = (*ACTING, "acting", LEARNER_UPDATE)
    print(f"{args.config}, {args.steps} steps, serial, fused kernels at 1 thread: us per transition (measured)")
    print("| run | " + " | ".join(columns) + " | load |")
    print("|---" * (len(columns) + 2) + "|")
    for repeat in range(args.repeats):
        parts = acting_parts(args.config, args.steps)
        print(f"| {repeat} | " + " | ".join(f"{parts.get(c, 0.0):.1f}" for c in columns)
              + f" | {os.getloadavg()[0]:.2f} |")
    paths = insert_paths()
    print(f"single-transition replay insert: compiled {paths['compiled']:.2f} us, converting "
          f"{paths['converting']:.2f} us (load {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
