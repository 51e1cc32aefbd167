"""What a plan's report shows, as rows of strings, computed from the typed :class:`~pearl_py.plan.Prediction`.

The sections (:mod:`pearl_py.report.sections`) arrange these rows; the writers lay them out.

Example::

    >>> rows = assignment_rows(plan)
    >>> rows[0]
    ['env_step', 'cpu', 'reference', '4', '1', '26.1 us', 'modelled']
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from pearl_py.protocol.kernel import KernelKind
from pearl_py.report import fmt

if TYPE_CHECKING:
    from pearl_py.plan import KernelCost, Plan, WholeRun

ASSIGNMENT_HEADER = ["kernel", "device", "variant", "replicas", "calls / sample", "latency / call", "source"]
UTILIZATION_LIMIT = 16
"""Devices and links shown in the utilization chart (busiest first)."""


def title(plan: Plan) -> str:
    return f"Plan for {plan.platform}: {plan.objective} objective"


def summary_rows(plan: Plan) -> list[tuple[str, str]]:
    p = plan.prediction
    f, solver = p.figures, p.solver
    proof = "proven optimal" if solver.optimal else (f"not proven optimal: {100 * solver.gap:.2f}% above the best "
                                                     f"bound found ({_objective_value(plan, solver.bound)})")
    ratio = p.cpu_gpu_ratio
    ratio_text = "-" if ratio is None else f"{ratio.ratio:g} actor cores per learner GPU" if ratio.ratio is not None \
        else f"{ratio.actor_cores} actor cores; the learner is not on a GPU"
    rows = [
        ("Samples per second", fmt.rate(f.samples_per_s)),
        ("Samples per joule", fmt.rate(f.samples_per_j)),
        ("Average power", f"{f.power_w:,.0f} W" + (" (slowed to fit the power cap)" if p.throttled else "")),
        ("Time per sample", fmt.seconds(f.time_per_sample_s)),
        ("Bottleneck", f.bottleneck),
        ("Protocol", plan.mode),
        # a serialized plan is one process: no actor cores beside a learner
        *([("CPU/GPU ratio", ratio_text)] if plan.mode != "serialized" else []),
        ("Solver", f"{plan.solver}, {proof}, {solver.seconds:.2f} s"),
    ]
    if p.power_cap_w:
        rows.insert(3, ("Power cap", f"{p.power_cap_w:,.0f} W"))
    if p.run is not None:
        rows.insert(1, whole_run_row(p.run))
    return rows


def summary_cards(plan: Plan) -> list[tuple[str, str]]:
    """The headline figures of a plan's report without a run: short values, the sentences stay in the table."""
    p = plan.prediction
    f = p.figures
    cards = [("Samples per second", fmt.rate(f.samples_per_s))]
    if p.run is not None:
        cards.append((f"Samples per second, whole run of {p.run.env_steps:,} steps", fmt.rate(p.run.samples_per_s)))
    cards += [("Samples per joule", fmt.rate(f.samples_per_j)), ("Average power", f"{f.power_w:,.0f} W"),
              ("Bottleneck", f.bottleneck)]
    return cards[:4]


def _objective_value(plan: Plan, bound: float) -> str:
    """A bound on the minimised figure in words: seconds or joules per sample, as samples/s or samples/J."""
    if bound <= 0:
        return "no useful bound"
    unit = "samples/J" if plan.objective == "power" else "samples/s"
    return f"at most {fmt.rate(1.0 / bound)} {unit}"


def optimality_sentence(plan: Plan) -> str:
    """Empty for a proven optimum; else the gap and the bound, for the report's opening and ``pearl plan``'s
    output, e.g. "Not proven optimal: heuristic stopped 3.20% above the best bound found (at most 1,234
    samples/J); this plan reaches 1,195 samples/J."."""
    solver = plan.prediction.solver
    if solver.optimal:
        return ""
    f = plan.prediction.figures
    reached = f"{fmt.rate(f.samples_per_j)} samples/J" if plan.objective == "power" \
        else f"{fmt.rate(f.samples_per_s)} samples/s"
    return (f"Not proven optimal: {plan.solver} stopped {100 * solver.gap:.2f}% above the best bound found "
            f"({_objective_value(plan, solver.bound)}); this plan reaches {reached}.")


