"""Write a plan's four files, each atomically: plan.yaml, plan.json, report.md, report.html.

Example::

    >>> paths = export_plan(plan, Path("out/plan"))
    >>> sorted(paths)
    ['html', 'json', 'markdown', 'yaml']
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from pearl_py.fileio import atomic_write_json, atomic_write_text
from pearl_py.plan import Plan
from pearl_py.report.html import render_html
from pearl_py.report.markdown import render_markdown


def export_plan(plan: Plan, directory: Path, run: dict[str, Any] | None = None) -> dict[str, Path]:
    """Render everything first, then write: a rendering error leaves no file behind.

    With ``run`` (a run's result.json data) the reports add the predicted-vs-measured section.
    """
    data = plan.to_dict()
    texts = {
        "yaml": ("plan.yaml", yaml.safe_dump(data, sort_keys=False, allow_unicode=True)),
        "markdown": ("report.md", render_markdown(plan, run)),
        "html": ("report.html", render_html(plan, run)),
    }
    directory = Path(directory)
    paths = {"json": directory / "plan.json"}
    atomic_write_json(paths["json"], data)
    for key, (name, text) in texts.items():
        paths[key] = directory / name
        atomic_write_text(paths[key], text)
    return paths
