"""What a run measured beside what its plan predicted: per kernel, per device, in samples/s.

``run`` is a run's ``result.json`` data (:meth:`pearl_py.runtime.RunResult.to_dict`).

Example::

    >>> rows = kernel_rows(plan, result.to_dict())
    >>> rows[0][:3]
    ['learner_update', 'cpu / reference', '1.62 ms']
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pearl_py.protocol.kernel import ENV_STEP, LOOP_WORK, LOOP_WORK_LABEL, setup_timing
from pearl_py.report import content, fmt
from pearl_py.runtime.result import rate_label

if TYPE_CHECKING:
    from pearl_py.plan import Plan

KERNEL_HEADER = ["kernel", "device / variant", "predicted per call", "measured per call", "calls measured",
                 "predicted per sample", "measured per sample", "measured / predicted"]
RUNTIME_FIGURES = ("actors", "learner_threads", "inference", "replay", "nodes")
"""The parts of the runtime's layout (result.json ``layout``) a report lists."""


def _predicted_loop(plan: Plan, env_steps: int) -> tuple[float, float, str] | None:
    """``(seconds per sample, seconds per vector step, source)`` of the training loop's own work the plan charges
    with its kernels (``KernelCost.loop_s``: per env step call and per update), or None when it charges none."""
    per_sample, sources, per_vector_step = 0.0, set(), None
    for kernel in plan.placements:
        cost = content.placed_cost(plan, kernel)
        if cost is None or cost.loop_s <= 0:
            continue
        calls = predicted_calls_per_sample(plan, kernel, env_steps) or 0.0
        per_sample += cost.loop_s * calls
        sources.add(cost.loop_source)
        if plan.prediction.kinds.get(kernel) == ENV_STEP and calls:
            per_vector_step = 1.0 / calls
    if not sources:
        return None
    source = sources.pop() if len(sources) == 1 else "calibrated and modelled"
    return per_sample, per_sample * (per_vector_step or 1.0), source


def _loop_row(plan: Plan, run: dict[str, Any], steps: int) -> tuple[float, list[str]] | None:
    """The row of the loop's own work, per vector step: predicted from the kernels that carry it, derived by a
    serial executor (training time no kernel took: :data:`LOOP_WORK_LABEL`); a parallel run's processes do not
    time it."""
    predicted = _predicted_loop(plan, run["env_steps"])
    if predicted is None:
        return None
    predicted_sample, per_step, source = predicted
    timing = run["kernel_times"].get(LOOP_WORK)
    measured_sample = timing["total_s"] / steps if timing else 0.0
    ratio = f"{measured_sample / predicted_sample:.2f}×" if timing and predicted_sample else "–"
    return measured_sample, [
        f"{LOOP_WORK} (per vector step, beside the kernels)", "cpu", f"{fmt.seconds(per_step)} ({source})",
        f"{fmt.seconds(timing['mean_s'])} ({LOOP_WORK_LABEL})" if timing
        else "not measured (a parallel run's loops are not timed)",
        str(timing["calls"]) if timing else "0", fmt.seconds(predicted_sample),
        fmt.seconds(measured_sample) if timing else "–", ratio]


def _setup_row(plan: Plan, run: dict[str, Any], kernel: str, steps: int) -> tuple[float, list[str]] | None:
    """The row of ``kernel``'s one-off setup (a CUDA graph's capture, a compile), in total over the run: the calls
    the runtime timed as the setup (:func:`~pearl_py.protocol.kernel.setup_timing`, not among the kernel's own
    calls) beside the setup the model charges apart (``setup_s``); None when neither has one."""
    cost = content.placed_cost(plan, kernel)
    predicted = cost.setup_s if cost is not None and cost.setup_s > 0 else None
    timing = run["kernel_times"].get(setup_timing(kernel))
    if predicted is None and timing is None:
        return None
    measured_sample = timing["total_s"] / steps if timing else 0.0
    placement = plan.placements[kernel]
    return measured_sample, [
        f"{kernel} setup (one-off, in total)", f"{placement.device} / {placement.variant}",
        f"{fmt.seconds(predicted)} ({cost.setup_source})" if predicted is not None else "none predicted",
        fmt.seconds(timing["total_s"]) if timing else "not measured", str(timing["calls"]) if timing else "0",
        fmt.seconds(predicted / steps) if predicted is not None else "–",
        fmt.seconds(measured_sample) if timing else "–",
        f"{timing['total_s'] / predicted:.2f}×" if timing and predicted else "–"]


