"""Write a plan's files, each atomically: plan.yaml, prediction.json, plan.json, report.md, report.html.

Example::

    >>> paths = export_plan(plan, "out/plan")       # pearl.export_plan
    >>> sorted(paths)
    ['html', 'json', 'markdown', 'prediction', 'yaml']
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from pearl_py.fileio import atomic_write_json, atomic_write_text
from pearl_py.plan_file import PREDICTION_FILE
from pearl_py.report.html import render_html
from pearl_py.report.markdown import render_markdown

if TYPE_CHECKING:
    from pearl_py.plan import Plan


def export_plan(plan: Plan, directory: str | Path, run: dict[str, Any] | None = None) -> dict[str, Path]:
    """Render everything first, then write: a rendering error leaves no file behind.

    ``plan.yaml`` holds what runs (placements, mode, devices); ``prediction.json`` the model's
    prediction beside it; ``plan.json`` both. A plan without a prediction writes plan.yaml and
    plan.json only. With ``run`` (a run's result.json data) the reports add what was measured.
    """
    texts = {"yaml": ("plan.yaml", yaml.safe_dump(plan.to_dict(prediction=False), sort_keys=False,
                                                  allow_unicode=True))}
    if plan.prediction is not None:
        texts["markdown"] = ("report.md", render_markdown(plan, run))
        texts["html"] = ("report.html", render_html(plan, run))
    directory = Path(directory)
    paths = {"json": directory / "plan.json"}
    atomic_write_json(paths["json"], plan.to_dict())
    if plan.prediction is not None:
        paths["prediction"] = directory / PREDICTION_FILE
        atomic_write_json(paths["prediction"], plan.prediction.to_dict())
    for key, (name, text) in texts.items():
        paths[key] = directory / name
        atomic_write_text(paths[key], text)
    return paths
