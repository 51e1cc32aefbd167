"""The "Tuning" section of a run's report, from ``plan.prediction.tuning``.

Written by :func:`pearl_py.pipeline.tune.tune_plan` (``pearl run --auto --tune``): every
candidate plan it trialled, predicted (modelled from calibrated or modelled costs) beside
measured (a few seconds of real training), and the one kept.

Example::

    >>> trial_rows(plan)[0]
    ['1', 'parallel (overlapped)', 'inference: cpu / fused', '3,521 (calibrated)', '1,205', '5,120 steps in 4.3 s', '7.9 s', 'kept']
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from pearl_py.report import fmt

if TYPE_CHECKING:
    from pearl_py.plan import Plan, Trial

TITLE = "Tuning (the model's top plans, each trialled briefly)"
HEADER = ["rank", "executor", "placements that differ", "samples/s predicted", "samples/s measured",
          "measured window", "trial", "kept"]


def _differing(trials: tuple[Trial, ...]) -> list[str]:
    """Kernels whose placement is not the same in every trial."""
    kernels = list(trials[0].placements)
    return [k for k in kernels if len({t.placements[k] for t in trials}) > 1]


def trial_rows(plan: Plan) -> list[list[str]]:
    """One row per trial, in the model's order (rank 1 = the optimizer's choice)."""
    record = plan.prediction.tuning
    if record is None or not record.trials:
        return []
    differing = _differing(record.trials)
    rows = []
    for t in record.trials:
        placed = "; ".join(f"{k}: {fmt.placement(t.placements[k], variant=True)}"  # variants differ most
                           for k in differing) or "(the same)"
        measured = t.measured_samples_per_s
        rows.append([
            str(t.rank), f"{t.executor} ({t.mode})", placed,
            f"{fmt.rate(t.predicted_samples_per_s)} ({t.predicted_source})",
            fmt.rate(measured) if measured is not None else f"failed: {t.error}",
            f"{t.window_env_steps:,} steps in {fmt.seconds(t.window_s)}" if measured is not None else "-",
            f"{t.trial_s:.1f} s" if t.trial_s is not None else "-",
            "kept" if t.kept else ""])
    return rows


def sentences(plan: Plan) -> list[str]:
    """Which plan was kept and why, what was measured, and what tuning cost."""
    record = plan.prediction.tuning
    if record is None:
        return []
    return [f"Kept plan {record.kept} of {len(record.trials)}: {record.reason}.",
            f"Each trial trains a throwaway copy of the run under its plan for about {record.seconds:g} s "
            "after learning starts; measured samples/s are env steps per second of training time from the "
            "end of the first training round to the end of the last (prefill, process start and compiles "
            f"excluded). Tuning took {record.tuning_s:.1f} s before the run."]