def predicted_calls_per_sample(plan: Plan, kernel: str, env_steps: int) -> float | None:
    """Calls of ``kernel`` per env step of the whole run, as predicted.

    The plan's rates are per sample of the learning phase (a synchronous plan's actor kernels run one call per
    replica, on its share of the envs); over a run whose whole-run prediction has a warm-up
    (:mod:`pearl_py.optimize.whole_run`), only the warm-up kernels (their kinds declare it: env step, replay
    insert) run in it, so the others' rate is scaled by the learning share.
    """
    rate = plan.prediction.rates.get(kernel)
    if rate is not None and content.splits_envs(plan, kernel):   # every actor: a call per vector step
        rate *= plan.placements[kernel].replicas
    whole = plan.prediction.run
    kind = content.kernel_kind(plan, kernel)
    if rate is None or whole is None or whole.env_steps != env_steps or (kind is not None and kind.warmup):
        return rate
    return rate * (env_steps - whole.warmup_steps) / env_steps


def kernel_rows(plan: Plan, run: dict[str, Any]) -> list[list[str]]:
    """One row per kernel, and one per kernel's one-off setup (:func:`_setup_row`), the slowest per sample first
    (measured); per sample is per env step of the run."""
    steps = max(run["env_steps"], 1)
    rows = []
    for kernel, placement in plan.placements.items():
        latency, source = content.predicted_call(plan, kernel)
        timing = run["kernel_times"].get(kernel)
        modelled_here = timing is not None and timing.get("source") == "modelled"
        measured_call = timing["mean_s"] if timing else None
        measured_sample = timing["total_s"] / steps if timing else 0.0
        calls = predicted_calls_per_sample(plan, kernel, run["env_steps"])
        predicted_sample = latency * calls if latency is not None and calls is not None else None
        ratio = (f"{measured_sample / predicted_sample:.2f}×" if predicted_sample and timing and not modelled_here
                 else "–")
        label = timing.get("label", "modelled") if modelled_here else ""  # e.g. "modelled (simulated FPGA)"
        rows.append((measured_sample, [
            kernel, f"{placement.device} / {placement.variant}",
            f"{fmt.seconds(latency)} ({source})" if latency is not None else "–",
            (f"not measured: {label}" if modelled_here else fmt.seconds(measured_call) if timing else "not run"),
            str(timing["calls"]) if timing else "0",
            fmt.seconds(predicted_sample) if predicted_sample is not None else "–",
            f"not measured: {label}" if modelled_here else fmt.seconds(measured_sample), ratio]))
        setup = _setup_row(plan, run, kernel, steps)
        if setup is not None:
            rows.append(setup)
    loop = _loop_row(plan, run, steps)
    if loop is not None:
        rows.append(loop)
    return [row for _, row in sorted(rows, key=lambda r: -r[0])]


def kernel_bars(plan: Plan, run: dict[str, Any]) -> list[tuple[str, float, float]]:
    """``(kernel, predicted s per sample, measured s per sample)`` for the paired bar chart; a kernel whose time
    the run charged from its model (a simulated device) shows no measured bar, and its label says so."""
    steps = max(run["env_steps"], 1)
    items = []
    for kernel in plan.placements:
        latency, _ = content.predicted_call(plan, kernel)
        timing = run["kernel_times"].get(kernel)
        predicted = latency * (predicted_calls_per_sample(plan, kernel, run["env_steps"]) or 0.0) \
            if latency is not None else 0.0
        modelled = timing is not None and timing.get("source") == "modelled"
        measured = timing["total_s"] / steps if timing and not modelled else 0.0
        items.append((f"{kernel}: {timing.get('label', 'modelled')}, not measured" if modelled else kernel,
                      predicted, measured))
    loop = _predicted_loop(plan, run["env_steps"])
    if loop is not None:
        timing = run["kernel_times"].get(LOOP_WORK)
        items.append((LOOP_WORK, loop[0], timing["total_s"] / steps if timing else 0.0))
    return items


