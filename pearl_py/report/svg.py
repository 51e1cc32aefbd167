"""Inline SVG plots (no plotting library): horizontal bar charts, a two-axis scatter and line charts.

Example::

    >>> svg = bar_chart([("gpu", 1.0, True), ("cpu", 0.4, False)], "Utilization")
    >>> svg.startswith("<svg")
    True
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from html import escape

from pearl_py.report import fmt

FONT = "font-family='system-ui, sans-serif'"
ACCENT, MUTED, GRID = "#c2410c", "#2563eb", "#d4d4d8"


def opening(title: str, width: int, height: int, font_size: int) -> list[str]:
    """An SVG's opening tag (``title`` as its accessible name) and ``title`` written at the top."""
    return [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' role='img' "
            f"aria-label='{escape(title)}' {FONT} font-size='{font_size}'>",
            f"<text x='0' y='18' font-weight='600' font-size='14'>{escape(title)}</text>"]


def bar_chart(items: list[tuple[str, float, bool]], title: str, width: int = 640) -> str:
    """Bars of fractions (0..1) labelled on the left; highlighted bars in the accent colour."""
    label_w, bar_h, gap, top = 230, 18, 8, 34
    plot_w = width - label_w - 70
    height = top + len(items) * (bar_h + gap) + 24
    out = opening(title, width, height, 13)
    for frac in (0.0, 0.5, 1.0):
        x = label_w + frac * plot_w
        out.append(f"<line x1='{x:.1f}' y1='{top - 6}' x2='{x:.1f}' y2='{height - 20}' stroke='{GRID}'/>")
        out.append(f"<text x='{x:.1f}' y='{height - 6}' text-anchor='middle' fill='#52525b' "
                   f"font-size='11'>{fmt.percent(frac)}</text>")
    for i, (label, value, highlight) in enumerate(items):
        y = top + i * (bar_h + gap)
        w = max(1.0, min(value, 1.0) * plot_w)
        colour = ACCENT if highlight else MUTED
        out.append(f"<text x='{label_w - 8}' y='{y + bar_h - 4}' text-anchor='end'>{escape(label)}</text>")
        out.append(f"<rect x='{label_w}' y='{y}' width='{w:.1f}' height='{bar_h}' rx='3' fill='{colour}'/>")
        out.append(f"<text x='{label_w + w + 6:.1f}' y='{y + bar_h - 4}' fill='#27272a'>{fmt.percent(value)}</text>")
    out.append("</svg>")
    return "\n".join(out)


def paired_bars(items: list[tuple[str, float, float]], title: str, labels: tuple[str, str],
                width: int = 640) -> str:
    """Two bars per row (e.g. predicted, measured) on a shared linear scale, with a legend."""
    label_w, bar_h, gap, top = 150, 11, 10, 52
    plot_w = width - label_w - 90
    scale = max([max(a, b) for _, a, b in items] + [1e-12])
    height = top + len(items) * (2 * bar_h + gap) + 10
    out = opening(title, width, height, 13)
    for i, (name, colour) in enumerate(zip(labels, (MUTED, ACCENT))):
        out.append(f"<rect x='{label_w + i * 120}' y='28' width='12' height='12' fill='{colour}'/>"
                   f"<text x='{label_w + i * 120 + 18}' y='39'>{escape(name)}</text>")
    for i, (label, first, second) in enumerate(items):
        y = top + i * (2 * bar_h + gap)
        out.append(f"<text x='{label_w - 8}' y='{y + bar_h + 4}' text-anchor='end'>{escape(label)}</text>")
        for j, (value, colour) in enumerate(((first, MUTED), (second, ACCENT))):
            w = max(1.0, value / scale * plot_w)
            yy = y + j * bar_h
            out.append(f"<rect x='{label_w}' y='{yy}' width='{w:.1f}' height='{bar_h - 1}' fill='{colour}'/>")
            out.append(f"<text x='{label_w + w + 6:.1f}' y='{yy + bar_h - 2}' font-size='11' "
                       f"fill='#27272a'>{fmt.seconds(value)}</text>")
    out.append("</svg>")
    return "\n".join(out)


def _ticks(lo: float, hi: float, n: int = 4) -> list[float]:
    if hi <= lo:
        return [lo]
    return [lo + (hi - lo) * i / n for i in range(n + 1)]


LEFT, RIGHT, TOP, BOTTOM = 80, 30, 40, 56
"""The margins of a two-axis plot (``scatter``, ``line_chart``) around its frame."""


def _axes(title: str, x_range: tuple[float, float], y_range: tuple[float, float], labels: tuple[str, str],
          width: int, height: int, tick_text: tuple[Callable[[float], str], Callable[[float], str]],
          x_grid: bool) -> tuple[list[str], Callable[[float], float], Callable[[float], float]]:
    """A two-axis plot's opening, frame, ticks (dashed gridlines on y, and on x where ``x_grid``) and axis labels;
    and the maps of data x and y to pixels."""
    (x_lo, x_hi), (y_lo, y_hi) = x_range, y_range
    pw, ph = width - LEFT - RIGHT, height - TOP - BOTTOM

    def px(x: float) -> float:
        return LEFT + (x - x_lo) / (x_hi - x_lo) * pw

    def py(y: float) -> float:
        return TOP + ph - (y - y_lo) / (y_hi - y_lo) * ph

    out = opening(title, width, height, 12) + [
        f"<rect x='{LEFT}' y='{TOP}' width='{pw}' height='{ph}' fill='none' stroke='{GRID}'/>"]
    for t in _ticks(x_lo, x_hi):
        if x_grid:
            out.append(f"<line x1='{px(t):.1f}' y1='{TOP}' x2='{px(t):.1f}' y2='{TOP + ph}' stroke='{GRID}' "
                       "stroke-dasharray='2,3'/>")
        out.append(f"<text x='{px(t):.1f}' y='{TOP + ph + 16}' text-anchor='middle' fill='#52525b'>"
                   f"{tick_text[0](t)}</text>")
    for t in _ticks(y_lo, y_hi):
        out.append(f"<line x1='{LEFT}' y1='{py(t):.1f}' x2='{LEFT + pw}' y2='{py(t):.1f}' stroke='{GRID}' "
                   "stroke-dasharray='2,3'/>")
        out.append(f"<text x='{LEFT - 6}' y='{py(t) + 4:.1f}' text-anchor='end' fill='#52525b'>"
                   f"{tick_text[1](t)}</text>")
    out.append(f"<text x='{LEFT + pw / 2}' y='{height - 12}' text-anchor='middle'>{escape(labels[0])}</text>")
    out.append(f"<text x='16' y='{TOP + ph / 2}' text-anchor='middle' transform='rotate(-90 16 {TOP + ph / 2})'>"
               f"{escape(labels[1])}</text>")
    return out, px, py


