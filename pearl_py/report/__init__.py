"""Reports of a plan: plan.yaml, plan.json, report.md and a self-contained report.html with SVG plots.

Example::

    >>> from pearl_py.report import export_plan
    >>> export_plan(plan, Path("out/plan"))["html"].name
    'report.html'
"""
from pearl_py.report.export import export_plan

__all__ = ["export_plan"]
