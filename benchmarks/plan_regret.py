"""Plan regret: does the model rank the plans as they measure? (issue 17.3)

For each case, the model's top-k plans for this machine (``candidate_plans``: both protocol modes, only
plans this machine can run) are each trained for the same number of env steps, interleaved and repeated
(``--repeats`` rounds, the order shuffled per round with a fixed seed), through the executor the real run
uses (:class:`pearl_py.pipeline.tune.TrialRunner`: a throwaway copy of the algorithm that starts learning
after a short prefill; steady-state samples/s from the end of the first training round to the end of the
last, on the runtime's clock). Per case it prints, per plan: the predicted and the median measured
samples/s; then the Spearman rank correlation between the two, and the regret of the model's choice:

    regret = best measured / measured of the model's first plan - 1        (goal: <= 5% in every case)

Cases: the zoo DQN (examples/configs/dqn_cartpole.yaml), a light-learner DQN that is actor-bound (a
16-unit network trained every 64 steps), the zoo DDPG, DQN with prioritized replay, and the zoo SAC and TD3
(Pendulum-v1). Measured figures are this machine's; the load average is printed before and after each case
(the machine must be quiet: one timing job at a time).

Run::

    python benchmarks/plan_regret.py [--cases dqn light-dqn ddpg per-dqn sac td3] [--top-k 3] [--repeats 3]
                                     [--seconds 4]
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from scipy.stats import spearmanr

from pearl_py.algorithms.core import BaseAlgorithm
from pearl_py.pipeline.planning import candidate_plans
from pearl_py.pipeline.tune import TrialRunner, trial_record
from pearl_py.run_config import load_config
from pearl_py.run_config.overrides import apply_sets

CONFIGS = Path(__file__).resolve().parents[1] / "examples" / "configs"


@dataclass(frozen=True)
class Case:
    name: str
    config: str
    overrides: dict


CASES = {
    "dqn": Case("zoo DQN CartPole", "dqn_cartpole.yaml", {}),
    "light-dqn": Case("light-learner DQN (actor-bound)", "dqn_cartpole.yaml",
                      {"net_arch": "[16]", "train_freq": 64, "gradient_steps": 1}),
    "ddpg": Case("zoo DDPG Pendulum", "ddpg_pendulum.yaml", {}),
    "per-dqn": Case("DQN with prioritized replay", "dqn_cartpole.yaml", {"prioritized_replay": "true"}),
    "sac": Case("zoo SAC Pendulum", "sac_pendulum.yaml", {}),
    "td3": Case("zoo TD3 Pendulum", "td3_pendulum.yaml", {}),
}


def algorithm_of(case: Case) -> tuple[BaseAlgorithm, int]:
    """The case's algorithm (config plus overrides) and its run length."""
    cfg = apply_sets(load_config(CONFIGS / case.config), [f"{key}={value}" for key, value in case.overrides.items()])
    return cfg.make_algorithm(), cfg.settings.total_steps


def load() -> str:
    return f"load {os.getloadavg()[0]:.2f}"


def run_case(case: Case, top_k: int, repeats: int, seconds: float, log: Callable[[str], None]) -> dict:
    algo, total_steps = algorithm_of(case)
    plans = candidate_plans(algo, top_k, "throughput", total_steps, log=lambda line: None)
    predicted = [trial_record(rank, plan).predicted_samples_per_s for rank, plan in enumerate(plans, start=1)]
    runner = TrialRunner(algo, seed=0, total_steps=total_steps)
    # every plan gets the same env steps: sized for `seconds` at the best predicted rate
    expected = max(predicted)
    measured: list[list[float]] = [[] for _ in plans]
    order = list(range(len(plans)))
    shuffle = random.Random(0)
    log(f"\n## {case.name} ({case.config}{', ' + str(case.overrides) if case.overrides else ''}): "
        f"{len(plans)} plans, {repeats} rounds, {load()}")
    for _ in range(repeats):
        shuffle.shuffle(order)
        for i in order:
            measured[i].append(runner(plans[i], seconds, expected).samples_per_s)
    medians = [statistics.median(m) for m in measured]
    log("| rank | mode | variants | predicted samples/s | measured samples/s (median; runs) |")
    log("|---|---|---|---|---|")
    for rank, (plan, p, m, runs) in enumerate(zip(plans, predicted, medians, measured), start=1):
        variants = ", ".join(f"{k} {v.variant}" for k, v in plan.placements.items() if v.variant != "reference")
        log(f"| {rank} | {plan.mode} | {variants or 'reference'} | {p:,.0f} | {m:,.0f} "
            f"({', '.join(f'{x:,.0f}' for x in runs)}) |")
    rho = spearmanr(predicted, medians).statistic if len(plans) > 2 else float("nan")
    regret = max(medians) / medians[0] - 1
    log(f"Spearman rank correlation (predicted vs measured): {rho:.2f}; regret of the model's choice: "
        f"{100 * regret:.1f}% (goal <= 5%); {load()}")
    return {"case": case.name, "spearman": rho, "regret": regret}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--top-k", type=int, default=3, help="plans per protocol mode the model ranks (default 3)")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved rounds over the plans (default 3)")
    parser.add_argument("--seconds", type=float, default=4.0,
                        help="steady-state seconds of each trial at the best predicted rate (default 4)")
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs; {load()} (1 min) at start; measured samples/s are steady-state, on the "
          "runtime's clock (in-process)")
    rows = [run_case(CASES[name], args.top_k, args.repeats, args.seconds, print) for name in args.cases]
    print("\n| case | Spearman | regret |\n|---|---|---|")
    for row in rows:
        print(f"| {row['case']} | {row['spearman']:.2f} | {100 * row['regret']:.1f}% |")


if __name__ == "__main__":
    main()
