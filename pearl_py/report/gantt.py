"""An inline SVG timeline (Gantt chart): one row per device unit or link, one bar per call or transfer.

Example::

    >>> svg = gantt([("gpu", 0.0, 2e-4, LEARNER_UPDATE), ("cpu #0", 0.0, 5e-5, ENV_STEP)], "Timeline")
    >>> svg.startswith("<svg") and LEARNER_UPDATE in svg
    True
"""
from __future__ import annotations

from html import escape

from pearl_py.protocol.kernel import (
    ADVANTAGE,
    ENV_STEP,
    INFERENCE,
    LEARNER_UPDATE,
    PARAM_SYNC,
    PRIORITY_UPDATE,
    REPLAY_INSERT,
    REPLAY_SAMPLE,
    ROLLOUT_INSERT,
)
from pearl_py.report import fmt
from pearl_py.report.svg import GRID, opening

COLOURS = {ENV_STEP: "#16a34a", INFERENCE: "#2563eb", REPLAY_INSERT: "#9333ea", REPLAY_SAMPLE: "#c026d3",
           PRIORITY_UPDATE: "#db2777", LEARNER_UPDATE: "#c2410c", PARAM_SYNC: "#ca8a04", ROLLOUT_INSERT: "#7c3aed",
           ADVANTAGE: "#0d9488"}
TRANSFER = "#71717a"


def _colour(label: str) -> str:
    return TRANSFER if "->" in label else COLOURS.get(label, "#0891b2")


def gantt(segments: list[tuple[str, float, float, str]], title: str, width: int = 900) -> str:
    """Rows in order of first appearance; time runs from the earliest start to the latest end."""
    rows = list(dict.fromkeys(row for row, *_ in segments))
    t0, t1 = min(s[1] for s in segments), max(s[2] for s in segments)
    span = max(t1 - t0, 1e-12)
    label_w, row_h, top = 250, 16, 52
    plot_w = width - label_w - 20
    height = top + len(rows) * (row_h + 4) + 30
    out = opening(title, width, height, 12)
    order = list(COLOURS)
    kinds = sorted({s[3] for s in segments if "->" not in s[3]},
                   key=lambda k: (order.index(k) if k in order else len(order), k)) + ["transfer"]
    for i, kind in enumerate(kinds):
        x = label_w + i * 95
        colour = TRANSFER if kind == "transfer" else _colour(kind)
        out.append(f"<rect x='{x}' y='28' width='10' height='10' fill='{colour}'/>"
                   f"<text x='{x + 14}' y='37' font-size='11'>{escape(kind)}</text>")
    for frac in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = label_w + frac * plot_w
        out.append(f"<line x1='{x:.1f}' y1='{top - 4}' x2='{x:.1f}' y2='{height - 22}' stroke='{GRID}'/>"
                   f"<text x='{x:.1f}' y='{height - 8}' text-anchor='middle' fill='#52525b' font-size='11'>"
                   f"{fmt.seconds(frac * span) if frac else '0'}</text>")
    index = {row: i for i, row in enumerate(rows)}
    for i, row in enumerate(rows):
        y = top + i * (row_h + 4)
        out.append(f"<text x='{label_w - 8}' y='{y + row_h - 4}' text-anchor='end'>{escape(row)}</text>")
    for row, start, end, label in segments:
        y = top + index[row] * (row_h + 4)
        x = label_w + (start - t0) / span * plot_w
        w = max((end - start) / span * plot_w, 0.6)
        out.append(f"<rect x='{x:.2f}' y='{y}' width='{w:.2f}' height='{row_h}' fill='{_colour(label)}'>"
                   f"<title>{escape(label)} {fmt.seconds(end - start)}</title></rect>")
    out.append("</svg>")
    return "\n".join(out)