def whole_run_row(run: WholeRun) -> tuple[str, str]:
    """The modelled whole run, e.g. ("Samples per second, whole run of 20,000 steps", "291 (68.7 s: ...)")."""
    parts = [f"actor start-up {fmt.seconds(run.startup_s)} ({run.startup_source})"] if run.startup_s else []
    parts += [f"{run.warmup_steps:,} warm-up steps {fmt.seconds(run.warmup_s)}",
             f"{run.env_steps - run.warmup_steps:,} learning steps {fmt.seconds(run.learning_s)}"]
    if run.setup_s:
        parts.append(f"one-off setup {fmt.seconds(run.setup_s)}")
    return (f"Samples per second, whole run of {run.env_steps:,} steps",
            f"{fmt.rate(run.samples_per_s)} ({fmt.seconds(run.seconds)}: {', '.join(parts)}; modelled)")


def placed_cost(plan: Plan, kernel: str) -> KernelCost | None:
    """The predicted cost of one call of ``kernel`` as placed: a threaded kernel's at the placement's
    thread count (``replicas``), any other kernel's as costed."""
    place = plan.placements[kernel]
    cost = plan.prediction.cost(kernel, place.device, place.variant) if plan.prediction else None
    return cost.at(place.replicas) if cost is not None else None


def call_seconds(cost: KernelCost) -> float:
    """One call's predicted seconds, the kernel alone: the training loop's own work the model charges with it
    (``loop_s``, an env_step's) is reported apart, as what the runtime measures apart (the ``loop`` row)."""
    return cost.latency_s - cost.loop_s


def predicted_call(plan: Plan, kernel: str) -> tuple[float | None, str]:
    """``(seconds, source)`` of one call of ``kernel`` as placed, the kernel alone: the one predicted per-call
    figure every table of a report shows for it (None, "none" without a prediction)."""
    cost = placed_cost(plan, kernel)
    return (call_seconds(cost), cost.source) if cost is not None else (None, "none")


def loop_sentence(plan: Plan) -> str:
    """Where the model's per-call figures leave out the training loop's own work it charges beside a kernel."""
    carried = [(kernel, cost) for kernel in plan.placements
               if (cost := placed_cost(plan, kernel)) is not None and cost.loop_s > 0]
    if not carried:
        return ""
    return ("Per-call figures are the kernels' own; the training loop's work the model charges beside them ("
            + "; ".join(f"{fmt.seconds(c.loop_s)} per {k} call, {c.loop_source}"
                        + (f", {fmt.seconds(c.normalize_s)} of it normalize's" if c.normalize_s > 0 else "")
                        for k, c in carried)
            + ") is the report's loop row, beside what a run measured of it.")


def kernel_kind(plan: Plan, kernel: str) -> KernelKind | None:
    """The declared kind of a placed kernel (None: a user's own kind)."""
    kind = plan.prediction.kinds.get(kernel, kernel) if plan.prediction else kernel
    return KernelKind(kind) if kind in {str(k) for k in KernelKind} else None


def splits_envs(plan: Plan, kernel: str) -> bool:
    """Whether the kernel's replicas split its calls' envs (a synchronous plan's actor kernels)."""
    kind = kernel_kind(plan, kernel)
    return plan.mode == "synchronous" and kind is not None and kind.replicable


def assignment_rows(plan: Plan) -> list[list[str]]:
    rates = plan.prediction.rates if plan.prediction else {}
    rows = []
    for kernel, place in plan.placements.items():
        cost = placed_cost(plan, kernel)
        # a synchronous plan's actors, each with its share of the envs; a threaded kernel's replicas are threads
        unit = "actor" if splits_envs(plan, kernel) else "thread" if cost is not None and cost.threads else ""
        count = f"{place.replicas} {unit}{'s' if place.replicas > 1 else ''}" if unit else str(place.replicas)
        rows.append([kernel, place.device, place.variant, count, f"{rates.get(kernel, 0):g}",
                     fmt.seconds(predicted_call(plan, kernel)[0]), _source(plan, kernel, cost)])
    return rows


def _source(plan: Plan, kernel: str, cost: KernelCost | None) -> str:
    """How a placed kernel's cost is known; a kernel on a simulated device says so (it runs on the host), and so do
    an energy or a one-off setup known otherwise than the latency ("calibrated; setup modelled")."""
    if cost is None:
        return "-"
    kind = plan.devices.get(plan.placements[kernel].device)
    return cost_source(cost, f"simulated {kind.upper()}" if kind is not None and _simulated(kind) else "")