def scatter(points: list[tuple[float, float, str, bool]], x_label: str, y_label: str, title: str,
            width: int = 640, height: int = 360) -> str:
    """Points joined in x order (a front); highlighted points are larger, in the accent colour, labelled."""
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    x_lo, x_hi = min(xs), max(xs)
    y_lo, y_hi = min(ys), max(ys)
    pad_x = (x_hi - x_lo) * 0.08 or abs(x_hi) * 0.1 or 1.0
    pad_y = (y_hi - y_lo) * 0.12 or abs(y_hi) * 0.1 or 1.0
    x_lo, x_hi, y_lo, y_hi = x_lo - pad_x, x_hi + pad_x, max(0.0, y_lo - pad_y), y_hi + pad_y
    out, px, py = _axes(title, (x_lo, x_hi), (y_lo, y_hi), (x_label, y_label), width, height,
                        (fmt.rate, fmt.rate), x_grid=True)
    ordered = sorted(points, key=lambda p: p[0])
    if len(ordered) > 1:
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y, _, _ in ordered)
        out.append(f"<polyline points='{path}' fill='none' stroke='{MUTED}' stroke-width='1.5'/>")
    for x, y, label, highlight in ordered:
        r = 6 if highlight else 4
        out.append(f"<circle cx='{px(x):.1f}' cy='{py(y):.1f}' r='{r}' fill='{ACCENT if highlight else MUTED}'>"
                   f"<title>{escape(label)}</title></circle>")
        if highlight:
            anchor = "end" if px(x) > LEFT + (width - LEFT - RIGHT) * 0.6 else "start"
            dx = -10 if anchor == "end" else 10
            out.append(f"<text x='{px(x) + dx:.1f}' y='{py(y) - 8:.1f}' text-anchor='{anchor}' "
                       f"font-weight='600'>{escape(label)}</text>")
    out.append("</svg>")
    return "\n".join(out)


SERIES_COLOURS = (MUTED, ACCENT, "#15803d", "#7c3aed", "#0e7490", "#a16207")
MARKED_POINTS = 40
"""A series of at most this many points also shows each point as a dot (periodic evaluations)."""


def line_chart(series: Mapping[str, Sequence[tuple[float, float]]], x_label: str, y_label: str, title: str,
               width: int = 640, height: int = 300, marks: tuple[tuple[float, str], ...] = ()) -> str:
    """Series on shared axes, each joined in x order (a learning curve beside the evaluations), with a legend
    when there are several; the y axis spans the data (negative returns too). ``marks``: ``(x, label)`` drawn
    as labelled vertical lines (a run's corrections)."""
    every = [p for points in series.values() for p in points]
    xs, ys = [p[0] for p in every], [p[1] for p in every]
    x_lo, x_hi = min(xs), max(xs)
    pad_y = (max(ys) - min(ys)) * 0.08 or abs(max(ys)) * 0.1 or 1.0
    y_lo, y_hi = min(ys) - pad_y, max(ys) + pad_y
    if x_hi <= x_lo:
        x_lo, x_hi = x_lo - 1.0, x_hi + 1.0
    out, px, py = _axes(title, (x_lo, x_hi), (y_lo, y_hi), (x_label, y_label), width, height,
                        (lambda t: f"{t:,.0f}", lambda t: f"{t:.3g}"), x_grid=False)
    legend_x = LEFT + 8
    for i, (name, points) in enumerate(series.items()):
        colour = SERIES_COLOURS[i % len(SERIES_COLOURS)]
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in sorted(points))
        out.append(f"<polyline points='{path}' fill='none' stroke='{colour}' stroke-width='1.8'/>")
        if len(points) <= MARKED_POINTS:
            out += [f"<circle cx='{px(x):.1f}' cy='{py(y):.1f}' r='3' fill='{colour}'/>" for x, y in points]
        if len(series) > 1:   # side by side, each entry as wide as its label (~6.5 px a character at 12 px)
            out.append(f"<rect x='{legend_x}' y='26' width='12' height='3' fill='{colour}'/>"
                       f"<text x='{legend_x + 18}' y='32'>{escape(name)}</text>")
            legend_x += 18 + 6.5 * len(name) + 16
    for x, label in marks:
        if x_lo <= x <= x_hi:
            out.append(f"<line x1='{px(x):.1f}' y1='{TOP}' x2='{px(x):.1f}' y2='{height - BOTTOM}' stroke='{ACCENT}' "
                       f"stroke-dasharray='4,3'/><text x='{px(x) + 4:.1f}' y='{TOP + 12}' fill='{ACCENT}'>"
                       f"{escape(label)}</text>")
    out.append("</svg>")
    return "\n".join(out)
