"""The model's figure for a whole run: the actors' start, the warm-up that fills replay, then the learning phase.

For a run of ``horizon`` env steps (docs/optimizer.md, "Whole run")::

    seconds = S + W · T(warm-up kernels) + (H − W) · T(all kernels) + Σ setup_s,   W = min(warmup, H)

``S`` the start of the plan's actor processes (:func:`startup_seconds`), ``H`` and ``W`` rounded up to whole
vector steps (an on-policy protocol's to whole rollouts), so ``H / seconds`` compares with a run's measured
``RunResult.run_samples_per_second``.

Example::

    >>> run = whole_run(problem, protocol, solution.assignment, solution.performance, horizon=20_000)
    >>> run.warmup_steps, round(run.samples_per_s)
    (10000, 291)
"""
from __future__ import annotations

import math

from pearl_py.optimize.model import Assignment, Performance, evaluate
from pearl_py.optimize.problem import AssignmentProblem
from pearl_py.plan import WholeRun
from pearl_py.protocol import ENV_STEP, ProtocolGraph


def whole_vector_steps(env_steps: float, n_envs: int) -> int:
    """``env_steps`` rounded up to whole steps of ``n_envs`` envs (what the executors run and count)."""
    return -(-int(math.ceil(env_steps)) // n_envs) * n_envs


def modelled_calls(protocol: ProtocolGraph, horizon: float) -> dict[str, float]:
    """Calls of every kernel over a run of ``horizon`` env steps, as the model charges them: its rate over the whole
    run for a kind that runs in the warm-up, over the learning steps only for the others."""
    n = protocol.by_kind(ENV_STEP)[0].workload.n_envs if protocol.by_kind(ENV_STEP) else 1
    steps = whole_vector_steps(horizon, n)
    learning = steps - min(whole_vector_steps(protocol.warmup_steps, n), steps)
    return {k.name: k.rate * (steps if protocol.runs_in_warmup(k) else learning) for k in protocol.kernels()}


def whole_run(problem: AssignmentProblem, protocol: ProtocolGraph, assignment: Assignment,
              steady: Performance, horizon: float | None) -> WholeRun | None:
    """The modelled time of a run of ``horizon`` env steps (None when the length is unknown or infinite)."""
    if horizon is None or not math.isfinite(horizon) or horizon <= 0:
        return None
    # a warm-up step runs the kinds declared warmup (the env step and the replay insert: random actions need no
    # inference, and nothing trains yet), and the inference where the warm-up acts with the policy
    warm_kernels = {k.name for k in protocol.kernels() if protocol.runs_in_warmup(k)}
    warm = evaluate(problem, {k: c for k, c in assignment.items() if k in warm_kernels})
    envs = protocol.by_kind(ENV_STEP)
    n = protocol.rollout_size or (envs[0].workload.n_envs if envs else 1)
    horizon = whole_vector_steps(horizon, n)  # the executors step all n envs (collect whole rollouts): may overshoot
    warmup_steps = min(whole_vector_steps(protocol.warmup_steps, n), horizon)
    setup_s = sum(problem.option(k, c.device, c.variant).setup_s for k, c in assignment.items())
    startup_s = startup_seconds(problem, assignment)
    warmup_s = warmup_steps * warm.time_per_sample
    learning_s = (horizon - warmup_steps) * steady.time_per_sample
    seconds = startup_s + warmup_s + learning_s + setup_s
    return WholeRun(env_steps=int(horizon), warmup_steps=int(warmup_steps), warmup_s=warmup_s, learning_s=learning_s,
                    setup_s=setup_s, seconds=seconds,
                    warmup_samples_per_s=1.0 / warm.time_per_sample if warm.time_per_sample > 0 else math.inf,
                    samples_per_s=horizon / seconds if seconds > 0 else math.inf,
                    startup_s=startup_s, startup_source=problem.process_start_source)


def startup_seconds(problem: AssignmentProblem, assignment: Assignment) -> float:
    """Seconds before training starts the plan's actor processes: none for a serialized plan (one process);
    otherwise one process start per wave of actors, the actors of a wave starting side by side on the cores of
    the device (or pool) they run on (``ceil(actors / cores)`` waves)."""
    if problem.serialized:
        return 0.0
    waves = 1
    for kernel, choice in assignment.items():
        if problem.task(kernel).replicable:
            cores = max(1, problem.devices[choice.device].units * len(problem.devices[choice.device].physical))
            waves = max(waves, math.ceil(choice.replicas / cores))
    return problem.process_start_s * waves
