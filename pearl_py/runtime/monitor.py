"""The run's monitor: each kernel's measured per-call cost against the plan's prediction, and the corrections it makes.

Every executor calls it at its round boundaries (docs/runtime.md, "Runs that correct themselves", states the rule,
its defaults in :class:`AdaptOptions`, what is recorded and the mode changes): over a window of ``window_rounds``
rounds it compares the seconds the plan's host-timed kernels took with their predicted per-call costs; when the plan
has been off by ``threshold`` for ``patience_rounds`` rounds and ``patience_s`` seconds it re-times the threaded
kernel's options (thread counts, or :class:`LearnerOption` s where a variant is disputed) with the run's own updates,
none added or lost, and at the next boundary switches to the best by ``switch_margin`` or keeps the option: either
way a :class:`Correction`, and the measured costs become the reference. Where the executor can continue in the other
mode (:class:`ModeModel`) a decision also weighs that mode (``kernel`` :data:`MODE`, :attr:`Monitor.switch_to`);
a run goes back to serialized once at most.

Example (the serial executor, condensed)::

    >>> monitor = Monitor.of(plan, threads, AdaptOptions())      # None: nothing to watch (no prediction)
    >>> update = monitor.watch(update)                              # each call timed; re-timing sets its threads
    >>> for round in rounds:
    ...     ...                                                     # the round's steps and updates
    ...     correction = monitor.round_ended(steps, learner.gradient_steps, timer)
    >>> monitor.corrections                                         # what RunResult.corrections holds

A learner in another process (a Ray worker) runs its calls at :meth:`Monitor.schedule`'s options and hands back each
call's seconds to :meth:`Monitor.ran`.
"""
from __future__ import annotations

import copy
import dataclasses
import statistics
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from pearl_py.kernels.affinity import usable_cpus
from pearl_py.protocol.device_work import DeviceWork
from pearl_py.plan import Plan
from pearl_py.protocol.kernel import KernelKind

Clock = Callable[[], float]
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class AdaptOptions:
    """The monitor's rule (module docstring): how far off, for how long, how the options are re-timed.

    ``clock``: the seconds the monitor's own timing and its patience read (tests pass a fake clock).
    """

    threshold: float = 0.25
    """The plan is off when its window's samples/s is below ``1 - threshold`` of the reference."""
    patience_rounds: int = 3
    patience_s: float = 2.0
    window_rounds: int = 3
    """Rounds in the rolling window (the last ones, the current included)."""
    block_calls: int = 4
    retime_calls: int = 16
    """Calls each option gets while re-timing (in blocks of ``block_calls``, options taking turns)."""
    switch_margin: float = 0.05
    disputed: float = 1.5
    """Where variants can be switched: another variant is an option when its predicted per-call cost (at a costed
    thread count) is at most this many times the planned option's."""
    mode_margin: float = 0.15
    """Where the run can change mode: the other mode is chosen when its modelled seconds per env step (at the costs
    measured in the run) are this much below the current mode's and the steps left pay the actors' start-up."""
    process_start_s: float = 2.0
    """Seconds an overlapped plan's actor processes take to start (charged against the steps left when switching to
    it) where the plan has no start-up figure of its own (docs/optimizer.md, "Whole run")."""
    clock: Clock = time.perf_counter


MODE = "mode"
"""A mode correction's ``kernel``: the protocol's mode (serialized or overlapped) changed, not one kernel's option."""


