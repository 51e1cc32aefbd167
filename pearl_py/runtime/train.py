"""``pearl.train``: run an algorithm under a plan and return what was measured.

Example::

    >>> algo = pearl.DQN("CartPole-v1", batch_size=64)
    >>> result = pearl.train(algo, total_steps=50_000, seed=0, out="runs/dqn")
    >>> result.eval_return_mean >= 475
    True
"""
from __future__ import annotations

from pathlib import Path

from pearl_py.algorithms.base import Algorithm
from pearl_py.optimize.plan import Plan
from pearl_py.runtime.result import RunResult
from pearl_py.runtime.serial import SerialExecutor


def train(algorithm: Algorithm, total_steps: int, seed: int = 0, *, plan: Plan | str | None = None,
          out: str | Path | None = None, eval_episodes: int = 10, eval_freq: int = 0,
          progress: bool | None = None) -> RunResult:
    """Train ``algorithm`` for ``total_steps`` env steps; write logs and ``result.json`` under ``out``.

    ``plan``: None or "serial" runs the serial reference executor on this machine's CPU.
    """
    if plan not in (None, "serial"):
        raise ValueError(f"plan {plan!r}: this build runs the serial executor only (plan=None)")
    out_dir = Path(out) if out is not None else None
    executor = SerialExecutor(algorithm, seed, out_dir=out_dir, eval_episodes=eval_episodes,
                              eval_freq=eval_freq, progress=progress)
    result = executor.run(total_steps)
    if out_dir is not None:
        result.save(out_dir / "result.json")
    return result