def predicted_run_rate(plan: Plan, env_steps: int) -> tuple[float | None, str]:
    """The predicted samples/s to set beside a run's measured one, and what it covers.

    The whole-run figure (actor start-up, warm-up, learning, one-off setups:
    :mod:`pearl_py.optimize.whole_run`) when the plan was made for a run of this length; else the steady
    state of the learning phase.
    """
    if plan.prediction is None:
        return None, "the plan has no prediction"
    whole = plan.prediction.run
    if whole is not None and whole.env_steps == env_steps:
        startup = f"{fmt.seconds(whole.startup_s)} start-up + " if whole.startup_s else ""
        return whole.samples_per_s, (f"whole run: {startup}{whole.warmup_steps:,} warm-up + "
                                     f"{env_steps - whole.warmup_steps:,} learning steps")
    return plan.prediction.samples_per_s, "steady state of the learning phase"


def measured_run_rate(plan: Plan, run: dict[str, Any]) -> tuple[float, str]:
    """The measured samples/s that compares with :func:`predicted_run_rate`, and what it covers: env steps over
    start-up and training when the prediction is a whole run's and the run measured its start-up; else over
    training alone (the runtime's clock)."""
    whole = plan.prediction.run if plan.prediction is not None else None
    with_startup = run.get("run_samples_per_second")
    if whole is not None and whole.env_steps == run["env_steps"] and with_startup is not None:
        return with_startup, "whole run: start-up + training"
    return run["samples_per_second"], "training"


def headline_cards(plan: Plan, run: dict[str, Any]) -> list[tuple[str, str]]:
    """The four figures a run's report opens with: measured first, the prediction beside it."""
    predicted, _ = predicted_run_rate(plan, run["env_steps"])
    measured, _ = measured_run_rate(plan, run)
    versus = f" (predicted {fmt.rate(predicted)})" if predicted else ""
    return [(f"samples/s {rate_label(run.get('kernel_times', {}))}", fmt.rate(measured) + versus),
            ("eval return (measured)", f"{run['eval_return_mean']:.1f} ± {run['eval_return_std']:.1f}"),
            ("training wall time (measured)", fmt.seconds(run["wall_seconds"])),
            ("bottleneck (predicted)", plan.prediction.bottleneck)]


def summary_rows(plan: Plan, run: dict[str, Any]) -> list[tuple[str, str]]:
    predicted, covers = predicted_run_rate(plan, run["env_steps"])
    measured, measured_covers = measured_run_rate(plan, run)
    rows = [(f"samples/s {rate_label(run.get('kernel_times', {}))} ({measured_covers})", fmt.rate(measured)),
            (f"samples/s predicted ({covers})", fmt.rate(predicted) if predicted else "–")]
    if predicted:
        rows.append(("measured / predicted", f"{measured / predicted:.2f}"))
    if measured_covers != "training":
        rows.append(("samples/s measured (training)", fmt.rate(run["samples_per_second"])))
    simulated = plan.prediction.simulation if plan.prediction is not None else None
    if simulated is not None:
        rows += [("samples/s simulated (discrete-event, this plan)", fmt.rate(simulated.samples_per_s)),
                 ("measured / simulated", f"{run['samples_per_second'] / simulated.samples_per_s:.2f}")]
    steady = plan.prediction.samples_per_s if plan.prediction is not None else None
    if steady and predicted != steady:
        rows.append(("samples/s predicted (steady state of the learning phase)", fmt.rate(steady)))
    if run.get("startup_seconds") is not None:
        rows.append(("start-up (measured)", fmt.seconds(run["startup_seconds"])))
    rows += [("env steps (measured)", str(run["env_steps"])),
             ("training wall time (measured)", fmt.seconds(run["wall_seconds"])),
             ("eval return (measured)", f"{run['eval_return_mean']:.1f} ± {run['eval_return_std']:.1f}"),
             ("backend", run.get("backend", "serial"))]
    layout = run.get("layout") or {}
    rows += [(f"runtime: {key}", str(layout[key])) for key in RUNTIME_FIGURES if key in layout]
    lag = run.get("policy_lag") or {}
    if lag.get("max_observed") is not None:
        bound = "unbounded" if lag.get("bound") is None else f"bound {lag['bound']}"
        rows.append(("policy lag (measured)",
                     f"{lag['max_observed']} updates behind the serial order at most ({bound})"))
    return rows
