"""The "Simulated" section of a plan's report, from ``plan.prediction.simulation``.

Written by :func:`pearl_py.simulate.inputs.simulate_plan`; every figure is ``simulated``
(a discrete-event simulation of the plan, docs/simulator.md), set beside the model's.

Example::

    >>> rows = summary_rows(plan)
    >>> rows[0]
    ('samples/s (simulated, steady state)', '5,493')
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from pearl_py.report import fmt
from pearl_py.report.gantt import gantt

if TYPE_CHECKING:
    from pearl_py.plan import Plan

TITLE = "Simulated (discrete-event simulation of this plan)"
UTILIZATION_ROWS = 12


def summary_rows(plan: Plan) -> list[tuple[str, str]]:
    sim, p = plan.prediction.simulation, plan.prediction
    rows = [("samples/s (simulated, steady state)", fmt.rate(sim.samples_per_s)),
            ("samples/s (modelled)", fmt.rate(p.samples_per_s))]
    if p.samples_per_s:
        rows.append(("simulated / modelled", f"{sim.samples_per_s / p.samples_per_s:.3f}"))
    rows.append((f"samples/s (simulated, whole run of {sim.env_steps:,} transitions: start-up, no warm-up)",
                 fmt.rate(sim.run_samples_per_s)))
    if p.run is not None:  # the model's whole run, of its own length and phases: the two differ by what they cover
        rows.append((f"samples/s (modelled, whole run of {p.run.env_steps:,} steps: start-up, "
                     f"{p.run.warmup_steps:,} warm-up, learning)", fmt.rate(p.run.samples_per_s)))
    rows += [("bottleneck (simulated)", sim.bottleneck),
             ("energy per sample (simulated)", fmt.joules(sim.energy_per_sample_j)),
             ("samples/J (simulated)", fmt.rate(sim.samples_per_j)),
             ("average power (simulated)", f"{sim.power_w:,.0f} W"),
             ("simulated run", f"{sim.env_steps:,} transitions, {sim.updates:,} updates, "
                               f"{fmt.seconds(sim.elapsed_s)} simulated")]
    return rows


def utilization_rows(plan: Plan) -> list[list[str]]:
    sim, modelled = plan.prediction.simulation, plan.prediction.utilization
    return [[name, fmt.percent(value), fmt.percent(model) if (model := modelled.get(name)) is not None else "-"]
            for name, value in list(sim.utilization.items())[:UTILIZATION_ROWS]]


def timeline_svg(plan: Plan) -> str:
    segments = list(plan.prediction.simulation.timeline)
    if not segments:
        return ""
    return gantt(segments, "Timeline of two steady-state rounds (simulated; busiest rows)")
