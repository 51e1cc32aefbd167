"""A simulated run that corrects itself: the run's monitor (:mod:`pearl_py.runtime.monitor`) on simulated time, and a
synthetic slowdown of a kernel's calls (docs/simulator.md, "A run that corrects itself, simulated").

A :class:`Slowdown` makes a kernel's calls at one thread count (of one variant, or any) take ``factor`` times their
cost from a given call on. :class:`SimAdapt` sits in the simulated pipeline: it counts every call for the monitor,
times the threaded kernel's calls on the engine's clock, and a switch of thread count or variant changes the cost
and the units its next calls hold (:func:`~pearl_py.optimize.model.call_cost` at the new option).

Example::

    >>> result = simulate(problem, assignment, schedule, adapt=AdaptOptions(),
    ...                   slowdown=Slowdown(LEARNER_UPDATE, threads=2, factor=3.0, after_calls=100))
    >>> result.corrections[0].change
    'learner threads 2 -> 1'
"""
from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pearl_py.optimize.model import Choice, call_cost
from pearl_py.protocol.kernel import LEARNER_UPDATE
from pearl_py.protocol.schedule import DEFAULT_POLICY_LAG
from pearl_py.runtime.monitor import AdaptOptions, Correction, LearnerOption, ModeModel, Monitor, learner_options
from pearl_py.simulate.topology import Cost

if TYPE_CHECKING:
    from pearl_py.simulate.pipeline import Pipeline


@dataclass(frozen=True)
class Slowdown:
    """From call ``after_calls + 1`` of ``kernel`` on, its calls at ``threads`` threads (as ``variant``; None: any)
    take ``factor`` x their cost."""

    kernel: str
    threads: int
    factor: float
    after_calls: int
    variant: str | None = None


class SimAdapt:
    """The monitor in a simulated pipeline (``rule`` None: none, the plan as given); also the setting it moves
    (``n``: a thread count, or a :class:`LearnerOption` where a variant is disputed; :meth:`set`)."""

    def __init__(self, pipeline: Pipeline, rule: AdaptOptions | None, slowdown: Slowdown | None = None) -> None:
        self.pipeline, self.slowdown = pipeline, slowdown
        topo = pipeline.topo
        self.calls: dict[str, int] = defaultdict(int)
        self.seconds: dict[str, float] = defaultdict(float)
        self.evented: frozenset[str] = frozenset()
        """What the monitor reads as a KernelTimer's: every simulated call is counted on the engine's clock."""
        choice = topo.assignment[LEARNER_UPDATE]
        self.variant = choice.variant
        problem = topo.problem
        costed = {v: {n: call_cost(problem, LEARNER_UPDATE, Choice(d, v, n))[0]
                      for n in problem.replica_choices(LEARNER_UPDATE, d, v)}
                  for d, v in problem.candidates(LEARNER_UPDATE) if d == choice.device
                  and (v == choice.variant or problem.option(LEARNER_UPDATE, d, v).setup_s == 0)}  # as the run's
        options = learner_options(LearnerOption(choice.variant, topo.threads[LEARNER_UPDATE]), costed,
                                  (rule or AdaptOptions()).disputed, variants=True)
        self.n = options[0] if isinstance(options[0], LearnerOption) else topo.threads[LEARNER_UPDATE]
        self.overlapped = False
        """Whether the monitor moved the run to the overlapped mode."""
        self.monitor = None if rule is None else Monitor(
            {k: c.latency_s for k, c in topo.costs.items()}, LEARNER_UPDATE, options, self,
            dataclasses.replace(rule, clock=lambda: pipeline.engine.now), modes=self._modes(rule))

    def _modes(self, rule: AdaptOptions) -> ModeModel | None:
        """A simulation in the serial order (``max_policy_lag`` 0, every kernel on one device) weighs going on
        overlapped as a run does (:class:`~pearl_py.runtime.monitor.ModeModel`, the topology's actors; the problem's
        process start, else the rule's); None otherwise."""
        p = self.pipeline
        problem, devices = p.topo.problem, {c.device for c in p.topo.assignment.values()}
        if p.schedule.max_policy_lag != 0 or p.limiter is None or len(devices) != 1:
            return None
        kernels = p.topo.assignment
        return ModeModel("serialized", {k: problem.task(k).rate for k in kernels},
                         frozenset(k for k in kernels if problem.task(k).replicable), p.topo.actors,
                         problem.devices[devices.pop()].units, problem.process_start_s or rule.process_start_s,
                         p.schedule.total_steps)

    def set(self, n: int | LearnerOption) -> None:
        """The learner's calls from now on run option ``n`` (a thread count, or a variant at one): their cost and the
        units they hold."""
        topo = self.pipeline.topo
        variant, threads = (n.variant, n.threads) if isinstance(n, LearnerOption) else (self.variant, n)
        cost = topo.costs[LEARNER_UPDATE]
        topo.costs[LEARNER_UPDATE] = Cost(*call_cost(topo.problem, LEARNER_UPDATE,
                                                     Choice(topo.assignment[LEARNER_UPDATE].device, variant, threads)),
                                          cost.source)
        topo.threads[LEARNER_UPDATE] = threads
        self.variant, self.n = variant, n

    def before(self, kernel: str) -> None:
        if kernel == LEARNER_UPDATE and self.monitor is not None:
            self.monitor.before_call()

    def latency(self, kernel: str, seconds: float) -> float:
        """The seconds this call takes (``seconds``, or slowed down), counted for the monitor."""
        s = self.slowdown
        if s is not None and kernel == s.kernel and self.pipeline.topo.threads[kernel] == s.threads \
                and s.variant in (None, self.variant) and self.calls[kernel] >= s.after_calls:
            seconds *= s.factor
        self.calls[kernel] += 1
        self.seconds[kernel] += seconds
        if kernel == LEARNER_UPDATE and self.monitor is not None:
            self.monitor.after_call(seconds)
        return seconds

    def round_ended(self) -> None:
        p = self.pipeline
        if self.monitor is not None:
            self.monitor.round_ended(p.inserted * p.schedule.n_envs, p.updates_done, self)
            if self.monitor.switch_to is not None and not self.overlapped:
                # the run goes on overlapped: once its actors have started, they run ahead as the parallel runtime's
                self.overlapped = True
                schedule = dataclasses.replace(p.limiter.schedule, max_policy_lag=DEFAULT_POLICY_LAG)
                p.engine.schedule(self.monitor.modes.start_s, lambda: p.limiter.lift(schedule))

    @property
    def corrections(self) -> list[Correction]:
        return list(self.monitor.corrections) if self.monitor is not None else []
