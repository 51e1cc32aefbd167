"""report.md: the plan as Markdown tables and sentences.

Example::

    >>> text = render_markdown(plan)
    >>> text.splitlines()[0]
    '# Plan for pearl-cpu-gpu-fpga: throughput objective'
"""
from __future__ import annotations

from typing import Any

from pearl_py.optimize.plan import Plan
from pearl_py.report import content, fmt, measured, simulation, tuning


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return out


def render_markdown(plan: Plan, run: dict[str, Any] | None = None) -> str:
    """The plan's report; with ``run`` (a result.json dict) it opens with what the run measured."""
    p = plan.predicted
    lines = [f"# {content.title(plan)}", "", p.get("limit", ""), "", p.get("comparison", ""), ""]
    if content.optimality_sentence(plan):
        lines += [f"**{content.optimality_sentence(plan)}**", ""]
    if run is not None:
        lines += ["## Predicted and measured", ""]
        lines += _table(["figure", "value"], [list(r) for r in measured.summary_rows(plan, run)])
        lines += [""] + _table(measured.KERNEL_HEADER, measured.kernel_rows(plan, run)) + [""]
    lines += _table(["figure", "value"], [list(r) for r in content.summary_rows(plan)])
    lines += ["", "## Assignment", ""] + _table(content.ASSIGNMENT_HEADER, content.assignment_rows(plan))
    why = content.choice_sentences(plan)
    if why:
        lines += [""] + [f"- {sentence}" for sentence in why]
    if tuning.tuning(plan):
        lines += ["", f"## {tuning.TITLE}", ""] + _table(tuning.HEADER, tuning.trial_rows(plan))
        lines += [""] + [f"- {sentence}" for sentence in tuning.sentences(plan)]
    other, rows = content.alternative_rows(plan)
    if rows:
        lines += ["", f"## This plan beside the {other} objective's", ""]
        lines += _table(["kernel", f"{plan.objective} plan", f"{other} plan", ""], rows)
    lines += ["", "## Cost of each kernel on each device", "",
              "Latency per call and how it is known (measured, calibrated or modelled).", ""]
    header, rows = content.cost_table(plan)
    lines += _table(header, rows)
    lines += ["", "## Utilization", ""]
    lines += _table(["device or link", "busy share of each sample"],
                    [[name, fmt.percent(v) + (" (bottleneck)" if hi else "")]
                     for name, v, hi in content.utilization_items(plan)])
    if p.get("pareto"):
        lines += ["", "## Throughput-power Pareto front", ""]
        lines += _table(["samples/s", "samples/J", "power", "assignment"], content.pareto_rows(plan))
    if simulation.simulation(plan):
        lines += ["", f"## {simulation.TITLE}", ""]
        lines += _table(["figure", "value"], [list(r) for r in simulation.summary_rows(plan)])
        lines += [""] + _table(["device or link", "busy (simulated)", "busy (modelled)"],
                               simulation.utilization_rows(plan))
        lines += ["", simulation.timeline_svg(plan)]
    notes = content.infeasible_notes(plan)
    if notes:
        lines += ["", "## Placements ruled out", ""] + [f"- {n}" for n in notes]
    lines += ["", "All figures are predictions of pearl_py's performance model (docs/optimizer.md).", ""]
    return "\n".join(lines)
