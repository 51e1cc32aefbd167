"""``pearl run CONFIG [--steps N] [--seed S] [--auto | --plan PLAN] [--out DIR] ...``: train from a config.

Example::

    $ pearl run examples/configs/dqn_cartpole.yaml --auto --out runs/dqn
    dqn on CartPole-v1: 50000 env steps in 14.8 s (3386 samples/s, measured); eval return 500.0 ± 0.0 over 10 episodes
"""
from __future__ import annotations

import argparse
from pathlib import Path


def run_main(args: argparse.Namespace) -> int:
    """Train the config's algorithm under the flags' plan; print the measured figures and where the files went."""
    from pearl_py.pipeline.train import train
    from pearl_py.pipeline.tune import TuneOptions
    from pearl_py.run_config import load_config

    cfg = load_config(args.config).with_overrides(total_steps=args.steps, seed=args.seed)
    s = cfg.settings
    out = Path(args.out) if args.out else Path("runs") / f"{Path(args.config).stem}-seed{s.seed}"
    algo = cfg.make_algorithm()
    plan = "auto" if args.auto else (args.plan or "local")
    if args.resume:
        out = Path(args.out) if args.out else Path(args.resume)
        plan = args.plan or Path(args.resume) / "plan.yaml"
    tune = TuneOptions(args.tune_top_k, args.tune_seconds) if args.tune else False
    result = train(algo, total_steps=s.total_steps, seed=s.seed, out=out, eval_episodes=s.eval_episodes,
                   eval_freq=s.eval_freq, plan=plan, objective=args.objective, backend=args.backend,
                   address=args.address, resume=args.resume, tune=tune)
    print(f"{s.algorithm} on {s.env}: {result.env_steps} env steps in {result.wall_seconds:.1f} s "
          f"({result.samples_per_second:.0f} samples/s, measured); eval return "
          f"{result.eval_return_mean:.1f} ± {result.eval_return_std:.1f} over {len(result.eval_returns)} episodes")
    if result.best_eval:
        print(f"best periodic evaluation: {result.best_eval['return_mean']:.1f} at step {result.best_eval['step']}")
    print(f"wrote {out / 'result.json'}" + (f" and {out / 'report.html'}" if (out / "report.html").exists() else ""))
    return 0