@dataclass(frozen=True)
class ModeModel:
    """The two modes of an off-policy plan on one CPU, composed as the planner does (docs/runtime.md, "Changing mode"):
    serialized, the sum of the kernels' seconds per env step; overlapped, ``actors`` actors beside the learner's process
    on ``units`` cores. ``rates``: calls per env step.

        >>> model = ModeModel("serialized", {"act": 1.0, "learn": 0.2}, frozenset({"act"}), 1, 2,
        ...                   start_s=0.5, total_steps=2_000)
        >>> model.seconds("serialized", {"act": 2e-3, "learn": 12e-3}, 1, "learn")   # 2 + 2.4 ms
        0.0044
        >>> round(model.seconds("overlapped", {"act": 2e-3, "learn": 12e-3}, 1, "learn"), 6)   # max(2, 2.4, 2.2)
        0.0024
    """

    mode: str
    rates: Mapping[str, float]
    replicable: frozenset[str]
    actors: int
    units: int
    start_s: float
    total_steps: int
    anchor: float = 1.0
    """The other mode's figures are multiplied by this (:meth:`anchored`): at least 1."""

    @classmethod
    def of(cls, plan: Plan, total_steps: int, rule: AdaptOptions) -> ModeModel | None:
        """The model of ``plan``'s modes (None: no rates, another mode, or a kernel off the CPU); overlapped: one actor
        per core the learner's planned threads leave (at least one)."""
        prediction = plan.prediction
        if prediction is None or not prediction.rates or plan.mode not in ("serialized", "overlapped") or any(
                plan.device_kind(p.device) != "cpu" for p in plan.placements.values()):
            return None
        threaded = next((k for k in plan.placements if _kind(k) is not None and _kind(k).threaded), None)
        units = _usable_cores()
        replicable = frozenset(k for k in plan.placements if _kind(k) is not None and _kind(k).replicable)
        actors = (max(plan.placements[k].replicas for k in replicable) if plan.mode == "overlapped" and replicable
                  else max(1, units - (plan.placements[threaded].replicas if threaded else 1)))
        start = prediction.run.startup_s if prediction.run is not None and prediction.run.startup_s > 0 else \
            rule.process_start_s
        return cls(plan.mode, dict(prediction.rates), replicable, actors, units, start, total_steps)

    @property
    def other(self) -> str:
        return "overlapped" if self.mode == "serialized" else "serialized"

    def seconds(self, mode: str, per_call: Mapping[str, float], threads: int, threaded: str) -> float:
        """Seconds per env step of ``mode`` at ``per_call`` seconds a call, the threaded kernel at ``threads``."""
        loads = {k: self.rates.get(k, 0.0) * s for k, s in per_call.items()}
        scale = 1.0 if mode == self.mode else self.anchor
        if mode == "serialized":
            return scale * sum(loads.values())
        work = DeviceWork()
        for kernel, load in loads.items():
            if kernel in self.replicable:
                work.add(load / self.actors, True, self.actors)
            else:
                work.add(load, False, threads if kernel == threaded else 1)
        return scale * work.busy_s(self.units)

    def anchored(self, planned: Mapping[str, float], threads: int, threaded: str) -> ModeModel:
        """This model with the other mode scaled so that, at the plan's per-call costs ``planned``, it is no faster than
        the planner's choice: only what the run measures, not the composition's omissions, can make it win.

            >>> model = ModeModel("serialized", {"act": 1.0, "learn": 0.2}, frozenset({"act"}), 1, 2, 0.5, 2_000)
            >>> model.anchored({"act": 2e-3, "learn": 12e-3}, 1, "learn").anchor   # 4.4 ms against 2.4 ms
            1.8333333333333333
        """
        now, other = (self.seconds(m, planned, threads, threaded) for m in (self.mode, self.other))
        return dataclasses.replace(self, anchor=max(1.0, now / other) if other > 0 else 1.0)

    def describe(self, mode: str) -> str:
        """``serialized``, or ``overlapped (2 actors)``."""
        return mode if mode == "serialized" else f"{mode} ({self.actors} actor{'s' if self.actors != 1 else ''})"


def switched_plan(plan: Plan, after: Mapping[str, Any]) -> Plan:
    """``plan`` in the mode a mode correction's ``after`` names (``{"mode": "overlapped", "actors": 1, ...}``)."""
    actors = after["actors"] if after["mode"] == "overlapped" else 1
    placements = {k: (dataclasses.replace(p, replicas=actors) if _kind(k) is not None and _kind(k).replicable else p)
                  for k, p in plan.placements.items()}
    return dataclasses.replace(plan, mode=after["mode"], placements=placements)


class ThreadSetting(Protocol):
    """What the monitor moves between options: the option now (``n``: a thread count, or a :class:`LearnerOption`)
    and ``set(n)`` (:class:`~pearl_py.kernels.affinity.LearnerThreads` in a run)."""

    n: Any

    def set(self, n: Any) -> None: ...


