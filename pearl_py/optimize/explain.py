"""Plain sentences about a plan: what limits its throughput, what would lift it, why objectives differ,
how many threads a threaded kernel got and why.

Example::

    >>> limit_sentence(problem, solution)
    'Throughput is limited by fpga (replay_sample, learner_update), busy 10.2 us of every 10.2 us per sample;
     lifting it would reach at most 131,000 samples/s, where cpu (env_step, inference) limits next.'
"""
from __future__ import annotations

from pearl_py.optimize.model import (
    COLLECTION_PHASE,
    POLICY_LAG,
    Assignment,
    Choice,
    Performance,
    collecting,
    contribution,
    evaluate,
    other_objective,
)
from pearl_py.optimize.problem import AssignmentProblem
from pearl_py.protocol.device_work import CORES, IN_SERIES, OTHER


def _hosted(problem: AssignmentProblem, assignment: Assignment, resource: str) -> list[str]:
    return [k for k, c in assignment.items() if resource in problem.devices[c.device].physical]


def _describe(problem: AssignmentProblem, assignment: Assignment, resource: str) -> str:
    if resource in problem.devices:
        kernels = _hosted(problem, assignment, resource)
        return f"{resource} ({', '.join(kernels)})" if kernels else resource
    return f"the link {resource}"


def limit_sentence(problem: AssignmentProblem, assignment: Assignment, perf: Performance) -> str:
    """One sentence: the bottleneck, its busy time, and what lifting it would give."""
    if perf.throttled:
        return (f"Throughput is limited by the power cap of {problem.power_cap_w:g} W: the plan is slowed to "
                f"{perf.samples_per_s:,.0f} samples/s to stay under it; a higher cap (or a device with lower "
                f"idle power) would lift it.")
    if problem.synchronous and not problem.serialized:
        return synchronous_sentence(problem, assignment, perf)
    if problem.serialized:
        return ("Throughput is limited by the serialized protocol: every stage waits for the previous one, so the "
                f"time per sample is the sum of all busy times ({perf.time_per_sample * 1e6:,.1f} us); "
                "overlapping the stages (the parallel executor) would lift it to the slowest single device.")
    if perf.bottleneck == POLICY_LAG:
        acting = [k for k in assignment if problem.task(k).acting]
        return (f"Throughput is limited by the policy-lag bound: actors ({', '.join(acting)}) may collect the next "
                f"round only during the last {problem.overlap:.0%} of a training round, so acting and most of "
                f"training run one after another ({perf.time_per_sample * 1e6:,.1f} us per sample); a larger "
                "max_policy_lag (staler acting parameters) would overlap them.")
    loads = {**perf.busy, **perf.link_busy}
    ranked = sorted(loads, key=loads.get, reverse=True)
    top = ranked[0]
    text = (f"Throughput is limited by {_describe(problem, assignment, top)}, busy "
            f"{loads[top] * 1e6:,.1f} us per sample ({perf.samples_per_s:,.0f} samples/s)")
    if top not in problem.devices:
        text += "; co-locating the kernels at its ends or a faster link would lift it"
    else:
        text += _lift(problem, assignment, perf, top)
    if len(ranked) > 1 and loads[ranked[1]] > 0:
        nxt = ranked[1]
        text += (f", up to {1 / loads[nxt]:,.0f} samples/s, where {_describe(problem, assignment, nxt)} "
                 "limits next")
    return text + "."


