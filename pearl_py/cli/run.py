"""``pearl run CONFIG | --zoo HYPERPARAMS.yml --env ENV [--set KEY=VALUE ...] [--steps N] [--seed S] [--auto | --plan
PLAN] [--out DIR] ...``: train from a config file or an rl-baselines3-zoo entry.

Example::

    $ pearl run examples/configs/dqn_cartpole.yaml --auto --out runs/dqn
    dqn on CartPole-v1: 50000 env steps in 14.8 s (3386 samples/s, measured); eval return 500.0 ± 0.0 over 10 episodes
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pearl_py.pipeline.outputs import RunFolder
    from pearl_py.run_config import RunConfig, RunSettings


def run_main(args: argparse.Namespace) -> int:
    """Train the config's algorithm under the flags' plan; print the measured figures and where the files went."""
    from pearl_py.pipeline.outputs import check_resume_dir, claim_run_dir
    from pearl_py.run_config import load_config
    from pearl_py.run_config.overrides import apply_sets
    from pearl_py.run_config.zoo import load_zoo

    if args.zoo:
        module = [f"env_module={args.env_module}"] if args.env_module else []
        cfg = load_zoo(args.zoo, args.env, sets=args.sets + module)
    else:
        cfg = apply_sets(load_config(args.config, env_module=args.env_module), args.sets)
    cfg = cfg.with_overrides(total_steps=args.steps, seed=_seed(args.seed), checkpoint_freq=args.checkpoint_freq,
                             checkpoint_keep=args.checkpoint_keep, dedicated=args.dedicated)
    s = cfg.settings
    name = f"{s.algorithm}-{s.env}" if args.zoo else Path(args.config).stem
    out = Path(args.out) if args.out else Path("runs") / f"{name}-seed{s.seed}"
    if args.resume:
        finished = check_resume_dir(args.resume)
        if finished is not None:
            return _finished(Path(args.resume), finished, s)
        out = Path(args.out) if args.out else Path(args.resume)
    continues = bool(args.resume) and out.resolve() == Path(args.resume).resolve()  # in its own folder
    with claim_run_dir(out, overwrite=args.overwrite, continues=continues) as folder:
        return _train(args, cfg, folder)


def _train(args: argparse.Namespace, cfg: RunConfig, folder: RunFolder) -> int:
    """Train in the claimed ``folder``; print the measured figures and where the files went."""
    from pearl_py.pipeline.admission import admit_config
    from pearl_py.pipeline.train import train
    from pearl_py.pipeline.tune import TuneOptions
    from pearl_py.runtime.result import rate_label
    from pearl_py.runtime.run_log import TENSORBOARD_EXTRA

    s, out = cfg.settings, folder.path
    algo = cfg.make_algorithm()
    admit_config(algo, replay=args.backend == "local", error=cfg.error)
    plan = "auto" if args.auto else (args.plan or "local")
    if args.resume:
        saved = Path(args.resume) / "plan.yaml"  # the plan the run ran (a run without predictions saved none)
        plan = args.plan or (saved if saved.is_file() else plan)
    tune = TuneOptions(args.tune_top_k, args.tune_seconds) if args.tune else False
    result = train(algo, total_steps=s.total_steps, seed=s.seed, out=folder, eval_episodes=s.eval_episodes,
                   eval_freq=s.eval_freq, plan=plan, objective=args.objective, backend=args.backend,
                   address=args.address, resume=args.resume, tune=tune, init_from=args.init_from,
                   checkpoint_freq=s.checkpoint_freq, checkpoint_keep=s.checkpoint_keep,
                   overwrite=args.overwrite, oversubscribe=args.oversubscribe, adapt=args.adapt,
                   dedicated=s.dedicated, reuse_plan=not args.replan)
    startup = f" after {result.startup_seconds:.1f} s of start-up" if result.startup_seconds is not None else ""
    print(f"{s.algorithm} on {s.env}: {result.env_steps} env steps in {result.wall_seconds:.1f} s{startup} "
          f"({result.samples_per_second:.0f} samples/s, {rate_label(result.kernel_times)}); eval return "
          f"{result.eval_return_mean:.1f} ± {result.eval_return_std:.1f} over {len(result.eval_returns)} episodes")
    for correction in result.corrections:
        print(f"corrected at step {correction.step}: {correction.change} (result.json corrections)")
    if result.best_eval:
        print(f"best periodic evaluation: {result.best_eval['return_mean']:.1f} at step {result.best_eval['step']}")
    print(f"wrote {out / 'result.json'}, the trained policy {out / 'policy.pt'} (pearl eval {out})"
          + (f" and {out / 'report.html'}" if (out / "report.html").exists() else ""))
    if (out / "tensorboard").is_dir():
        print(f"TensorBoard logs: tensorboard --logdir {out / 'tensorboard'}")
    else:
        print(f"TensorBoard logs off (CSV only): {TENSORBOARD_EXTRA}")
    return 0


def _seed(seed: int | None) -> int | None:
    """``--seed``: a negative one (the zoo's -1) is a random seed, said on stderr and recorded in result.json."""
    if seed is None or seed >= 0:
        return seed
    import secrets
    import sys

    from pearl_py.run_config import MAX_SEED

    chosen = secrets.randbelow(MAX_SEED + 1)
    print(f"--seed {seed}: a random seed, {chosen}", file=sys.stderr)
    return chosen


def _finished(folder: Path, result: dict[str, Any], settings: RunSettings) -> int:
    """``--resume`` of a finished run: say so, change nothing (a UserError when it is another config's run)."""
    from pearl_py.errors import UserError

    theirs = (result["algorithm"], result["env"], result["seed"])
    mine = (settings.algorithm, settings.env, settings.seed)
    if theirs != mine:
        raise UserError(f"--resume {folder}: it holds a finished run of {theirs[0]} on {theirs[1]} (seed {theirs[2]}), "
                        f"not of this config's {mine[0]} on {mine[1]} (seed {mine[2]})")
    print(f"{folder} holds a finished run ({result['env_steps']} env steps, result.json); nothing to resume, "
          "nothing changed")
    return 0
