"""The synchronous (on-policy) protocol as a discrete-event simulation: collect a rollout, then learn on it.

The actors and the learner play the parallel runtime's schedule (:class:`~pearl_py.protocol.schedule.RolloutSchedule`;
what each does: docs/simulator.md, "On-policy plans"). Every call costs its plan's option (a split kernel's share:
:func:`pearl_py.optimize.model.call_cost`); throughput is measured over the rollouts after the first third.

Example::

    >>> result = simulate_synchronous(problem, assignment, RolloutSchedule(32, 8, total_steps=40 * 256, epochs=20))
    >>> round(result.samples_per_s), result.bottleneck
"""
from __future__ import annotations

from dataclasses import dataclass

from pearl_py.optimize.model import Assignment
from pearl_py.optimize.problem import AssignmentProblem
from pearl_py.protocol.kernel import (
    ADVANTAGE,
    ENV_STEP,
    INFERENCE,
    LEARNER_UPDATE,
    PARAM_SYNC,
    ROLLOUT_INSERT,
)
from pearl_py.protocol.schedule import RolloutSchedule
from pearl_py.simulate.engine import Engine, Event, Process, Recorder
from pearl_py.simulate.pipeline import Pipeline
from pearl_py.simulate.result import SimResult, measure
from pearl_py.simulate.topology import Topology

REQUIRED = (ENV_STEP, INFERENCE, ROLLOUT_INSERT, ADVANTAGE, LEARNER_UPDATE)
TRACE_ROUNDS = 2
"""Rollouts of steady state the timeline (Gantt) shows."""


@dataclass(frozen=True)
class SyncSimSchedule:
    """A rollout schedule as the simulation's measurement reads it (a round is a rollout)."""

    rollouts: RolloutSchedule

    @property
    def n_envs(self) -> int:
        return self.rollouts.n_envs

    @property
    def vector_steps(self) -> int:
        return self.rollouts.vector_steps

    @property
    def round_transitions(self) -> int:
        return self.rollouts.rollout_size

    def to_dict(self) -> dict[str, int]:
        s = self.rollouts
        return {"n_steps": s.n_steps, "n_envs": s.n_envs, "total_steps": s.total_steps, "epochs": s.epochs,
                "minibatches": s.minibatches, "rollouts": s.rollouts}


class SyncPipeline(Pipeline):
    """The shared state of a synchronous simulation: resources and transfers (the base's), rollout events."""

    def __init__(self, engine: Engine, topology: Topology, schedule: RolloutSchedule,
                 recorder: Recorder | None = None, trace_rounds: tuple[int, int] = (0, 0)) -> None:
        super().__init__(engine, topology, SyncSimSchedule(schedule), recorder, trace_rounds, rate_limited=False)
        self.rollout_schedule = schedule
        self.allowed = [Event(engine) for _ in range(schedule.rollouts)]
        """Fired when the learner allows rollout ``r`` (the parameters learnt on ``r - 1`` are out)."""
        self.collected = [Event(engine) for _ in range(schedule.rollouts)]
        self._reported = [0] * schedule.rollouts
        self.batches = InferenceBatches(self)

    def report(self, r: int) -> None:
        """One actor has collected its share of rollout ``r``; the last one fires ``collected[r]``."""
        self._reported[r] += 1
        if self._reported[r] == self.topo.actors:
            self.inserted += self.rollout_schedule.n_steps
            self.collected[r].fire()


class InferenceBatches:
    """Inference replica ``m`` serves actors ``i`` with ``i mod replicas == m``: one call per vector step once
    all of them sent their observations (one actor each when inference sits with the envs)."""

    def __init__(self, p: SyncPipeline) -> None:
        self.p = p
        self.replicas = max(p.topo.assignment[INFERENCE].replicas, 1)
        self.members = p.topo.members(INFERENCE)
        self.colocated = p.topo.assignment[INFERENCE].device == p.topo.assignment[ENV_STEP].device
        self.group = [sum(1 for i in range(p.topo.actors) if i % self.replicas == m) for m in range(self.replicas)]
        self._open: dict[int, list] = {}

    def device(self, actor: int) -> str:
        return self.p.topo.actor_devices(actor)[1]

    def request(self, actor: int) -> Event:
        """The event firing when the call that includes ``actor``'s observations is done."""
        if self.colocated:
            return self.p.call(INFERENCE, self.device(actor))
        m = actor % self.replicas
        state = self._open.setdefault(m, [Event(self.p.engine), 0])
        state[1] += 1
        if state[1] == self.group[m]:
            del self._open[m]
            self.p.call(INFERENCE, self.members[m % len(self.members)]).on_fire(state[0].fire)
        return state[0]


