"""A plan's report as one ordered list of sections of typed blocks, rendered by both writers.

:func:`sections` decides what a report says and in which order; :mod:`pearl_py.report.markdown`
and :mod:`pearl_py.report.html` only lay the blocks out (Markdown leaves out the charts a
table beside them already states, and keeps the simulated timeline).

Example::

    >>> parts = sections(plan, run=result.to_dict())
    >>> [s.title for s in parts][:3]
    ['Plan for local: throughput objective', 'Predicted and measured', 'Plan']
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pearl_py.report import (
    content,
    corrections,
    curve,
    energy,
    fmt,
    measured,
    simulation,
    svg,
    tuning,
)

if TYPE_CHECKING:
    from pearl_py.plan import Plan


@dataclass(frozen=True)
class Paragraph:
    """Text; ``style``: ``lead`` (the headline sentence), ``note`` (a boxed remark), ``small`` or plain."""

    text: str
    style: str = ""


@dataclass(frozen=True)
class Cards:
    """A row of headline figures: ``(label, value)``."""

    items: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Table:
    """A table; rows whose ``highlight`` is true stand out (a moved kernel, the kept trial)."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    highlight: tuple[bool, ...] = ()


@dataclass(frozen=True)
class Bullets:
    items: tuple[str, ...]


@dataclass(frozen=True)
class Figure:
    """An inline SVG chart; ``in_markdown``: also in report.md (where no table states the same)."""

    svg: str
    in_markdown: bool = False


Block = Paragraph | Cards | Table | Bullets | Figure


@dataclass(frozen=True)
class Section:
    title: str
    blocks: tuple[Block, ...] = field(default_factory=tuple)
    level: int = 2
    folded: bool = False
    """Says nothing this report's reader needs (no counter measured energy, a single-point front, an objective
    that picks the same plan): folded away in report.html (``<details>``), left out of report.md."""


def _table(header: list[str], rows: list[list[str]] | list[tuple[str, str]], highlight=None) -> Table:
    return Table(tuple(header), tuple(tuple(r) for r in rows), tuple(highlight or ()))


def title(plan: Plan, run: dict[str, Any] | None) -> str:
    """The report's title: the run's algorithm, env and seed when there is a run, else the plan's platform."""
    if run is not None:
        return (f"{run['algorithm'].upper()} on {run['env']}, seed {run['seed']}: {plan.objective} plan "
                f"on {plan.platform}")
    return content.title(plan)


def _learning_curve(run: dict[str, Any], marks: tuple[tuple[float, str], ...] = ()) -> Section:
    """The run's mean episode return against env steps beside its periodic evaluations (measured), as one chart
    (``marks``: the run's corrections) and in words, with the evaluations' table."""
    points, history = run.get("learning_curve", []), run.get("eval_history", [])
    evaluations = [(p["step"], p["return_mean"]) for p in history]
    blocks: list[Block] = [Paragraph(curve.curve_sentence(points))]
    series = {}
    if len(points) > 1:
        series[f"training (mean of the last {curve.RETURN_WINDOW} episodes)"] = points
    if evaluations:
        series["periodic evaluation (greedy, mean)"] = evaluations
        blocks += [Paragraph(curve.evaluation_sentence(history, run.get("best_policy"))),
                   _table(["env steps", "eval return (mean)", "std"],
                          [[f"{p['step']:,}", f"{p['return_mean']:.1f}",
                            f"{p['return_std']:.1f}" if "return_std" in p else "-"] for p in history])]
    if series:
        blocks.insert(0, Figure(svg.line_chart(series, "env steps", "return", "Learning curve (measured)",
                                               marks=marks)))
    return Section("Learning curve", tuple(blocks))


def _training_curves(curves: dict[str, list[tuple[int, float]]]) -> Section:
    """The losses and the exploration rate train.csv logged each training round (measured): a chart each and
    a sentence each (report.md)."""
    figures = [Figure(svg.line_chart({column: points}, "env steps", column, f"{column} (measured)"))
               for column, points in curves.items() if len(points) > 1]
    return Section("Losses and exploration", (*figures, Bullets(tuple(curve.series_sentence(column, points)
                                                                       for column, points in curves.items()))))


def _configuration(run: dict[str, Any]) -> Section:
    """What ran and with what: the run's identity, pearl_py's version, the date and command, every hyperparameter."""
    made = run.get("provenance", {})
    rows = [("algorithm", run["algorithm"]), ("env", run["env"]), ("seed", str(run["seed"])),
            ("env steps", f"{run['env_steps']:,}"), ("backend", run.get("backend", "-")),
            ("pearl_py", made.get("pearl_py_version", "-")), ("report written", made.get("written", "-")),
            ("command", made.get("command") or "-")]
    blocks: list[Block] = [_table(["run", ""], rows)]
    if run.get("hyperparameters"):
        blocks.append(_table(["hyperparameter", "value"],
                             [[k, _value(v)] for k, v in run["hyperparameters"].items()]))
    return Section("Run configuration", tuple(blocks))