def _lift(problem: AssignmentProblem, assignment: Assignment, perf: Performance, device: str) -> str:
    """What would lift a bottleneck device: by what binds it when it has several units (its processes side by
    side, :class:`~pearl_py.protocol.device_work.DeviceWork`), else by what it hosts."""
    hosted = _hosted(problem, assignment, device)
    replicable = [k for k in hosted if problem.task(k).replicable]
    others = [k for k in hosted if not problem.task(k).replicable]
    binding = perf.binding.get(device)
    units = problem.devices[device].units
    if binding == OTHER:
        beside = " while the actors run beside it" if replicable else ""
        return (f": the process running {', '.join(others)} in turn sets the pace{beside}; a faster device or "
                "variant for these kernels would lift it")
    if binding == IN_SERIES:
        threaded = [k for k in others if assignment[k].replicas > 1]
        fewer = evaluate(problem, {**assignment, **{k: Choice(assignment[k].device, assignment[k].variant, 1)
                                                    for k in threaded}})
        lift = ("one thread (a core each for the actors and the learner) would lift it"
                if fewer.feasible and fewer.time_per_sample < perf.time_per_sample
                else "a CPU with more cores (one each for the actors and these threads) would lift it; one thread "
                     "would be slower")
        return f": the threads of {', '.join(threaded)} share the actors' cores, so nothing on it overlaps; {lift}"
    if binding == CORES:
        return f": all {units} cores are busy; another CPU would lift it"
    if replicable and problem.devices[device].kind == "cpu":
        return f"; more cores for {', '.join(replicable)} (another CPU) would lift it"
    return "; a faster device or variant for these kernels would lift it"


def synchronous_sentence(problem: AssignmentProblem, assignment: Assignment, perf: Performance) -> str:
    """A synchronous plan: how long each phase takes per sample, which one bounds the plan, what would lift it."""
    c, learn = perf.collect_s, perf.learn_s
    actors = max((ch.replicas for k, ch in assignment.items() if problem.task(k).replicable), default=1)
    learning = sorted((k for k in assignment if not collecting(problem, k)),
                      key=lambda k: -contribution(problem, k, assignment[k]))
    where = perf.bottleneck.partition("(")[2].rstrip(")")
    head = (f"Collection and learning alternate (synchronous protocol): collecting takes {c * 1e6:,.1f} us per "
            f"sample ({actors} actor(s) splitting the envs), learning {learn * 1e6:,.1f} us "
            f"({', '.join(f'{k} on {assignment[k].device}' for k in learning)})")
    if perf.bottleneck.startswith(COLLECTION_PHASE):
        ceiling = f"{1 / learn:,.0f} samples/s" if learn else "no limit"
        return (head + f"; collection on {where} bounds the plan ({c / (c + learn):.0%} of its time): more actors "
                f"(cores) or faster env steps and inference would lift it, up to {ceiling} where learning limits.")
    ceiling = f"{1 / c:,.0f} samples/s" if c else "no limit"
    return (head + f"; learning on {where} bounds the plan ({learn / (c + learn):.0%} of its time): a faster "
            f"variant or device for {learning[0]} would lift it (collection alone allows {ceiling}); more actors "
            "would not.")


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"


def thread_sentences(problem: AssignmentProblem, assignment: Assignment, perf: Performance,
                     objective: str) -> list[str]:
    """Per kernel that may run several threads where it is placed: how many it got, and why.

    E.g. "learner_update runs 2 threads on cpu: 4.2 ms per call vs 6.9 ms at 1 thread (calibrated); its
    extra thread takes a core the 1 actor process(es) leave free (4 cores)."
    """
    out = []
    for kernel, choice in assignment.items():
        if not problem.threaded(kernel, choice.device, choice.variant):
            continue
        option = problem.option(kernel, choice.device, choice.variant)
        units = problem.devices[choice.device].units
        actor_kernels = [(k, c) for k, c in assignment.items()
                         if problem.task(k).replicable and choice.device in problem.devices[c.device].physical]
        actors = max((c.replicas for _, c in actor_kernels), default=0)
        held = max((problem.cores(k, c.device, c.variant, c.replicas) for k, c in actor_kernels), default=0)
        n = choice.replicas
        head = f"{kernel} runs {n} thread{'s' if n > 1 else ''} on {choice.device}"
        if n > 1:
            where = (f"its threads share the cores of the {actors} actor process(es) ({units} cores), so the model "
                     "runs the device's work in series, still the faster choice"
                     if perf.binding.get(choice.device) == IN_SERIES else
                     f"its extra thread{'s take cores' if n > 2 else ' takes a core'} the {actors} actor process(es) "
                     f"leave free ({units} cores)")
            out.append(f"{head}: {_ms(option.at(n)[0])} per call vs {_ms(option.latency_s)} at 1 thread "
                       f"({option.source}); {where}.")
            continue
        reasons = []
        for m in problem.replica_choices(kernel, choice.device, choice.variant)[1:]:
            trial = evaluate(problem, {**assignment, kernel: Choice(choice.device, choice.variant, m)})
            at_m = f"{m} threads would take {_ms(option.at(m)[0])} per call (vs {_ms(option.latency_s)})"
            if option.at(m)[0] >= option.latency_s:
                reasons.append(f"{at_m}: no faster")
            elif not trial.feasible:
                reasons.append(f"{at_m}, but the {actors} actor process(es) hold {held} of the {units} cores")
            elif trial.objective(objective) >= perf.objective(objective):
                reasons.append(f"{at_m}, but would not lower the plan's {'time' if objective == 'throughput' else 'energy'}"
                               " per sample")
        out.append(f"{head}: " + "; ".join(reasons) + ".")
    return out