@dataclass(frozen=True)
class LearnerOption:
    """A variant of the threaded kernel at a thread count: an option of a monitor that may switch variants."""

    variant: str
    threads: int


class VariantSetting:
    """A :class:`ThreadSetting` whose ``n`` is a :class:`LearnerOption`, its count set through ``threads``: what a
    monitor that may switch variants moves (as itself: a remote learner's next option).

        >>> setting = VariantSetting(ThreadCount(1), "reference")
        >>> setting.set(LearnerOption("fused", 1)); setting.n
        LearnerOption(variant='fused', threads=1)
    """

    def __init__(self, threads: ThreadSetting, variant: str) -> None:
        self.threads = threads
        self.n = LearnerOption(variant, threads.n)

    def set(self, n: LearnerOption) -> None:
        self.threads.set(n.threads)
        self.n = n


class VariantSwitch(VariantSetting):
    """A :class:`VariantSetting` that calls the current variant; ``build(variant)`` makes another variant's call the
    first time it is set (before the call is timed).

        >>> build = lambda variant: kernels.build(LEARNER_UPDATE, variant, learner)
        >>> switch = VariantSwitch(LearnerThreads(2), "fused", update, build)
        >>> switch.set(LearnerOption("reference", 1)); switch(batch)      # learner.update at 1 thread
    """

    def __init__(self, threads: ThreadSetting, variant: str, call: Callable[..., Any],
                 build: Callable[[str], Callable[..., Any]]) -> None:
        super().__init__(threads, variant)
        self.build = build
        self.calls = {variant: call}

    def set(self, n: LearnerOption) -> None:
        if n.variant not in self.calls:
            self.calls[n.variant] = self.build(n.variant)
        super().set(n)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.calls[self.n.variant](*args, **kwargs)


@dataclass
class ThreadCount:
    """A thread count and nothing more (a :class:`ThreadSetting`): the one a remote learner's next calls run at."""

    n: Any
    """The count (or, as :meth:`Monitor.schedule`'s shadow of a :class:`VariantSetting`, a :class:`LearnerOption`)."""

    def set(self, n: Any) -> None:
        self.n = n


@dataclass(frozen=True)
class Correction:
    """One decision of the monitor (``result.json``'s ``corrections``; every figure measured unless named modelled)."""

    step: int
    """Env steps collected when the decision took effect (a round boundary)."""
    updates: int
    """Learner updates done by then."""
    kernel: str
    change: str
    """What changed, in words (``learner threads 2 -> 1``), or what was kept."""
    switched: bool
    before: Mapping[str, Any]
    after: Mapping[str, Any]
    predicted_s: float
    """The kernel's reference per-call cost (the plan's modelled one, or re-timed at an earlier decision)."""
    measured_s: float
    """Its per-call cost over the window that was off."""
    retimed_s: Mapping[str, float]
    """Median per-call cost of each option re-timed in the run, by option (``2 threads``)."""
    ratio: float
    """The window's samples/s measured over the reference's (below ``1 - threshold``)."""
    reason: str
    source: str = "measured"


@dataclass
class _Retime:
    """Re-timing in progress: each option's block timings (seconds per call), whose turn it is."""

    options: tuple[int, ...]
    per_call: dict[int, list[float]] = field(default_factory=dict)
    calls: dict[int, int] = field(default_factory=dict)
    turn: int = 0
    in_block: int = 0

    def current(self) -> int:
        return self.options[self.turn]

    def record(self, option: int, seconds: float, block_calls: int) -> None:
        self.calls[option] = self.calls.get(option, 0) + 1
        self.in_block += 1
        self.per_call.setdefault(option, []).append(seconds)
        if self.in_block >= block_calls:
            self.in_block = 0
            self.turn = (self.turn + 1) % len(self.options)

    def done(self, calls: int) -> bool:
        return all(self.calls.get(o, 0) >= calls for o in self.options)

    def medians(self) -> dict[int, float]:
        return {o: statistics.median(self.per_call[o]) for o in self.options}