def _value(value: Any) -> str:
    """A hyperparameter as a config file holds it (lists and mappings inline)."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_value(v)}" for k, v in value.items()) + "}"
    return "null" if value is None else str(value)


def sections(plan: Plan, run: dict[str, Any] | None = None) -> list[Section]:
    """Every section of the report of ``plan`` (and of ``run``, a result.json dict), in order."""
    p = plan.prediction
    summary = content.summary_rows(plan)
    head: list[Block] = [Paragraph(p.limit, "lead")]
    if content.optimality_sentence(plan):  # a plan with a gap says so before any figure
        head.append(Paragraph(content.optimality_sentence(plan), "note"))
    if run is not None:
        head.append(Cards(tuple(measured.headline_cards(plan, run))))
    else:
        head.append(Cards(tuple(content.summary_cards(plan))))
    out = [Section(title(plan, run), tuple(head), level=1)]
    if run is not None:
        rows = measured.summary_rows(plan, run)
        out.append(Section("Predicted and measured", (
            _table(["figure", "value"], rows),
            Figure(svg.paired_bars(measured.kernel_bars(plan, run), "Time per collected sample, by kernel",
                                   ("predicted", "measured"))),
            _table(measured.KERNEL_HEADER, measured.kernel_rows(plan, run)))))
        if "learning_curve" in run or run.get("eval_history"):
            out.append(_learning_curve(run, corrections.marks(run)))
        if run.get("corrections"):
            out.append(Section(corrections.TITLE, (_table(corrections.HEADER, corrections.rows(run)),
                                                   *(Paragraph(s, "small") for s in corrections.sentences(run)))))
        if run.get("train_curves"):
            out.append(_training_curves(run["train_curves"]))
        out.append(_configuration(run))
        if energy.energy_rows(run):
            out.append(Section("Energy of the run, per device", (
                Paragraph(energy.energy_window(run), "small"),
                _table(energy.ENERGY_HEADER, energy.energy_rows(run))), folded=not energy.measured_any(run)))
    plan_blocks: list[Block] = [_table(["figure", "value"], summary), Paragraph(energy.energy_source_sentence(plan),
                                                                                 "small")]
    plan_blocks += [Paragraph(text, "note") for text in energy.assumed_device_sentences(plan)]
    out.append(Section("Plan", tuple(plan_blocks)))
    assignment: list[Block] = [_table(content.ASSIGNMENT_HEADER, content.assignment_rows(plan))]
    why = content.choice_sentences(plan)
    if why:
        assignment.append(Bullets(tuple(why)))
    if content.loop_sentence(plan):
        assignment.append(Paragraph(content.loop_sentence(plan), "small"))
    if p.platform is not None and "\n" in p.platform.description:  # a Ray cluster's: each node, how it is costed
        assignment.append(Bullets(tuple(p.platform.description.splitlines())))
    out.append(Section("Assignment", tuple(assignment)))
    if p.tuning is not None:
        rows = tuning.trial_rows(plan)
        out.append(Section(tuning.TITLE, (_table(tuning.HEADER, rows, [r[-1] == "kept" for r in rows]),
                                          *(Paragraph(s, "small") for s in tuning.sentences(plan)))))
    other, rows = content.alternative_rows(plan)
    if rows:
        out.append(Section(f"This plan beside the {other} objective's", (
            Paragraph(p.comparison, "note"),
            _table(["kernel", f"{plan.objective} plan", f"{other} plan", ""], rows, [bool(r[3]) for r in rows])),
            folded=not any(r[3] for r in rows)))
    items = content.utilization_items(plan)
    out.append(Section("Utilization", (
        Figure(svg.bar_chart(items, "Busy share of each sample (bottleneck in orange)")),
        _table(["device or link", "busy share of each sample"],
               [[name, fmt.percent(v) + (" (bottleneck)" if hi else "")] for name, v, hi in items]))))
    points = content.pareto_points(plan)
    if len(points) > 1:
        out.append(Section("Throughput-power Pareto front", (
            Figure(svg.scatter(points, "samples per second", "samples per joule",
                               "Every plan on the front: none is both faster and more frugal")),
            _table(["samples/s", "samples/J", "power", "assignment"], content.pareto_rows(plan)))))
    else:
        out.append(Section("Throughput-power Pareto front", (
            Paragraph("One plan is both the fastest and the most frugal, so the front is a single point."),),
            folded=True))
    if p.simulation is not None:
        out.append(Section(simulation.TITLE, (
            _table(["figure", "value"], simulation.summary_rows(plan)),
            _table(["device or link", "busy (simulated)", "busy (modelled)"], simulation.utilization_rows(plan)),
            Figure(simulation.timeline_svg(plan), in_markdown=True))))
    header, rows = content.cost_table(plan)
    out.append(Section("Cost of each kernel on each device", (
        Paragraph("Latency per call, and how it is known: measured, calibrated (fitted to micro-benchmarks on "
                  "this machine) or modelled (from the device's specification).", "small"),
        *((Paragraph(content.precision_sentence(plan), "small"),) if content.precision_sentence(plan) else ()),
        _table(header, rows))))
    for kernel, header, rows, resources in content.layer_tables(plan):
        out.append(Section(f"Layers of {kernel} (modelled)", (
            Paragraph("Each recorded layer on one device of each model: on CPUs and GPUs its own roofline "
                      "(dispatches plus the larger of compute, at the convolution or GEMM efficiency, and memory "
                      "traffic); on the FPGA its loop nests' cycles at the design's reuse factors, with the DSPs "
                      "they use (in the dataflow region the layers overlap: the kernel takes about the slowest "
                      "one's time, not the sum). docs/cost-models.md.", "small"),
            _table(header, rows),
            *((Bullets(tuple(f"whole {kernel} on {line}" for line in resources)),) if resources else ()))))
    notes = content.infeasible_notes(plan)
    if notes:
        out.append(Section("Placements ruled out", (Bullets(tuple(notes)),)))
    out.append(Section("", (Paragraph("All figures but those marked measured are predictions of pearl_py's "
                                      "performance model (docs/optimizer.md).", "small"),)))
    return out