def _canonical(problem: AssignmentProblem, assignment: Assignment) -> list:
    """The placement with each device named by its model: equal for two plans that differ only by which of
    several identical devices (same catalogue model) hosts a group of kernels."""
    groups: dict[str, list] = {}
    for kernel, c in assignment.items():
        groups.setdefault(c.device, []).append((kernel, c.variant, c.replicas))
    return sorted((problem.devices[d].kind, problem.devices[d].model or d, sorted(ks)) for d, ks in groups.items())


def compare_sentence(problem: AssignmentProblem, chosen: tuple[Assignment, Performance], objective: str,
                     other: tuple[Assignment, Performance]) -> str:
    """Why the throughput and power objectives pick the same or different plans, in one or two sentences.

    A move between identical devices is no reason: plans that differ only by such moves are called the same
    placement, and idle power is credited only where the plans' idle power differs (the rule: a plan is
    charged the idle power of the devices it uses, docs/cost-models.md §6).
    """
    (a, pa), (b, pb) = chosen, other
    moved = [k for k in a if (a[k].device, a[k].variant) != (b[k].device, b[k].variant)]
    other_name = other_objective(objective)
    if not moved:
        return (f"The {other_name} objective picks the same placement: here the fastest plan is also the one "
                "with the least energy per sample.")
    fast, frugal = (pa, pb) if objective == "throughput" else (pb, pa)
    fa, fr = (a, b) if objective == "throughput" else (b, a)
    changes = ", ".join(f"{k} {fa[k].device}->{fr[k].device}" for k in moved)
    if _canonical(problem, a) == _canonical(problem, b):
        return (f"The {other_name} objective picks the same placement up to identical devices ({changes}: the "
                "same model on both sides, so the same time, power and energy); here the fastest plan is also "
                "the one with the least energy per sample.")
    off = sorted(set(fast.busy) - set(frugal.busy))
    on = sorted(set(frugal.busy) - set(fast.busy))
    reasons = []
    idle_saved = fast.idle_w - frugal.idle_w
    if off and idle_saved >= 0.5:
        instead = f" (using {', '.join(on)} instead)" if on else ""
        reasons.append(f"switching off {', '.join(off)}{instead} saves {idle_saved:,.0f} W of idle power")
    saved = fast.dynamic_j - frugal.dynamic_j
    if abs(saved) * 1e3 >= 0.0005:
        reasons.append(f"its kernels draw {abs(saved) * 1e3:,.3f} mJ {'less' if saved > 0 else 'more'} "
                       "dynamic energy per sample")
    return (f"The power objective moves {changes}: {fast.samples_per_s / frugal.samples_per_s:,.2f}x fewer "
            f"samples/s but {frugal.samples_per_j / fast.samples_per_j:,.2f}x more samples per joule, because "
            f"{' and '.join(reasons) or 'its devices idle at lower power'}.")
