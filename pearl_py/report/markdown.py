"""report.md: the report's sections (:mod:`pearl_py.report.sections`) as Markdown.

Example::

    >>> text = render_markdown(plan)
    >>> text.splitlines()[0]
    '# Plan for pearl-cpu-gpu-fpga: throughput objective'
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pearl_py.report.sections import (
    Block,
    Bullets,
    Cards,
    Figure,
    Paragraph,
    Table,
    sections,
)

if TYPE_CHECKING:
    from pearl_py.plan import Plan


def _table(header: tuple[str, ...], rows: tuple[tuple[str, ...], ...]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return out


def _block(block: Block) -> list[str]:
    if isinstance(block, Paragraph):
        return [block.text] if block.text else []
    if isinstance(block, Cards):
        return [" · ".join(f"**{label}**: {value}" for label, value in block.items)]
    if isinstance(block, Table):
        return _table(block.header, block.rows)
    if isinstance(block, Bullets):
        return [f"- {item}" for item in block.items]
    if isinstance(block, Figure):
        return [block.svg] if block.in_markdown and block.svg else []
    raise TypeError(f"no Markdown for {type(block).__name__}")


def render_markdown(plan: Plan, run: dict[str, Any] | None = None) -> str:
    """The plan's report; with ``run`` (a result.json dict) it opens with what the run measured."""
    lines: list[str] = []
    for section in sections(plan, run):
        if section.folded:
            continue
        if section.title:
            lines += [f"{'#' * section.level} {section.title}", ""]
        for block in section.blocks:
            text = _block(block)
            if text:
                lines += text + [""]
    return "\n".join(lines)
