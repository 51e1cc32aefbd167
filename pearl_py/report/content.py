"""What every report shows, as rows of strings, computed once from a :class:`Plan`.

The Markdown and HTML writers only lay these rows out.

Example::

    >>> rows = assignment_rows(plan)
    >>> rows[0]
    ['env_step', 'cpu', 'reference', '4', '1', '26.1 us', 'modelled']
"""
from __future__ import annotations

from typing import Any

from pearl_py.optimize.plan import Plan
from pearl_py.report import fmt

ASSIGNMENT_HEADER = ["kernel", "device", "variant", "replicas", "calls / sample", "latency / call", "source"]
UTILIZATION_LIMIT = 16
"""Devices and links shown in the utilization chart (busiest first)."""


def title(plan: Plan) -> str:
    return f"Plan for {plan.platform}: {plan.objective} objective"


def _bound_text(plan: Plan) -> str:
    """The proven bound in the objective's rate (``predicted.solver.bound`` is seconds or joules per sample)."""
    unit = "samples/s" if plan.objective == "throughput" else "samples/J"
    bound = plan.predicted.get("solver", {}).get("bound") or 0.0
    return f"no plan exceeds {fmt.rate(1.0 / bound)} {unit} (proven bound)" if bound > 0 else "no bound proven"


def optimality_sentence(plan: Plan) -> str:
    """Empty for a proven optimum; else the gap and the proven bound, e.g. "Not proven optimal: heuristic
    (MILP time limit) stopped 27.50% from the bound; no plan exceeds 107.8 samples/J (proven bound), this one
    reaches 78.2." (the summary's opening lines, and ``pearl plan``'s output)."""
    solver = plan.predicted.get("solver", {})
    if solver.get("optimal", True):
        return ""
    reached = plan.predicted.get("samples_per_s" if plan.objective == "throughput" else "samples_per_j")
    return (f"Not proven optimal: {plan.solver} stopped {100 * solver.get('gap', 0):.2f}% from the bound; "
            f"{_bound_text(plan)}, this one reaches {fmt.rate(reached)}.")


def summary_rows(plan: Plan) -> list[tuple[str, str]]:
    p = plan.predicted
    solver = p.get("solver", {})
    gap = "proven optimal" if solver.get("optimal") else f"gap to bound {100 * solver.get('gap', 0):.2f}%: " \
        + _bound_text(plan)
    ratio = p.get("cpu_gpu_ratio", {})
    ratio_text = (f"{ratio['ratio']:g} actor cores per learner GPU" if ratio.get("ratio") is not None
                  else f"{ratio.get('actor_cores', 0)} actor cores; the learner is not on a GPU")
    rows = [
        ("Samples per second", fmt.rate(p.get("samples_per_s"))),
        ("Samples per joule", fmt.rate(p.get("samples_per_j"))),
        ("Average power", f"{p.get('power_w', 0):,.0f} W" + (" (slowed to fit the power cap)"
                                                              if p.get("throttled") else "")),
        ("Time per sample", fmt.seconds(p.get("time_per_sample_s"))),
        ("Bottleneck", str(p.get("bottleneck"))),
        ("Protocol", str(p.get("mode"))),
        ("CPU/GPU ratio", ratio_text),
        ("Solver", f"{plan.solver}, {gap}, {solver.get('seconds', 0):.2f} s"),
    ]
    if p.get("power_cap_w"):
        rows.insert(3, ("Power cap", f"{p['power_cap_w']:,.0f} W"))
    if p.get("run"):
        rows.insert(1, whole_run_row(p["run"]))
    return rows


