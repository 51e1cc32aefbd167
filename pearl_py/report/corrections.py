"""The "Corrections during the run" section of a run's report, from result.json's ``corrections``.

Written by the run's monitor (:mod:`pearl_py.runtime.monitor`): each time the plan's kernels fell behind their
prediction for long enough, what was re-timed in the run, what changed (or was kept) and why; the learning curve
marks the steps.

Example::

    >>> rows(run)[0]
    ['7,168', '3,584', 'learner threads 2 -> 1', '356.0 us', '738.0 us', '2 threads 741.2 us; 1 thread 433.9 us', '58%']
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pearl_py.report import fmt

MODE = "mode"
"""A mode correction's ``kernel`` (:data:`pearl_py.runtime.monitor.MODE`; the report does not import the runtime)."""

TITLE = "Corrections during the run"
HEADER = ["env step", "updates", "change", "expected per call", "measured per call (window)",
          "re-timed in the run (median per call)", "samples/s of expected"]


def rows(run: Mapping[str, Any]) -> list[list[str]]:
    """One row per decision of the monitor, in order (every figure measured but the expected one); a mode
    correction's figures are seconds per env step, not per call, and say so."""
    def cost(c: Mapping[str, Any], seconds: float) -> str:
        return fmt.seconds(seconds) + (" per env step" if c.get("kernel") == MODE else "")
    return [[f"{c['step']:,}", f"{c['updates']:,}", c["change"], cost(c, c["predicted_s"]), cost(c, c["measured_s"]),
             "; ".join(f"{option} {cost(c, s)}" for option, s in c["retimed_s"].items()) or "-",
             fmt.percent(c["ratio"])] for c in run.get("corrections") or []]


def marks(run: Mapping[str, Any]) -> tuple[tuple[float, str], ...]:
    """The learning curve's marks: each switch's env step and what changed."""
    return tuple((float(c["step"]), c["change"]) for c in run.get("corrections") or [] if c["switched"])


def sentences(run: Mapping[str, Any]) -> list[str]:
    """Why each decision was made, and the prediction recomputed for the run as executed."""
    out = [f"Step {c['step']:,}: {c['reason']}." for c in run.get("corrections") or []]
    executed = run.get("prediction_as_executed")
    if executed:
        whole = executed.get("run_samples_per_s")
        out.append(f"The plan's prediction for the run as executed (modelled, with the costs re-timed in the run from "
                   f"each correction on): {fmt.rate(executed['samples_per_s'])} samples/s of training"
                   + (f", {fmt.rate(whole)} over the whole run" if whole else "") + ".")
    out.append("The run's monitor compares its kernels with the plan's prediction over its last rounds and acts when "
               "the plan stays more than 25% slower (docs/runtime.md, \"Runs that correct themselves\"); "
               "`--no-adapt` runs the plan as given.")
    return out
