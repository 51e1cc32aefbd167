"""report.html: one self-contained page (inline CSS and SVG, no scripts, no external files).

Example::

    >>> page = render_html(plan)
    >>> "<svg" in page and "http" not in page.split("<svg")[0]
    True
"""
from __future__ import annotations

from html import escape

from typing import Any

from pearl_py.optimize.plan import Plan
from pearl_py.report import content, measured, simulation, svg, tuning

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;color:#18181b;max-width:1000px;margin:32px auto;
padding:0 24px;line-height:1.45}
h1{font-size:26px;margin:0 0 4px}h2{font-size:19px;margin:32px 0 8px;border-bottom:1px solid #e4e4e7;
padding-bottom:4px}
.lead{font-size:16px;background:#fff7ed;border-left:4px solid #c2410c;padding:10px 14px;margin:16px 0}
.note{color:#3f3f46;background:#f4f4f5;border-left:4px solid #2563eb;padding:8px 14px}
.cards{display:grid;grid-template-columns:repeat(4,1fr);gap:10px;margin:16px 0}
.card{border:1px solid #e4e4e7;border-radius:8px;padding:10px 12px}.card b{display:block;font-size:20px}
.card span{color:#52525b;font-size:13px}
table{border-collapse:collapse;width:100%;font-size:14px;margin:6px 0}
th,td{text-align:left;padding:5px 8px;border-bottom:1px solid #e4e4e7;vertical-align:top}
th{background:#fafafa;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.moved td{background:#fff7ed}.small{color:#52525b;font-size:13px}
"""


def _table(header: list[str], rows: list[list[str]], row_class=None) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = []
    for row in rows:
        cls = f" class='{row_class(row)}'" if row_class and row_class(row) else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _measured_section(plan: Plan, run: dict[str, Any]) -> list[str]:
    rows = measured.summary_rows(plan, run)
    cards = "".join(f"<div class='card'><span>{escape(k)}</span><b>{escape(v)}</b></div>" for k, v in rows[:4])
    return ["<h2>Predicted and measured</h2>", f"<div class='cards'>{cards}</div>",
            _table(["figure", "value"], [list(r) for r in rows[4:]]),
            svg.paired_bars(measured.kernel_bars(plan, run), "Time per collected sample, by kernel",
                            ("predicted", "measured")),
            _table(measured.KERNEL_HEADER, measured.kernel_rows(plan, run))]


def render_html(plan: Plan, run: dict[str, Any] | None = None) -> str:
    """The plan's page; with ``run`` (a result.json dict) it adds what the run measured."""
    p = plan.predicted
    summary = content.summary_rows(plan)
    cards = "".join(f"<div class='card'><span>{escape(k)}</span><b>{escape(v)}</b></div>" for k, v in summary[:4])
    details = _table(["figure", "value"], [list(r) for r in summary[4:]])
    parts = [f"<h1>{escape(content.title(plan))}</h1>",
             f"<p class='lead'>{escape(p.get('limit', ''))}</p>",
             *([f"<p class='lead'><b>{escape(content.optimality_sentence(plan))}</b></p>"]
               if content.optimality_sentence(plan) else []),
             f"<div class='cards'>{cards}</div>", details,
             "<h2>Assignment</h2>", _table(content.ASSIGNMENT_HEADER, content.assignment_rows(plan))]
    why = content.choice_sentences(plan)
    if why:
        parts.append("<ul>" + "".join(f"<li>{escape(sentence)}</li>" for sentence in why) + "</ul>")
    if run is not None:
        parts += _measured_section(plan, run)
    if tuning.tuning(plan):
        parts += [f"<h2>{escape(tuning.TITLE)}</h2>",
                  _table(tuning.HEADER, tuning.trial_rows(plan), row_class=lambda r: "moved" if r[-1] else ""),
                  *(f"<p class='small'>{escape(sentence)}</p>" for sentence in tuning.sentences(plan))]
    other, rows = content.alternative_rows(plan)
    if rows:
        parts += [f"<h2>Throughput or power: this plan beside the {escape(other)} objective's</h2>",
                  f"<p class='note'>{escape(p.get('comparison', ''))}</p>",
                  _table(["kernel", f"{plan.objective} plan", f"{other} plan", ""], rows,
                         row_class=lambda r: "moved" if r[3] else "")]
    parts += ["<h2>Utilization</h2>",
              svg.bar_chart(content.utilization_items(plan), "Busy share of each sample (bottleneck in orange)")]
    points = content.pareto_points(plan)
    if len(points) > 1:
        parts += ["<h2>Throughput-power Pareto front</h2>",
                  svg.scatter(points, "samples per second", "samples per joule",
                              "Every plan on the front: none is both faster and more frugal"),
                  _table(["samples/s", "samples/J", "power", "assignment"], content.pareto_rows(plan))]
    else:
        parts += ["<h2>Throughput-power Pareto front</h2>",
                  "<p>One plan is both the fastest and the most frugal, so the front is a single point.</p>"]
    if simulation.simulation(plan):
        parts += [f"<h2>{escape(simulation.TITLE)}</h2>",
                  _table(["figure", "value"], [list(r) for r in simulation.summary_rows(plan)]),
                  _table(["device or link", "busy (simulated)", "busy (modelled)"],
                         simulation.utilization_rows(plan)),
                  simulation.timeline_svg(plan)]
    header, rows = content.cost_table(plan)
    parts += ["<h2>Cost of each kernel on each device</h2>",
              "<p class='small'>Latency per call, and how it is known: measured, calibrated (fitted to "
              "micro-benchmarks on this machine) or modelled (from the device's specification).</p>",
              _table(header, rows)]
    notes = content.infeasible_notes(plan)
    if notes:
        parts += ["<h2>Placements ruled out</h2>", "<ul>" + "".join(f"<li>{escape(n)}</li>" for n in notes)
                  + "</ul>"]
    parts.append("<p class='small'>All figures are predictions of pearl_py's performance model "
                 "(docs/optimizer.md); a run's report adds what was measured.</p>")
    body = "\n".join(parts)
    return (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<title>{escape(content.title(plan))}</title><style>{CSS}</style></head>\n<body>\n{body}\n</body></html>\n")
