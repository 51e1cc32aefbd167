"""``pearl.train``: run an algorithm under a plan, return what was measured, write the report.

Example::

    >>> algo = pearl.DQN("CartPole-v1", batch_size=64)
    >>> result = pearl.train(algo, total_steps=50_000, seed=0, plan="auto", out="runs/dqn")
    >>> result.samples_per_second, result.plan["solver"]
    (2412.7, 'milp')
    >>> result = pearl.train(algo, total_steps=50_000, plan="auto", tune=pearl.TuneOptions(top_k=3, seconds=5))
    >>> [t["measured_samples_per_s"] for t in result.plan["prediction"]["tuning"]["trials"]]
    [1204.9, 1391.3, 1010.2]
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pearl_py.algorithms.core import BaseAlgorithm
from pearl_py.errors import UserError
from pearl_py.pipeline.families import Executor, family_of
from pearl_py.pipeline.planning import candidate_plans, resolve_plan
from pearl_py.plan import Plan
from pearl_py.runtime.result import RunResult

if TYPE_CHECKING:
    from pearl_py.pipeline.tune import TuneOptions

BACKENDS = ("local", "ray")


def runs_serially(plan: Plan) -> bool:
    """True for plans whose stages run one after another: the serial executor's kind."""
    return plan.serialized


def make_executor(algorithm: BaseAlgorithm, plan: Plan, seed: int, *, backend: str = "local",
                  address: str | None = None, resume: str | Path | None = None, **common: Any) -> Executor:
    """The executor of the algorithm's family that runs ``plan``: on Ray, the serial executor (serialized plans)
    or the local parallel runtime (:mod:`pearl_py.pipeline.families`).

    ``common``: ``out_dir``, ``eval_episodes``, ``eval_freq``, ``progress``.
    """
    family = family_of(algorithm)
    if backend == "ray":
        if family.ray is None:
            raise UserError(f"{algorithm.name} ({family.name}) has no Ray executor yet; run it locally")
        return family.ray(algorithm, seed, plan=plan, address=address, **common)
    if runs_serially(plan):
        if resume is not None:
            raise UserError("--resume continues a parallel run; this plan runs serially (use --auto or a "
                            "parallel plan)")
        return family.serial(algorithm, seed, plan=plan, **common)
    if family.parallel is None:
        raise UserError(f"{algorithm.name} ({family.name}) runs its serial executor only for now: its plans must be "
                        "serialized")
    return family.parallel(algorithm, seed, plan=plan, resume_from=Path(resume) if resume else None, **common)


def train(algorithm: BaseAlgorithm, total_steps: int, seed: int = 0, *,
          plan: Plan | str | Path | None = None, out: str | Path | None = None, eval_episodes: int = 10,
          eval_freq: int = 0, progress: bool | None = None, objective: str = "throughput", backend: str = "local",
          address: str | None = None, resume: str | Path | None = None, tune: bool | TuneOptions = False,
          log: Callable[[str], None] = print) -> RunResult:
    """Train ``algorithm`` for ``total_steps`` env steps under ``plan``.

    ``plan``: ``None`` (serial reference, no predictions), ``"local"`` (serial, with the
    model's predictions), ``"auto"`` (calibrate this machine if needed, then optimize for
    ``objective``), a :class:`Plan`, or a path to a saved plan. Serialized plans run on the
    serial executor, overlapped ones on the local parallel runtime (``backend="local"``) or
    on Ray (``backend="ray"``, ``address`` of a running cluster or None for a local one).
    ``resume``: a folder holding the checkpoint of an interrupted parallel run.
    ``tune`` (with ``plan="auto"``, ``True`` or a :class:`~pearl_py.pipeline.tune.TuneOptions`):
    trial the model's top-k plans for a few seconds each and run the fastest measured; the
    trials are recorded in ``plan.prediction.tuning`` (docs/runtime.md).
    With ``out``: logs, ``result.json`` and, when the plan has predictions, the plan's report
    with what the run measured beside them (``report.md``, ``report.html``, ``plan.yaml``, ``plan.json``).
    The executors are the algorithm's family's (:mod:`pearl_py.pipeline.families`); a family the model does not
    cover yet runs its serial executor, unpredicted, for ``plan`` None, "serial" or "local" (other plans: UserError).
    """
    if backend not in BACKENDS:
        raise UserError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if not family_of(algorithm).planned:
        return _train_unplanned(algorithm, total_steps, seed, plan=plan, out=out, eval_episodes=eval_episodes,
                                eval_freq=eval_freq, progress=progress, backend=backend, resume=resume, tune=tune,
                                log=log)
    _admit_replay(algorithm)
    if tune:
        resolved = _tuned_plan(algorithm, total_steps, seed, plan, objective, backend, resume, tune, log)
    else:
        resolved = resolve_plan(algorithm, plan, objective, log, total_steps=total_steps)
    out_dir = Path(out) if out is not None else None
    executor = make_executor(algorithm, resolved, seed, backend=backend, address=address, resume=resume,
                             out_dir=out_dir, eval_episodes=eval_episodes, eval_freq=eval_freq, progress=progress)
    if out_dir is not None and resolved.prediction is not None:
        resolved.export(out_dir)  # the plan is on disk before the run: `--resume` finds it after a stop
    result = executor.run(total_steps)
    if out_dir is not None:
        result.save(out_dir / "result.json")
        if resolved.prediction is not None:
            resolved.export(out_dir, run=result.to_dict())
    return result