def actor(p: SyncPipeline, index: int) -> Process:
    env_dev, inf_dev = p.topo.actor_devices(index)
    inserts = p.topo.members(ROLLOUT_INSERT)
    insert_dev = inserts[index % len(inserts)]
    parts = {(a, b): _parts(p, a, b) for a, b in ((ENV_STEP, INFERENCE), (INFERENCE, ENV_STEP),
                                                  (ENV_STEP, ROLLOUT_INSERT))}
    for r in range(p.rollout_schedule.rollouts):
        yield p.allowed[r]
        for _ in range(p.rollout_schedule.n_steps):
            yield from p.transfer(env_dev, inf_dev, ENV_STEP, INFERENCE, parts[ENV_STEP, INFERENCE])
            yield p.batches.request(index)
            yield from p.transfer(inf_dev, env_dev, INFERENCE, ENV_STEP, parts[INFERENCE, ENV_STEP])
            yield p.call(ENV_STEP, env_dev)
            yield from p.transfer(env_dev, insert_dev, ENV_STEP, ROLLOUT_INSERT, parts[ENV_STEP, ROLLOUT_INSERT])
            yield p.call(ROLLOUT_INSERT, insert_dev)
        yield p.batches.request(index)            # V of the last observations
        p.report(r)


def learner(p: SyncPipeline) -> Process:
    topo, s = p.topo, p.rollout_schedule
    dev = topo.device(LEARNER_UPDATE)
    for r in range(s.rollouts):
        p.allowed[r].fire()
        yield p.collected[r]
        yield from _transfers(p, ROLLOUT_INSERT, ADVANTAGE)
        yield p.call(ADVANTAGE, topo.device(ADVANTAGE))
        yield from _transfers(p, ADVANTAGE, LEARNER_UPDATE)
        yield from _transfers(p, ROLLOUT_INSERT, LEARNER_UPDATE)
        for _ in range(s.updates_per_rollout):
            yield p.call(LEARNER_UPDATE, dev)
            p.updates_done += 1
        if topo.has(PARAM_SYNC):
            yield from _transfers(p, LEARNER_UPDATE, PARAM_SYNC)
            sync_dev = topo.device(PARAM_SYNC)
            yield p.call(PARAM_SYNC, sync_dev)
            members = topo.members(INFERENCE)
            for replica in range(topo.assignment[INFERENCE].replicas):   # every replica receives the whole
                yield from p.transfer(sync_dev, members[replica % len(members)], PARAM_SYNC, INFERENCE)
        p.mark_round()
    p.end_s = p.engine.now


def _parts(p: SyncPipeline, src: str, dst: str) -> int:
    """Shares a split source sends an edge's data in: the most replicas of a split end (model.placed_edge_cost)."""
    problem, assignment = p.topo.problem, p.topo.assignment
    if not problem.split(src):
        return 1
    return max(assignment[k].replicas if problem.split(k) else 1 for k in (src, dst))


def _transfers(p: SyncPipeline, src: str, dst: str) -> Process:
    """The ``src -> dst`` edge's transfers of one rollout (its source's calls per rollout), one after another."""
    parts = _parts(p, src, dst)
    calls = round(p.topo.problem.task(src).rate * p.rollout_schedule.rollout_size) * parts
    for _ in range(calls):
        yield from p.transfer(p.topo.device(src), p.topo.device(dst), src, dst, parts)


def simulate_synchronous(problem: AssignmentProblem, assignment: Assignment, schedule: RolloutSchedule, *,
                         trace: bool = True) -> SimResult:
    """Simulate ``schedule``'s rollouts of ``assignment`` (a synchronous plan's choices) on ``problem``."""
    topo = Topology(problem, assignment, required=REQUIRED)
    engine = Engine()
    first = max(schedule.rollouts // 2, 1)
    recorder = Recorder() if trace else None
    pipe = SyncPipeline(engine, topo, schedule, recorder, trace_rounds=(first, first + TRACE_ROUNDS))
    for i in range(topo.actors):
        engine.process(actor(pipe, i))
    engine.process(learner(pipe))
    engine.run()
    if pipe.updates_done < schedule.total_updates:
        raise RuntimeError(f"simulation stalled: {pipe.updates_done} of {schedule.total_updates} updates")
    return measure(pipe)