def whole_run_row(run: dict[str, Any]) -> tuple[str, str]:
    """The modelled whole run, e.g. ("Samples per second, whole run of 20,000 steps", "291 (68.7 s: ...)")."""
    parts = [f"{run['warmup_steps']:,} warm-up steps {fmt.seconds(run['warmup_s'])}",
             f"{run['env_steps'] - run['warmup_steps']:,} learning steps {fmt.seconds(run['learning_s'])}"]
    if run.get("setup_s"):
        parts.append(f"one-off setup {fmt.seconds(run['setup_s'])}")
    return (f"Samples per second, whole run of {run['env_steps']:,} steps",
            f"{fmt.rate(run['samples_per_s'])} ({fmt.seconds(run['seconds'])}: {', '.join(parts)}; modelled)")


def _cost(plan: Plan, kernel: str, device: str, variant: str) -> dict[str, Any] | None:
    return plan.predicted.get("costs", {}).get(kernel, {}).get(device, {}).get(variant)


def placed_cost(plan: Plan, kernel: str) -> dict[str, Any] | None:
    """The predicted cost of one call of ``kernel`` as placed: a threaded kernel's (its cost entry lists
    ``threads``) at the placement's thread count (``replicas``), any other kernel's as costed."""
    place = plan.placements[kernel]
    cost = _cost(plan, kernel, place.device, place.variant)
    if not cost or place.replicas == 1:
        return cost
    at = next((t for t in cost.get("threads", []) if t["threads"] == place.replicas), None)
    return cost if at is None else {**cost, "latency_s": at["latency_s"], "energy_j": at["energy_j"]}


def assignment_rows(plan: Plan) -> list[list[str]]:
    rates = plan.predicted.get("rates", {})
    rows = []
    for kernel, place in plan.placements.items():
        cost = placed_cost(plan, kernel) or {}
        count = str(place.replicas)
        if cost.get("threads"):  # a threaded kernel: its replicas are threads
            count = f"{place.replicas} thread{'s' if place.replicas > 1 else ''}"
        rows.append([kernel, place.device, place.variant, count, f"{rates.get(kernel, 0):g}",
                     fmt.seconds(cost.get("latency_s")), cost.get("source", "-")])
    return rows


def _count(n: float) -> str:
    return f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.1f}k" if n >= 1e3 else f"{n:.0f}"


def variant_sentences(plan: Plan) -> list[str]:
    """Why each kernel runs a variant other than the reference: per-call times, setup, break-even.

    E.g. "learner_update runs 'compiled' on cpu: 0.771 ms vs 1.63 ms per call for 'reference'
    (calibrated); its one-off setup of 8.0 s pays back after 9.3k updates (the run makes 25.0k)."
    """
    kinds = plan.predicted.get("kinds", {})
    rates = plan.predicted.get("rates", {})
    horizon = plan.predicted.get("horizon")
    out = []
    for kernel, place in plan.placements.items():
        if place.variant == "reference":
            continue
        mine = _cost(plan, kernel, place.device, place.variant)
        ref = _cost(plan, kernel, place.device, "reference")
        if mine is None:
            continue
        calls = "updates" if kinds.get(kernel) == "learner_update" else "calls"
        text = f"{kernel} runs {place.variant!r} on {place.device}: {fmt.seconds(mine['latency_s'])}"
        if ref is not None:
            text += f" vs {fmt.seconds(ref['latency_s'])} per call for 'reference'"
            sources = {mine["source"], ref["source"]}
            text += f" ({' and '.join(sorted(sources))})"
        else:
            text += f" per call ({mine['source']}; the reference is not offered there)"
        setup = float(mine.get("setup_s", 0.0))
        if setup <= 0:
            text += ", with no one-off setup."
        elif ref is not None and ref["latency_s"] > mine["latency_s"]:
            needed = setup / (ref["latency_s"] - mine["latency_s"])
            text += f"; its one-off setup of {setup:.1f} s pays back after {_count(needed)} {calls}"
            if horizon is not None and horizon != float("inf"):
                text += f" (the run makes {_count(rates.get(kernel, 0.0) * horizon)})."
            else:
                text += " (steady state assumed)."
        else:
            text += f"; one-off setup {setup:.1f} s."
        out.append(text)
    return out