def cost_source(cost: KernelCost, where: str = "") -> str:
    """``modelled``, ``calibrated; energy measured``, ``calibrated; setup modelled``, ``modelled (simulated FPGA)``."""
    text = f"{cost.source} ({where})" if where else cost.source
    if cost.energy_source != "modelled":
        text += f"; energy {cost.energy_source}"
    if cost.setup_s > 0 and cost.setup_source != cost.source:
        text += f"; setup {cost.setup_source}"
    return text


def precision_sentence(plan: Plan) -> str:
    """The precision each FPGA's network kernels are modelled at, e.g. "FPGA network kernels are modelled at
    their device's training precision: fpga float32 (...)"; empty without an FPGA."""
    info = plan.prediction.platform if plan.prediction is not None else None
    fpgas = [d for d in (info.devices if info is not None else ()) if "training_precision" in d]
    if not fpgas:
        return ""
    named = ", ".join(f"{d['name']} {d['training_precision']}" for d in fpgas)
    return (f"FPGA network kernels (inference, learner update) are modelled at their device's training precision: "
            f"{named} (the catalogue entry's training_precision, or the platform device entry's; Adam keeps fp32 "
            f"state; docs/cost-models.md, FPGA).")


def _simulated(kind: str) -> bool:
    from pearl_py.platform.kinds import device_kind

    try:
        return device_kind(kind).simulated
    except KeyError:
        return False


def _count(n: float) -> str:
    return f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.1f}k" if n >= 1e3 else f"{n:.0f}"


def variant_sentences(plan: Plan) -> list[str]:
    """Why each kernel runs a variant other than the reference: per-call times, setup, break-even.

    E.g. "learner_update runs 'compiled' on cpu: 0.771 ms vs 1.63 ms per call for 'reference'
    (calibrated); its one-off setup of 8.0 s pays back after 9.3k updates (the run makes 25.0k)."
    """
    p = plan.prediction
    out = []
    for kernel, place in plan.placements.items():
        if place.variant == "reference":
            continue
        mine = placed_cost(plan, kernel)
        ref = p.cost(kernel, place.device, "reference")
        if mine is None:
            continue
        at_one = ref is not None and place.replicas > 1 and all(t.threads != place.replicas for t in ref.threads)
        ref = ref.at(place.replicas) if ref is not None else None
        kind = kernel_kind(plan, kernel)
        calls = kind.call_unit if kind is not None else "calls"
        text = f"{kernel} runs {place.variant!r} on {place.device}: {fmt.seconds(call_seconds(mine))}"
        if ref is not None:
            text += f" vs {fmt.seconds(call_seconds(ref))} per call for 'reference'"
            text += " at one thread" if at_one else ""
            text += f" ({' and '.join(sorted({mine.source, ref.source}))})"
        else:
            text += f" per call ({mine.source}; the reference is not offered there)"
        setup = mine.setup_s
        if setup <= 0:
            text += ", with no one-off setup."
        elif ref is not None and ref.latency_s > mine.latency_s:
            needed = setup / (ref.latency_s - mine.latency_s)
            text += (f"; its one-off setup of {setup:.1f} s ({mine.setup_source}) pays back after {_count(needed)} "
                     f"{calls}")
            if p.horizon is not None and p.horizon != float("inf"):
                text += f" (the run makes {_count(p.rates.get(kernel, 0.0) * p.horizon)})."
            else:
                text += " (steady state assumed)."
        else:
            text += f"; one-off setup {setup:.1f} s ({mine.setup_source})."
        out.append(text)
    return out


def variant_notes(plan: Plan) -> list[str]:
    """Why implementation variants were not offered (unavailable here, unsupported, setup not paid back)."""
    return [note for notes in plan.prediction.variant_notes.values() for note in sorted(set(notes))]


def choice_sentences(plan: Plan) -> list[str]:
    """The sentences under the assignment table: variants chosen, threads of a threaded kernel
    (how many and why), variants not offered."""
    return variant_sentences(plan) + list(plan.prediction.threads) + variant_notes(plan)


def cost_table(plan: Plan) -> tuple[list[str], list[list[str]]]:
    """Kernel x device: latency per call, the kernel alone, with its source; '-' where it cannot run. Where the
    kernel is placed, the placed variant at its threads (the figure every other table shows); elsewhere the
    fastest variant at one thread."""
    costs = plan.prediction.costs
    devices = list(dict.fromkeys(d for per_device in costs.values() for d in per_device))
    rows = []
    for kernel in plan.placements:
        row = [kernel]
        for d in devices:
            variants = costs.get(kernel, {}).get(d)
            if not variants:
                row.append("-")
                continue
            place = plan.placements[kernel]
            if d == place.device and place.variant in variants:
                name, best = place.variant, placed_cost(plan, kernel)
            else:
                name, best = min(variants.items(), key=lambda kv: kv[1].latency_s)
            label = f"{fmt.seconds(call_seconds(best))} {cost_source(best)}"
            if len(variants) > 1 or d == place.device:
                label += f" ({name}{', placed' if d == place.device else ''})"
            row.append(label)
        rows.append(row)
    return ["kernel", *devices], rows