class Monitor:
    """Watches one process's kernels against the plan; see the module docstring for the rule."""

    def __init__(self, reference: Mapping[str, float], threaded: str, options: tuple[int, ...],
                 threads: ThreadSetting, rule: AdaptOptions, say: Callable[[str], None] | None = None,
                 modes: ModeModel | None = None) -> None:
        self.reference = dict(reference)
        """Per-call seconds each watched kernel is expected to take (modelled, then re-timed)."""
        self.planned = dict(reference)
        """The plan's per-call seconds (modelled), for the prediction as executed."""
        self.extra_s = 0.0
        """Seconds the watched kernels' calls so far are expected to take beyond the plan's prediction for them:
        each round's calls at the reference then in force (0 until a decision moves the reference)."""
        self._last: dict[str, tuple[int, float]] = {}
        self.threaded, self.options, self.threads, self.rule = threaded, options, threads, rule
        self.say = say
        self.corrections: list[Correction] = []
        self._window: deque[tuple[dict[str, tuple[int, float]], float]] = deque(maxlen=rule.window_rounds + 1)
        self._off_rounds = 0
        self._off_since: float | None = None
        self._retime: _Retime | None = None
        self._own: list[float] = [0, 0.0]  # the threaded kernel's calls and seconds on the monitor's clock
        self._reason = ""
        self._off_ratio = 1.0
        self._off_measured = 0.0
        if modes is not None:   # the planner chose modes.mode at the planned costs: anchored there
            n = threads.n.threads if isinstance(threads.n, LearnerOption) else threads.n
            modes = modes.anchored(self.planned, n, threaded)
        self.modes = modes
        """The run's two modes, where its executor can continue in the other one (None: it cannot), anchored on
        the planner's choice (:meth:`ModeModel.anchored`)."""
        self.switch_to: dict[str, Any] | None = None
        """A mode correction's ``after`` once the monitor decided the run continues in the other mode."""
        self._steps: deque[tuple[int, float]] = deque(maxlen=rule.window_rounds + 1)
        """After a mode correction: the env steps and the clock at the last round boundaries (:meth:`_check_back`)."""

    @classmethod
    def of(cls, plan: Plan, threads: ThreadSetting, adapt: bool | AdaptOptions, log: Any = None,
           earlier: list[dict[str, Any]] = (), modes: ModeModel | None = None) -> Monitor | None:
        """The monitor of ``plan``'s kernels in this process; None with ``adapt`` False, no prediction, or a learner
        off the CPU. ``adapt``: True or the rule; ``log``: the RunLog whose progress says each correction;
        ``earlier``: the run's earlier corrections (:meth:`resume`); ``modes``: where the executor can switch."""
        prediction = plan.prediction
        if prediction is None or adapt is False:
            return None
        rule = adapt if isinstance(adapt, AdaptOptions) else AdaptOptions()
        threaded = next((k for k in plan.placements if _kind(k) is not None and _kind(k).threaded), None)
        reference: dict[str, float] = {}
        for kernel, placement in plan.placements.items():
            cost = prediction.cost(kernel, placement.device, placement.variant)
            if cost is None:
                continue
            at = cost.at(placement.replicas) if kernel == threaded else cost
            # an env step's and an update's predicted costs hold the loop's own work, which no kernel timer sees
            reference[kernel] = at.latency_s - at.loop_s
        if threaded not in reference or plan.device_kind(plan.placements[threaded].device) != "cpu":
            return None  # a learner elsewhere than on a CPU has no thread options, and the host times only its launches
        planned = LearnerOption(plan.placements[threaded].variant, plan.placements[threaded].replicas)
        variants = isinstance(threads, VariantSetting)
        options = learner_options(planned, _costed(plan, threaded), rule.disputed, variants)
        if variants and not isinstance(options[0], LearnerOption):
            threads = threads.threads  # no variant disputed: thread counts are the options, as elsewhere
        monitor = cls(reference, threaded, options, threads, rule, _progress(log) if log is not None else None, modes)
        monitor.resume([Correction(**c) for c in earlier])
        return monitor

    def resume(self, earlier: list[Correction]) -> None:
        """Start where the run's earlier sessions left off: their corrections kept, the last option's threads set and
        its re-timed cost the reference (after a mode correction: the per-call costs that decision measured)."""
        self.corrections = list(earlier)
        options = [c for c in earlier if c.kernel != MODE]
        if options:
            option = _option(options[-1].after)
            self.threads.set(option)
            self.reference[self.threaded] = options[-1].retimed_s.get(_word(option), self.reference[self.threaded])
        if earlier and earlier[-1].kernel == MODE:
            measured = earlier[-1].after.get("per_call_s", {})
            self.reference.update({k: s for k, s in measured.items() if k in self.reference})

    def watch(self, call: F) -> F:
        """``call`` (the threaded kernel), timed; while re-timing, each call runs at its turn's option."""
        clock = self.rule.clock

        def watched(*args: Any, **kwargs: Any) -> Any:
            self.before_call()
            start = clock()
            out = call(*args, **kwargs)
            self.after_call(clock() - start)
            return out

        return watched  # type: ignore[return-value]

    def before_call(self) -> None:
        """While re-timing: set the turn's option (once each has its calls, the running one)."""
        retime = self._retime
        if retime is not None:
            done = retime.done(self.rule.retime_calls)
            self.threads.set(retime.options[0] if done else retime.current())

    def after_call(self, seconds: float) -> None:
        """Count a call of the threaded kernel that took ``seconds``."""
        self._own[0] += 1
        self._own[1] += seconds
        retime = self._retime
        if retime is not None and not retime.done(self.rule.retime_calls):
            retime.record(self.threads.n, seconds, self.rule.block_calls)

    def schedule(self, calls: int) -> list[Any]:
        """The option each of the next ``calls`` calls runs at, as :meth:`before_call` would set it (a remote
        learner's; their seconds go to :meth:`ran`)."""
        shadow = copy.copy(self)
        shadow.threads, shadow._own = ThreadCount(self.threads.n), [0, 0.0]
        shadow._retime = copy.deepcopy(self._retime)
        counts = []
        for _ in range(calls):
            shadow.before_call()
            counts.append(shadow.threads.n)
            shadow.after_call(0.0)
        return counts

    def ran(self, seconds: list[float]) -> None:
        """A remote learner ran calls at :meth:`schedule`'s options, taking ``seconds`` each."""
        for call_s in seconds:
            self.before_call()
            self.after_call(call_s)

    def round_ended(self, steps: int, updates: int, timer: Any = None) -> Correction | None:
        """At a round boundary: update the window, start a re-time or decide (returned, recorded, said). ``timer``: the
        process's other kernels' times (None: the threaded kernel alone)."""
        now = self.rule.clock()
        totals = {k: (int(timer.calls.get(k, 0)), float(timer.seconds.get(k, 0.0)))
                  for k in self.reference if k != self.threaded and k not in timer.evented} if timer is not None else {}
        totals[self.threaded] = (int(self._own[0]), float(self._own[1]))
        for kernel, (calls, _) in totals.items():
            self.extra_s += (calls - self._last.get(kernel, (0, 0.0))[0]) * (self.reference[kernel] - self.planned[kernel])
        self._last = totals
        self._check_back(steps, updates, now)
        if self._retime is not None:
            if self._retime.done(self.rule.retime_calls):
                return self._decide(steps, updates)
            return None
        self._window.append((totals, now))
        if len(self._window) < 2:
            return None
        ratio, measured = self._ratio()
        if ratio >= 1.0 - self.rule.threshold:
            self._off_rounds, self._off_since = 0, None
            return None
        self._off_rounds += 1
        self._off_since = self._off_since if self._off_since is not None else self._window[-2][1]
        if self._off_rounds < self.rule.patience_rounds or now - self._off_since < self.rule.patience_s:
            return None
        self._off_ratio, self._off_measured = ratio, measured
        self._reason = (f"samples/s {ratio:.0%} of the expected for {self._off_rounds} rounds "
                        f"({now - self._off_since:.1f} s; rule: more than {self.rule.threshold:.0%} below for "
                        f"{self.rule.patience_rounds} rounds and {self.rule.patience_s:g} s)")
        if len(self.options) < 2:
            return self._decide(steps, updates)
        current = self.threads.n
        self._retime = _Retime((current, *(o for o in self.options if o != current)))
        return None

    def _ratio(self) -> tuple[float, float]:
        """The window's samples/s measured over expected (= expected seconds over measured seconds of the same
        calls), and the threaded kernel's measured per-call seconds."""
        deltas = self._deltas()
        measured = sum(seconds for _, seconds in deltas.values())
        expected = sum(calls * self.reference[kernel] for kernel, (calls, _) in deltas.items())
        calls, seconds = deltas[self.threaded]
        return (expected / measured if measured > 0 else 1.0), (seconds / calls if calls > 0 else 0.0)

    def _deltas(self) -> dict[str, tuple[int, float]]:
        """Each kernel's calls and seconds over the window."""
        (first, _), (last, _) = self._window[0], self._window[-1]
        return {k: (calls - first.get(k, (0, 0.0))[0], seconds - first.get(k, (0, 0.0))[1])
                for k, (calls, seconds) in last.items()}

    def _decide(self, steps: int, updates: int) -> Correction:
        retime, self._retime = self._retime, None
        before = self.threads.n if retime is None else retime.options[0]
        medians = retime.medians() if retime is not None else {}
        best = min(medians, key=medians.get) if medians else before
        switch = best != before and medians[best] < medians[before] * (1.0 - self.rule.switch_margin)
        chosen = best if switch else before
        self.threads.set(chosen)
        retimed = {_word(o): s for o, s in medians.items()}
        what = "learner" if isinstance(before, LearnerOption) else "learner threads"
        if switch:
            change = f"{what} {_short(before)} -> {_short(chosen)}"
        elif medians:
            change = f"kept {what} {_short(before)} (no option {self.rule.switch_margin:.0%} faster)"
        else:
            change = f"kept {what} {_short(before)} (no other option costed)"
        timed = ", ".join(f"{word} {1e3 * s:.3f} ms" for word, s in retimed.items())
        correction = Correction(
            step=steps, updates=updates, kernel=self.threaded, change=change, switched=switch,
            before=_setting(before), after=_setting(chosen), predicted_s=self.reference[self.threaded],
            measured_s=self._off_measured, retimed_s=retimed, ratio=self._off_ratio,
            reason=self._reason + (f"; re-timed in the run: {timed} a call" if timed else ""))
        self.corrections.append(correction)
        self._rebase(medians.get(chosen))
        if self.say is not None:
            self.say(f"correction at step {steps}: {change}; {correction.reason}")
        self._weigh_modes(steps, updates, _threads_of(chosen))
        return correction

    def _weigh_modes(self, steps: int, updates: int, threads: int) -> None:
        """After a decision: a mode correction and :attr:`switch_to` when the other mode is ``mode_margin`` faster at
        the costs just measured and the steps left pay its start-up (never back: :meth:`_check_back` measures that)."""
        model = self.modes
        left = model.total_steps - steps if model is not None else 0
        if left <= 0 or model.mode != "serialized" or any(c.kernel == MODE for c in self.corrections):
            return
        now = model.seconds(model.mode, self.reference, threads, self.threaded)
        other = model.seconds(model.other, self.reference, threads, self.threaded)
        if other >= now * (1.0 - self.rule.mode_margin) or left * (now - other) <= model.start_s:
            return
        planned = model.seconds(model.mode, self.planned, threads, self.threaded)
        before, after = model.describe(model.mode), model.describe(model.other)
        self._switch_mode(steps, updates, {"mode": model.mode}, {"mode": model.other, "actors": model.actors},
                          planned, now, {before: now, after: other},
                          f"at the per-call costs measured in the run, {after} {1e3 * other:.3f} ms an env step "
                          f"against {before} {1e3 * now:.3f} ms (modelled: the planner's composition"
                          + (f", {after} x{model.anchor:.2f} so that at the plan's costs it is no faster than the "
                             f"planner's choice" if model.anchor > 1.0 else "") + f"); {left} steps "
                          f"left save {left * (now - other):.1f} s against {model.start_s:.1f} s of actor start-up",
                          "modelled (from costs measured in the run)")

    def _check_back(self, steps: int, updates: int, now: float) -> None:
        """A run that went overlapped goes back once when its env steps over ``window_rounds`` rounds took
        ``mode_margin`` longer than the serialized figure it switched on (``retimed_s["serialized"]``)."""
        made = [c for c in self.corrections if c.kernel == MODE]
        if self.modes is None or self.modes.mode != "overlapped" or len(made) != 1 or self.switch_to is not None \
                or steps >= self.modes.total_steps:
            return
        came = made[0]
        self._steps.append((steps, now))
        (steps0, then), serialized = self._steps[0], came.retimed_s.get("serialized", 0.0)
        if len(self._steps) <= self.rule.window_rounds or steps <= steps0:
            return
        measured = (now - then) / (steps - steps0)
        if measured <= serialized * (1.0 + self.rule.mode_margin):
            return
        here = self.modes.describe("overlapped")
        self._switch_mode(steps, updates, {"mode": "overlapped"}, {"mode": "serialized", "actors": 1},
                          came.retimed_s.get(here, 0.0), measured, {here: measured, "serialized": serialized},
                          f"{here} measured {1e3 * measured:.3f} ms an env step over {self.rule.window_rounds} rounds "
                          f"against the {1e3 * serialized:.3f} ms of the serialized mode it left at step "
                          f"{came.step:,} (more than {self.rule.mode_margin:.0%} slower): the switch was wrong",
                          "measured (the serialized figure: modelled from costs measured before the switch)")

    def _switch_mode(self, steps: int, updates: int, before: dict[str, Any], after: dict[str, Any], predicted: float,
                     measured: float, figures: dict[str, float], reason: str, source: str) -> None:
        """Record a mode correction and set :attr:`switch_to` (``after`` with the per-call costs in force)."""
        self.switch_to = {**after, "per_call_s": dict(self.reference)}
        change = f"mode {self.modes.describe(before['mode'])} -> {self.modes.describe(after['mode'])}"
        correction = Correction(step=steps, updates=updates, kernel=MODE, change=change, switched=True,
                                before=before, after=self.switch_to, predicted_s=predicted, measured_s=measured,
                                retimed_s=figures, ratio=predicted / measured if measured > 0 else 1.0,
                                reason=reason, source=source)
        self.corrections.append(correction)
        if self.say is not None:
            self.say(f"correction at step {steps}: {change}; {reason}")

    def _rebase(self, threaded_s: float | None) -> None:
        """The reference becomes what the window measured (the threaded kernel: ``threaded_s``); a new window."""
        for kernel, (calls, seconds) in self._deltas().items():
            if calls > 0:
                self.reference[kernel] = seconds / calls
        if threaded_s is not None:
            self.reference[self.threaded] = threaded_s
        self._window.clear()
        self._off_rounds, self._off_since = 0, None


