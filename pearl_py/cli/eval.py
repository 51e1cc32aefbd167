"""``pearl eval RUN_DIR [--best] [--episodes N] [--seed S] [--render rgb_array --video out.mp4]``: evaluate a saved
policy (by default at the run's final evaluation's seed, run seed + 10,000, so its eval returns come out again).

Example::

    $ pearl eval runs/dqn --episodes 5 --video cartpole.mp4
    dqn on CartPole-v1 (runs/dqn: 50000 env steps, seed 0): eval return 500.0 ± 0.0 over 5 episodes (seeds 10000..10004)
    video of episode 1: cartpole.mp4
    $ pearl eval runs/dqn --best
    dqn on CartPole-v1 (runs/dqn: the best evaluated policy, step 30000 (eval return 500.0), seed 0): eval return ...
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from pearl_py.errors import UserError


def eval_main(args: argparse.Namespace) -> int:
    """Load the run's policy, run its greedy episodes, print the returns (and where the video went)."""
    from pearl_py.runtime.evaluation import EVAL_SEED_OFFSET
    from pearl_py.runtime.video import EpisodeVideo
    from pearl_py.saved_policy import load

    if args.episodes < 1:
        raise UserError(f"--episodes must be >= 1, got {args.episodes}")
    if (args.render is None) != (args.video is None):
        raise UserError("--render rgb_array and --video PATH go together (the frames are rendered to be filmed)")
    policy = load(args.run_dir, best=args.best)
    m = policy.manifest
    seed = args.seed if args.seed is not None else m.seed + EVAL_SEED_OFFSET
    spec = policy.algorithm.spec
    video = EpisodeVideo(m.env, Path(args.video), spec.frame_stack, spec.env_kwargs) if args.video else None
    returns = policy.evaluate(args.episodes, seed, env_factory=video.make_env if video else None)
    which = (f"the best evaluated policy, step {m.best_evaluation['step']} (eval return "
             f"{m.best_evaluation['return_mean']:.1f})" if m.best_evaluation else f"{m.env_steps} env steps")
    print(f"{m.algorithm} on {m.env} ({args.run_dir}: {which}, seed {m.seed}): eval return "
          f"{np.mean(returns):.1f} ± {np.std(returns):.1f} over {len(returns)} episodes "
          f"(seeds {seed}..{seed + len(returns) - 1})")
    if video is not None:
        print(f"video of episode 1: {video.finish()}")
    return 0