def layer_tables(plan: Plan) -> list[tuple[str, list[str], list[list[str]], list[str]]]:
    """Per network kernel with convolutions: ``(kernel, header, rows, resource lines)``: each recorded layer's
    FLOPs and modelled time on one device of each model the plan weighed (FPGA: with the DSPs of its loop
    nests), and the whole kernel's resources on each device that reports some beyond cores."""
    p = plan.prediction
    tables = []
    for kernel in plan.placements:
        options = {d: variants["reference"] for d, variants in p.costs.get(kernel, {}).items()
                   if "reference" in variants and variants["reference"].layers}
        shown: dict[str, str] = {}
        for device in options:
            model = p.devices[device].model if device in p.devices else device
            shown.setdefault(model, device)
        if not shown:
            continue
        devices = list(shown.values())
        first = options[devices[0]].layers
        rows = []
        for i, layer in enumerate(first):
            row = [layer.layer, f"{layer.flops / 1e6:,.2f}"]
            for d in devices:
                cost = options[d].layers[i]
                dsp = cost.resources.get("dsp")
                row.append(fmt.seconds(cost.latency_s) + (f", {dsp:,.0f} DSP" if dsp else ""))
            rows.append(row)
        resources = [f"{d}: " + ", ".join(f"{name} {amount:,.0f}"
                                          for name, amount in sorted(options[d].resources.items()))
                     + f" ({options[d].source})" for d in devices
                     if set(options[d].resources) - {"cores", "memory_bytes"}]
        tables.append((kernel, ["layer", "MFLOP per call", *devices], rows, resources))
    return tables


def utilization_items(plan: Plan) -> list[tuple[str, float, bool]]:
    p = plan.prediction
    ranked = sorted(p.utilization.items(), key=lambda kv: -kv[1])
    shown = ranked[:UTILIZATION_LIMIT]
    items = [(name, value, name == p.bottleneck) for name, value in shown]
    if len(ranked) > len(shown):
        rest = ranked[len(shown):]
        items.append((f"{len(rest)} more (max {fmt.percent(rest[0][1])})", rest[0][1], False))
    return items


def pareto_points(plan: Plan) -> list[tuple[float, float, str, bool]]:
    """(samples/s, samples/J, label, is this plan) for every front point, plus the chosen plan."""
    p = plan.prediction
    points = []
    for q in p.pareto:
        same = abs(q.samples_per_s - p.samples_per_s) <= 1e-9 * p.samples_per_s and \
            abs(q.samples_per_j - p.samples_per_j) <= 1e-9 * p.samples_per_j
        label = f"this plan ({plan.objective})" if same else f"{fmt.rate(q.samples_per_s)} /s"
        points.append((q.samples_per_s, q.samples_per_j, label, same))
    if not any(pt[3] for pt in points):
        points.append((p.samples_per_s, p.samples_per_j, f"this plan ({plan.objective})", True))
    return points


def pareto_rows(plan: Plan) -> list[list[str]]:
    return [[fmt.rate(q.samples_per_s), fmt.rate(q.samples_per_j), f"{q.power_w:,.0f} W",
             "; ".join(f"{k} {fmt.placement(v)}" for k, v in q.placements.items())] for q in plan.prediction.pareto]


def alternative_rows(plan: Plan) -> tuple[str, list[list[str]]]:
    """The other objective's plan, kernel by kernel beside this one."""
    alt = plan.prediction.alternative
    if alt is None:
        return "", []
    return alt.objective, [[kernel, fmt.placement(place), fmt.placement(other) if other else "-",
                            "" if other and other.device == place.device else "moved"]
                           for kernel, place in plan.placements.items() for other in [alt.placements.get(kernel)]]


def infeasible_notes(plan: Plan) -> list[str]:
    return [reason if reason.startswith(kernel) else f"{kernel}: {reason}"
            for kernel, reasons in plan.prediction.infeasible.items() for reason in sorted(set(reasons))]
