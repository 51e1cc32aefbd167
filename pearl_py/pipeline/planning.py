"""The plan a run executes: the local CPU as the serial reference, an optimized plan, or a file.

Example::

    >>> plan = resolve_plan(algo, "auto")          # calibrate if needed, optimize on this machine (either mode)
    >>> plan = resolve_plan(algo, "local")         # every kernel on the local CPU, serially
    >>> plan = resolve_plan(algo, "out/plan.yaml") # a plan written by `pearl plan`
    >>> [p.mode for p in candidate_plans(algo, k=3)]   # what `--tune` trials
    ['overlapped', 'serialized', 'overlapped']
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pearl_py.algorithms.off_policy.base import Algorithm
from pearl_py.errors import PlanningError
from pearl_py.optimize.api import plan as optimize
from pearl_py.optimize.api import ranked_plans
from pearl_py.pipeline.plan_check import check_plan, load_checked_plan
from pearl_py.plan import Plan
from pearl_py.platform import Platform
from pearl_py.runtime.kernel_devices import plan_problems

PLAN_WORDS = ("auto", "local", "serial")
"""What ``plan`` may be besides a :class:`Plan` or a plan file's path."""


def ensure_calibration(log: Callable[[str], None] = print, algorithm: Any = None) -> None:
    """Profile this machine's CPU once (minutes; its progress goes to ``log``) if no calibration is cached; with
    ``algorithm``, also the kinds its family needs when the cached calibration predates them (the on-policy
    kernels: about a minute)."""
    from pearl_py.estimate.calibration import Calibration
    from pearl_py.estimate.profiler import ON_POLICY_KINDS, profile
    from pearl_py.protocol.kernel import ADVANTAGE, LEARNER_UPDATE

    cached = Calibration.load_default()
    if cached is None:
        log("no calibration of this machine is cached: profiling it once (pearl profile) ...")
        path = profile(log=log).save()
        log(f"calibration cached at {path}; later runs reuse it")
        return
    family = getattr(algorithm, "family", "off_policy")
    predates = cached.models and (cached.model(ADVANTAGE, "reference") is None
                                  or cached.model(LEARNER_UPDATE, "reference", family=family) is None)
    if family == "on_policy" and predates:   # an empty calibration means "model every cost": left as it is
        log("the cached calibration has no on-policy kernels: profiling them once (pearl profile) ...")
        path = profile(kinds=ON_POLICY_KINDS, log=log, gpus=False, families_of=(family,), into=cached).save()
        log(f"calibration cached at {path}; later runs reuse it")


def local_serial_plan(algorithm: Algorithm, total_steps: int | None = None, dedicated: bool = False) -> Plan:
    """Every kernel on the local CPU, stages one after another: the serial executor's plan, predicted."""
    local = Platform.local()
    cpu = local.by_kind("cpu")[0].name
    protocol = algorithm.protocol(serialized=True)
    pins = {kernel.name: cpu for kernel in protocol.kernels()}
    return optimize(protocol, local, "throughput", {"pin": pins}, pareto_points=2, horizon=total_steps,
                    estimator=_estimator(dedicated))


def _estimator(dedicated: bool) -> Any:
    """This machine's estimator; ``dedicated``: multi-threaded options valued alone (docs/optimizer.md, "Robust")."""
    from pearl_py.estimate import Estimator

    return Estimator(dedicated=dedicated)


