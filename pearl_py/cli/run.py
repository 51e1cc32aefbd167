"""``pearl run CONFIG | --zoo HYPERPARAMS.yml --env ENV [--set KEY=VALUE ...] [--steps N] [--seed S] [--auto | --plan
PLAN] [--out DIR] ...``: train from a config file or an rl-baselines3-zoo entry.

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
    from pearl_py.run_config.overrides import apply_sets
    from pearl_py.run_config.zoo import load_zoo
    from pearl_py.runtime.run_log import TENSORBOARD_EXTRA

    cfg = load_zoo(args.zoo, args.env) if args.zoo else load_config(args.config)
    cfg = apply_sets(cfg, args.sets).with_overrides(total_steps=args.steps, seed=args.seed,
                                                    checkpoint_freq=args.checkpoint_freq,
                                                    checkpoint_keep=args.checkpoint_keep)
    s = cfg.settings
    name = f"{s.algorithm}-{s.env}" if args.zoo else Path(args.config).stem
    out = Path(args.out) if args.out else Path("runs") / f"{name}-seed{s.seed}"
    algo = cfg.make_algorithm()
    plan = "auto" if args.auto else (args.plan or "local")
    if args.resume:
        out = Path(args.out) if args.out else Path(args.resume)
        saved = Path(args.resume) / "plan.yaml"  # the plan the run ran (a run without predictions saved none)
        plan = args.plan or (saved if saved.is_file() else plan)
    tune = TuneOptions(args.tune_top_k, args.tune_seconds) if args.tune else False
    result = train(algo, total_steps=s.total_steps, seed=s.seed, out=out, eval_episodes=s.eval_episodes,
                   eval_freq=s.eval_freq, plan=plan, objective=args.objective, backend=args.backend,
                   address=args.address, resume=args.resume, tune=tune, init_from=args.init_from,
                   checkpoint_freq=s.checkpoint_freq, checkpoint_keep=s.checkpoint_keep)
    print(f"{s.algorithm} on {s.env}: {result.env_steps} env steps in {result.wall_seconds:.1f} s "
          f"({result.samples_per_second:.0f} samples/s, measured); eval return "
          f"{result.eval_return_mean:.1f} ± {result.eval_return_std:.1f} over {len(result.eval_returns)} episodes")
    if result.best_eval:
        print(f"best periodic evaluation: {result.best_eval['return_mean']:.1f} at step {result.best_eval['step']}")
    print(f"wrote {out / 'result.json'}, the trained policy {out / 'policy.pt'} (pearl eval {out})"
          + (f" and {out / 'report.html'}" if (out / "report.html").exists() else ""))
    if (out / "tensorboard").is_dir():
        print(f"TensorBoard logs: tensorboard --logdir {out / 'tensorboard'}")
    else:
        print(f"TensorBoard logs off (CSV only): {TENSORBOARD_EXTRA}")
    return 0