def result_fields(monitor: Monitor | None, plan: Plan, env_steps: int) -> dict[str, Any]:
    """What a run's monitor adds to its RunResult: ``corrections`` and, after one, ``prediction_as_executed``
    (docs/runtime.md, "What is recorded")."""
    if monitor is None:
        return {"corrections": []}
    fields: dict[str, Any] = {"corrections": list(monitor.corrections)}
    prediction = plan.prediction
    # serialized plans only: there every watched second is on the critical path; in an overlapped one the learner's
    # extra seconds may hide behind the actors' work, which the model's max() would need to recompute
    if monitor.corrections and plan.serialized and prediction is not None and prediction.samples_per_s > 0:
        executed = {"samples_per_s": env_steps / (env_steps / prediction.samples_per_s + monitor.extra_s),
                    "extra_s": monitor.extra_s, "source": "modelled (costs re-timed in the run after a correction)"}
        if prediction.run is not None and prediction.run.seconds > 0:
            executed["run_samples_per_s"] = prediction.run.env_steps / (prediction.run.seconds + monitor.extra_s)
        fields["prediction_as_executed"] = executed
    return fields


def drift(plan: Plan, kernel_times: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """``result.json``'s ``drift`` of a run no monitor watched: each predicted kernel's measured seconds a call
    against the plan's (simulated kernels left out; empty without a prediction)."""
    prediction = plan.prediction
    if prediction is None:
        return {}
    out: dict[str, dict[str, float]] = {}
    for kernel, placement in plan.placements.items():
        cost = prediction.cost(kernel, placement.device, placement.variant)
        times = kernel_times.get(kernel)
        if cost is None or not times or not times.get("calls") or times.get("source") == "modelled":
            continue
        kind = _kind(kernel)
        at = cost.at(placement.replicas) if kind is not None and kind.threaded else cost
        predicted = at.latency_s - at.loop_s
        measured = times["total_s"] / times["calls"]
        out[kernel] = {"predicted_s": predicted, "measured_s": measured,
                       "ratio": measured / predicted if predicted > 0 else float("nan")}
    return out


def _kind(name: str) -> KernelKind | None:
    return next((k for k in KernelKind if str(k) == name), None)


def _threads_word(n: int) -> str:
    return f"{n} thread{'s' if n != 1 else ''}"


def _word(option: int | LearnerOption) -> str:
    """``2 threads``, or ``fused at 2 threads``: an option as ``Correction.retimed_s`` names it."""
    if isinstance(option, LearnerOption):
        return f"{option.variant} at {_threads_word(option.threads)}"
    return _threads_word(option)


def _threads_of(option: int | LearnerOption) -> int:
    return option.threads if isinstance(option, LearnerOption) else option


def _short(option: int | LearnerOption) -> str:
    """``2``, or ``fused at 2 threads``: an option in a correction's ``change``."""
    return _word(option) if isinstance(option, LearnerOption) else str(option)


def _setting(option: int | LearnerOption) -> dict[str, Any]:
    """A correction's ``before``/``after``: ``{"threads": n}``, with ``"variant"`` for a :class:`LearnerOption`."""
    if isinstance(option, LearnerOption):
        return {"variant": option.variant, "threads": option.threads}
    return {"threads": option}


def _option(setting: Mapping[str, Any]) -> int | LearnerOption:
    """The option a correction's ``after`` names (:func:`_setting`'s inverse)."""
    return LearnerOption(setting["variant"], setting["threads"]) if "variant" in setting else setting["threads"]


def _costed(plan: Plan, threaded: str) -> dict[str, dict[int, float]]:
    """The threaded kernel's predicted seconds a call by variant and thread count: the counts costed on this machine's
    cores (the planned one always); another variant only without a one-off setup (a compile would stall the run)."""
    placement = plan.placements[threaded]
    out: dict[str, dict[int, float]] = {}
    for variant, cost in plan.prediction.costs.get(threaded, {}).get(placement.device, {}).items():
        mine = variant == placement.variant
        if not mine and cost.setup_s > 0:
            continue
        costed = {1, *(t.threads for t in cost.threads), *([placement.replicas] if mine else [])}
        out[variant] = {n: cost.at(n).latency_s for n in costed
                        if n <= _usable_cores() or (mine and n == placement.replicas)}
    return out


def learner_options(planned: LearnerOption, costed: Mapping[str, Mapping[int, float]], disputed: float,
                    variants: bool) -> tuple[Any, ...]:
    """The threaded kernel's options from ``costed[variant][threads]``: the planned variant's counts; with
    ``variants`` and another variant within ``disputed`` x the planned seconds, :class:`LearnerOption` s.

        >>> learner_options(LearnerOption("reference", 1), {"reference": {1: 10e-3}, "fused": {1: 12e-3}}, 1.5, True)
        (LearnerOption(variant='reference', threads=1), LearnerOption(variant='fused', threads=1))
    """
    limit = disputed * costed[planned.variant][planned.threads]
    others = [LearnerOption(v, n) for v in sorted(costed) if variants and v != planned.variant
              for n, seconds in sorted(costed[v].items()) if seconds <= limit]
    mine = sorted(costed[planned.variant])
    return (*(LearnerOption(planned.variant, n) for n in mine), *others) if others else tuple(mine)


def _usable_cores() -> int:
    return len(usable_cpus())


def _progress(log: Any) -> Callable[[str], None]:
    """Says a line on a RunLog's progress stream (on a line of its own after a bar), unless progress is off."""
    def say(text: str) -> None:
        if log.mode != "off":
            log.stream.write(("\n" if log.mode == "bar" else "") + f"[{text}]\n")
            log.stream.flush()

    return say