def _admit_replay(algorithm: BaseAlgorithm) -> None:
    """Refuse, before anything is allocated, a replay larger than this machine's available memory."""
    from pearl_py.optimize.admission import check_replay_memory
    from pearl_py.platform import Platform
    from pearl_py.platform.local import memory_gb

    check_replay_memory(algorithm.protocol(), Platform.local(), memory_gb(field="MemAvailable") * 1e9,
                        "this machine's available memory (MemAvailable)")


def _train_unplanned(algorithm: BaseAlgorithm, total_steps: int, seed: int, *, plan: Plan | str | Path | None,
                     out: str | Path | None, eval_episodes: int, eval_freq: int, progress: bool | None, backend: str,
                     resume: str | Path | None, tune: bool | TuneOptions, log: Callable[[str], None]) -> RunResult:
    """A family the performance model does not cover runs its serial executor, unpredicted. ``plan="local"``
    (`pearl run` without plan flags) runs the same, saying so."""
    family = family_of(algorithm)
    if plan not in (None, "serial", "local") or backend != "local" or resume is not None or tune:
        raise UserError(f"{algorithm.name} ({family.name}) runs on its serial executor only for now (plan None, "
                        "'serial' or 'local'; no --auto, --plan, --tune, --resume or the Ray backend)")
    if plan == "local":
        log(f"{algorithm.name} ({family.name}): running the serial reference executor without predictions "
            "(the performance model does not cover this family's kernels yet)")
    out_dir = Path(out) if out is not None else None
    result = family.serial(algorithm, seed, out_dir=out_dir, eval_episodes=eval_episodes, eval_freq=eval_freq,
                           progress=progress).run(total_steps)
    if out_dir is not None:
        result.save(out_dir / "result.json")
    return result


def _tuned_plan(algorithm: BaseAlgorithm, total_steps: int, seed: int, plan: Plan | str | Path | None,
                objective: str, backend: str, resume: str | Path | None, tune: bool | TuneOptions,
                log: Callable[[str], None]) -> Plan:
    """The fastest measured of the model's top-k plans (``pearl_py.pipeline.tune``)."""
    from pearl_py.pipeline.tune import TrialRunner, TuneOptions, tune_plan

    if tune is not True and not isinstance(tune, TuneOptions):
        raise UserError(f"tune must be True, False or a TuneOptions, got {tune!r}")
    options = tune if isinstance(tune, TuneOptions) else TuneOptions()
    if backend != "local" or resume is not None:
        raise UserError("tune (--tune) trials plans on this machine's executors: it cannot run on the Ray backend "
                        "or continue a run (--resume)")
    if plan != "auto":
        raise UserError(f"tune (--tune) trials the optimizer's top plans, so it needs plan='auto' (--auto), "
                        f"got plan={plan!r}")
    if objective != "throughput":
        raise UserError(f"tune (--tune) measures samples/s, so it needs the throughput objective, got {objective!r}")
    candidates = candidate_plans(algorithm, options.top_k, objective, total_steps, log)
    return tune_plan(candidates, TrialRunner(algorithm, seed, total_steps), options, log)
