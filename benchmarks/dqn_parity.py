"""DQN learning parity with Stable-Baselines3 on the zoo's entries as they are (issue 33, item 7).

For each env and seed, pearl_py trains the zoo's ``dqn`` entry through the CLI (``pearl run --zoo ... --auto`` in a
subprocess: what a user runs) and SB3 trains a ``DQN`` with the same hyperparameters from the same entry
(``vs_sb3.sb3_job``). Both are then evaluated the same way: the run's ``eval_episodes`` greedy episodes
(``deterministic=True`` for SB3), episode ``i`` on a fresh env reset with ``seed + EVAL_SEED_OFFSET + i``, as
pearl_py's final evaluation (``pearl_py.runtime.evaluation``). Printed per env: each seed's final greedy mean return
of both, their mean and std over the seeds, and whether pearl_py's mean is at least SB3's. Learning results, not
timings: run it under ``nice -n 19`` on any machine.

    python benchmarks/dqn_parity.py                                   # CartPole-v1 and Acrobot-v1, seeds 0..4
    python benchmarks/dqn_parity.py --envs CartPole-v1 --seeds 0 1 2
    python benchmarks/dqn_parity.py --envs Acrobot-v1 --seeds 0 --steps 20000   # a quick look only
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import sb3_side
from vs_sb3 import sb3_job

ROOT = Path(__file__).resolve().parent.parent
ZOO = ROOT / "tests" / "data" / "zoo" / "dqn.yml"
"""The zoo's DQN hyperparameters (DLR-RM/rl-baselines3-zoo, unchanged; tests/data/zoo/README.md)."""


def pearl_returns(env: str, seed: int, steps: int | None, out: Path) -> list[float]:
    """Final greedy returns of ``pearl run --zoo dqn.yml --env ENV --seed S --auto --out OUT`` (its result.json;
    its output in ``OUT.log``)."""
    command = [sys.executable, "-m", "pearl_py.cli", "run", "--zoo", str(ZOO), "--env", env, "--seed", str(seed),
               "--auto", "--out", str(out), "--overwrite"] + (["--steps", str(steps)] if steps else [])
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_suffix(".log"), "w") as log:     # pearl's output, its plan included, beside the run
        subprocess.run(command, check=True, stdout=log, stderr=subprocess.STDOUT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    return json.loads((out / "result.json").read_text())["eval_returns"]


def sb3_returns(env: str, seed: int, steps: int | None) -> list[float]:
    """Final greedy returns of SB3's DQN on the same entry, evaluated as pearl_py evaluates."""
    import torch

    from pearl_py.run_config.zoo import load_zoo
    from pearl_py.runtime.evaluation import EVAL_SEED_OFFSET

    torch.set_num_threads(1)
    cfg = load_zoo(ZOO, env).with_overrides(total_steps=steps)
    job = sb3_job(cfg)
    model = sb3_side.model(job, seed)
    model.learn(job["total_steps"])
    returns = []
    for i in range(cfg.settings.eval_episodes):
        eval_env = sb3_side.make_env(job)
        obs, _ = eval_env.reset(seed=seed + EVAL_SEED_OFFSET + i)
        total, done = 0.0, False
        while not done:
            action, _ = model.predict(obs, deterministic=True)
            obs, reward, terminated, truncated, _ = eval_env.step(action)
            total += float(reward)
            done = terminated or truncated
        eval_env.close()
        returns.append(total)
    return returns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--envs", nargs="+", default=["CartPole-v1", "Acrobot-v1"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--steps", type=int, help="override the entry's n_timesteps (quick looks only)")
    parser.add_argument("--runs", type=Path, help="keep pearl_py's runs and their output here (default: a temporary "
                        "folder, removed at the end)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dqn_parity-") as scratch:
        tmp = args.runs or Path(scratch)
        for env in args.envs:
            print(f"dqn {env}: the zoo's entry as it is, {args.steps or 'its n_timesteps'} steps; "
                  f"final greedy mean return per seed (measured)", flush=True)
            print(f"{'seed':>4} {'pearl_py':>9} {'SB3':>9}", flush=True)
            means: dict[str, list[float]] = {"pearl_py": [], "SB3": []}
            for seed in args.seeds:
                means["pearl_py"].append(float(np.mean(pearl_returns(env, seed, args.steps,
                                                                     tmp / f"{env}-{seed}"))))
                means["SB3"].append(float(np.mean(sb3_returns(env, seed, args.steps))))
                print(f"{seed:>4} {means['pearl_py'][-1]:9.1f} {means['SB3'][-1]:9.1f}", flush=True)
            for side, values in means.items():
                print(f"{side:>9}: mean {np.mean(values):.1f}, std {np.std(values):.1f} over {len(values)} seeds")
            verdict = "yes" if np.mean(means["pearl_py"]) >= np.mean(means["SB3"]) else "no"
            print(f"pearl_py's mean >= SB3's: {verdict}", flush=True)


if __name__ == "__main__":
    main()