def candidate_plans(algorithm: Algorithm, k: int, objective: str = "throughput", total_steps: int | None = None,
                    log: Callable[[str], None] = print, dedicated: bool = False) -> list[Plan]:
    """The ``k`` best plans for this machine by the model, over both protocol modes, best first.

    Overlapped plans run on the parallel runtime, serialized ones on the serial executor; where the
    model finds them close, run-to-run noise may order them otherwise, so ``--tune`` trials both. Only
    plans this machine can run as planned (:func:`~pearl_py.runtime.kernel_devices.plan_problems` finds
    none) are returned, each one
    dropped said in ``log``. Calibrates first if needed; on ties the overlapped plan (the one
    ``resolve_plan(algo, "auto")`` runs) comes first.
    """
    ensure_calibration(log, algorithm)
    local = Platform.local()
    plans = [plan for serialized in (False, True)
             for plan in ranked_plans(algorithm.protocol(serialized=serialized), local, objective, k=k,
                                      horizon=total_steps, estimator=_estimator(dedicated))]
    runnable = []
    for plan in plans:  # only plans this machine runs as planned are trialled (and so can be kept)
        problems = plan_problems(plan)
        if problems:
            article = "an" if plan.mode[0] in "aeiou" else "a"
            log(f"tuning: skipping {article} {plan.mode} candidate this machine cannot run as planned: {problems[0]}")
        else:
            runnable.append(plan)
    if not runnable:
        raise PlanningError("tune: no candidate plan can run on this machine as planned: " + plan_problems(plans[0])[0])
    figure = "time_per_sample_s" if objective == "throughput" else "energy_per_sample_j"
    return sorted(runnable, key=lambda plan: float(f"{getattr(plan.prediction.figures, figure):.9g}"))[:k]  # ties


def auto_plan(algorithm: Algorithm, objective: str = "throughput", total_steps: int | None = None,
              one_process: bool = True, dedicated: bool = False) -> Plan:
    """The optimizer's plan for this machine: the best plan of the algorithm's parallel protocol (overlapped or
    synchronous, actor processes) and, with ``one_process``, the best serialized one (every stage in this
    process), whichever the model finds faster (or more frugal). With the run's length (``total_steps``) the two
    compare over the whole run, the actors' start-up included (a short run may not repay it,
    :mod:`pearl_py.optimize.whole_run`); else in the steady state. On a tie the parallel plan. ``dedicated``:
    multi-threaded options valued by their calibrated cost alone, not as expected beside other processes.

    Example::

        >>> auto_plan(pearl.PPO("CartPole-v1", n_envs=8, n_steps=32), total_steps=100_000).mode
        'serialized'
    """
    local = Platform.local()
    modes = (False, True) if one_process else (False,)
    estimator = _estimator(dedicated)
    plans = [optimize(algorithm.protocol(serialized=serialized), local, objective, horizon=total_steps,
                      estimator=estimator) for serialized in modes]
    return min(plans, key=lambda plan: _plan_cost(plan, objective))   # min keeps the first of equals


def _plan_cost(plan: Plan, objective: str) -> float:
    """What ``auto`` minimises: the whole run's seconds when known (throughput), else the objective per sample."""
    figures = plan.prediction.figures
    if objective == "throughput":
        whole = plan.prediction.run
        return float(f"{whole.seconds if whole is not None else figures.time_per_sample_s:.9g}")
    return float(f"{figures.energy_per_sample_j:.9g}")


def resolve_plan(algorithm: Algorithm, plan: Plan | str | Path, objective: str = "throughput",
                 log: Callable[[str], None] = print, total_steps: int | None = None, one_process: bool = True,
                 dedicated: bool = False) -> Plan:
    """"serial": all on one CPU, unpredicted; "local": the same, predicted; "auto": optimized
    on :meth:`Platform.local` after calibrating (:func:`auto_plan`; ``one_process``: a serialized plan may win, as
    for the local runtime; Ray runs only parallel plans); a path: a saved plan; a :class:`Plan`: itself. A plan the
    user gives (a path or a :class:`Plan`) is checked for ``algorithm`` first (:mod:`pearl_py.pipeline.plan_check`).

    ``total_steps`` (the run's length) lets the optimizer choose variants with a one-off setup
    (a compile) when they pay it back within the run, and weigh the actors' start-up. ``dedicated``: the machine
    runs nothing else (multi-threaded options valued alone: docs/optimizer.md).
    """
    if isinstance(plan, Plan):
        check_plan(plan, algorithm)
        return plan
    if plan == "serial":
        return Plan.single_device(algorithm.protocol(serialized=True))
    if plan == "local":
        return local_serial_plan(algorithm, total_steps, dedicated)
    if plan == "auto":
        ensure_calibration(log, algorithm)
        return auto_plan(algorithm, objective, total_steps, one_process, dedicated)
    path = Path(plan)
    if not path.suffix:
        raise PlanningError(f"plan {plan!r}: expected 'auto', 'local', 'serial', a Plan or a plan.yaml path")
    return load_checked_plan(path, algorithm)