def variant_notes(plan: Plan) -> list[str]:
    """Why implementation variants were not offered (unavailable here, setup not paid back over the run)."""
    return [note for notes in plan.predicted.get("variant_notes", {}).values() for note in sorted(set(notes))]


def choice_sentences(plan: Plan) -> list[str]:
    """The sentences under the assignment table: variants chosen, threads of a threaded kernel
    (``predicted["threads"]``: how many and why), variants not offered."""
    return variant_sentences(plan) + list(plan.predicted.get("threads", [])) + variant_notes(plan)


def cost_table(plan: Plan) -> tuple[list[str], list[list[str]]]:
    """Kernel x device: latency per call (fastest variant) with its source; '-' where it cannot run."""
    costs = plan.predicted.get("costs", {})
    devices: list[str] = []
    for per_device in costs.values():
        for d in per_device:
            if d not in devices:
                devices.append(d)
    rows = []
    for kernel in plan.placements:
        row = [kernel]
        for d in devices:
            variants = costs.get(kernel, {}).get(d)
            if not variants:
                row.append("-")
                continue
            name, best = min(variants.items(), key=lambda kv: kv[1]["latency_s"])
            label = f"{fmt.seconds(best['latency_s'])} {best['source']}"
            if len(variants) > 1:
                label += f" ({name})"
            row.append(label)
        rows.append(row)
    return ["kernel", *devices], rows


def utilization_items(plan: Plan) -> list[tuple[str, float, bool]]:
    util = plan.predicted.get("utilization", {})
    bottleneck = plan.predicted.get("bottleneck")
    ranked = sorted(util.items(), key=lambda kv: -kv[1])
    shown = ranked[:UTILIZATION_LIMIT]
    items = [(name, value, name == bottleneck) for name, value in shown]
    if len(ranked) > len(shown):
        rest = ranked[len(shown):]
        items.append((f"{len(rest)} more (max {fmt.percent(rest[0][1])})", rest[0][1], False))
    return items


def pareto_points(plan: Plan) -> list[tuple[float, float, str, bool]]:
    """(samples/s, samples/J, label, is this plan) for every front point, plus the chosen plan."""
    p = plan.predicted
    points = []
    for q in p.get("pareto", []):
        same = abs(q["samples_per_s"] - p["samples_per_s"]) <= 1e-9 * p["samples_per_s"] and \
            abs(q["samples_per_j"] - p["samples_per_j"]) <= 1e-9 * p["samples_per_j"]
        label = f"this plan ({plan.objective})" if same else f"{fmt.rate(q['samples_per_s'])} /s"
        points.append((q["samples_per_s"], q["samples_per_j"], label, same))
    if not any(pt[3] for pt in points):
        points.append((p["samples_per_s"], p["samples_per_j"], f"this plan ({plan.objective})", True))
    return points


def pareto_rows(plan: Plan) -> list[list[str]]:
    return [[fmt.rate(q["samples_per_s"]), fmt.rate(q["samples_per_j"]), f"{q['power_w']:,.0f} W",
             "; ".join(f"{k} {fmt.placement(v)}" for k, v in q["assignment"].items())] for q in plan.predicted.get("pareto", [])]


def alternative_rows(plan: Plan) -> tuple[str, list[list[str]]]:
    """The other objective's plan, kernel by kernel beside this one."""
    alt = plan.predicted.get("alternative")
    if not alt:
        return "", []
    rows = []
    for kernel, place in plan.placements.items():
        other = alt["placements"].get(kernel, {})
        mine = {"device": place.device, "variant": place.variant, "replicas": place.replicas}
        rows.append([kernel, fmt.placement(mine), fmt.placement(other) if other else "-",
                     "" if other and other["device"] == place.device else "moved"])
    return alt["objective"], rows


def infeasible_notes(plan: Plan) -> list[str]:
    notes = []
    for kernel, reasons in plan.predicted.get("infeasible", {}).items():
        for reason in sorted(set(reasons)):
            notes.append(reason if reason.startswith(kernel) else f"{kernel}: {reason}")
    return notes
