"""report.html: the report's sections (:mod:`pearl_py.report.sections`) as one self-contained page
(inline CSS and SVG, no scripts, no external files).

Example::

    >>> page = render_html(plan)
    >>> "<svg" in page and "http" not in page.split("<svg")[0]
    True
"""
from __future__ import annotations

from html import escape
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
details{margin:24px 0 8px}summary{font-size:17px;font-weight:600;color:#52525b;cursor:pointer}
"""


def _table(block: Table) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in block.header)
    body = []
    for i, row in enumerate(block.rows):
        cls = " class='moved'" if i < len(block.highlight) and block.highlight[i] else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _block(block: Block) -> str:
    if isinstance(block, Paragraph):
        cls = f" class='{block.style}'" if block.style else ""
        return f"<p{cls}>{escape(block.text)}</p>" if block.text else ""
    if isinstance(block, Cards):
        cards = "".join(f"<div class='card'><span>{escape(k)}</span><b>{escape(v)}</b></div>" for k, v in block.items)
        return f"<div class='cards'>{cards}</div>"
    if isinstance(block, Table):
        return _table(block)
    if isinstance(block, Bullets):
        return "<ul>" + "".join(f"<li>{escape(item)}</li>" for item in block.items) + "</ul>"
    if isinstance(block, Figure):
        return block.svg
    raise TypeError(f"no HTML for {type(block).__name__}")


def render_html(plan: Plan, run: dict[str, Any] | None = None) -> str:
    """The plan's page; with ``run`` (a result.json dict) it adds what the run measured."""
    parts = []
    title = ""
    for section in sections(plan, run):
        if section.level == 1:
            title = section.title
        blocks = [html for html in (_block(b) for b in section.blocks) if html]
        if section.folded:
            parts.append(f"<details><summary>{escape(section.title)}</summary>\n" + "\n".join(blocks) + "</details>")
            continue
        if section.title:
            parts.append(f"<h{section.level}>{escape(section.title)}</h{section.level}>")
        parts += blocks
    body = "\n".join(parts)
    return (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<title>{escape(title)}</title><style>{CSS}</style></head>\n<body>\n{body}\n</body></html>\n")
