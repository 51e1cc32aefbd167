"""``pearl.train``: run an algorithm under a plan, return what was measured, write the report.

Example::

    >>> algo = pearl.DQN("CartPole-v1", batch_size=64)
    >>> result = pearl.train(algo, total_steps=50_000, seed=0, plan="auto", out="runs/dqn")
    >>> result.samples_per_second, result.plan["solver"]
    (2412.7, 'milp')
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pearl_py.algorithms.base import Algorithm
from pearl_py.errors import UserError
from pearl_py.optimize.plan import Plan
from pearl_py.runtime.planning import resolve_plan
from pearl_py.runtime.result import RunResult
from pearl_py.runtime.serial import SerialExecutor

BACKENDS = ("local", "ray")


def runs_serially(plan: Plan) -> bool:
    """True for plans whose stages run one after another: the serial executor's kind."""
    return plan.solver == "single-device" or plan.predicted.get("mode") == "serialized"


def train(algorithm: Algorithm, total_steps: int, seed: int = 0, *, plan: Plan | str | Path | None = None,
          out: str | Path | None = None, eval_episodes: int = 10, eval_freq: int = 0,
          progress: bool | None = None, objective: str = "throughput", backend: str = "local",
          address: str | None = None, resume: str | Path | None = None,
          log: Callable[[str], None] = print) -> RunResult:
    """Train ``algorithm`` for ``total_steps`` env steps under ``plan``.

    ``plan``: ``None`` (serial reference, no predictions), ``"local"`` (serial, with the
    model's predictions), ``"auto"`` (calibrate this machine if needed, then optimize for
    ``objective``), a :class:`Plan`, or a path to a saved plan. Serialized plans run on the
    serial executor, overlapped ones on the local parallel runtime (``backend="local"``) or
    on Ray (``backend="ray"``, ``address`` of a running cluster or None for a local one).
    ``resume``: a folder holding the checkpoint of an interrupted parallel run.
    With ``out``: logs, ``result.json`` and, when the plan has predictions, the plan's report
    with what the run measured beside them (``report.md``, ``report.html``, ``plan.yaml``, ``plan.json``).
    """
    if backend not in BACKENDS:
        raise UserError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    resolved = resolve_plan(algorithm, plan, objective, log, total_steps=total_steps)
    out_dir = Path(out) if out is not None else None
    common = dict(out_dir=out_dir, eval_episodes=eval_episodes, eval_freq=eval_freq, progress=progress)
    if backend == "ray":
        from pearl_py.runtime.ray_backend import RayExecutor

        executor = RayExecutor(algorithm, resolved, seed, address=address, **common)
    elif runs_serially(resolved):
        if resume is not None:
            raise UserError("--resume continues a parallel run; this plan runs serially (use --auto or a "
                            "parallel plan)")
        executor = SerialExecutor(algorithm, seed, plan=resolved, **common)
    else:
        from pearl_py.runtime.parallel import ParallelExecutor

        executor = ParallelExecutor(algorithm, resolved, seed, resume_from=Path(resume) if resume else None,
                                    **common)
    if out_dir is not None and resolved.predicted:
        resolved.export(out_dir)  # the plan is on disk before the run: `--resume` finds it after a stop
    result = executor.run(total_steps)
    if out_dir is not None:
        result.save(out_dir / "result.json")
        if resolved.predicted:
            resolved.export(out_dir, run=result.to_dict())
    return result
