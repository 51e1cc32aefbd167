"""``simulate``: play a plan on its platform as a discrete-event simulation and measure it.

Resources are the physical devices (their parallel units) and the directed links; processes are the actors, the
replay and the learner (:mod:`pearl_py.simulate.processes`; what is measured: docs/simulator.md).

Example::

    >>> problem = build_problem(algo.protocol(), Platform.load("pearl-cpu-gpu-fpga"), Estimator())
    >>> result = simulate(problem, assignment, SimSchedule.from_config(algo.config, 20_000))
    >>> round(result.samples_per_s), result.bottleneck
    (38421, 'fpga')
"""
from __future__ import annotations

from pearl_py.optimize.model import Assignment
from pearl_py.optimize.problem import AssignmentProblem
from pearl_py.protocol.kernel import LEARNER_UPDATE, REPLAY_SAMPLE
from pearl_py.protocol.schedule import RolloutSchedule, SimSchedule
from pearl_py.runtime.monitor import AdaptOptions
from pearl_py.simulate import processes
from pearl_py.simulate.adapt import SimAdapt, Slowdown
from pearl_py.simulate.engine import Engine, Recorder
from pearl_py.simulate.on_policy import simulate_synchronous
from pearl_py.simulate.pipeline import Pipeline
from pearl_py.simulate.result import SimResult, measure
from pearl_py.simulate.topology import Topology

TRACE_ROUNDS = 2
"""Rounds of steady state the timeline (Gantt) shows."""


def simulate(problem: AssignmentProblem, assignment: Assignment, schedule: SimSchedule | RolloutSchedule, *,
             trace: bool = True, adapt: AdaptOptions | None = None, slowdown: Slowdown | None = None) -> SimResult:
    """Simulate ``schedule.total_steps`` transitions of ``assignment`` (a plan's choices) on ``problem``; a
    synchronous (on-policy) protocol's :class:`RolloutSchedule` plays :mod:`pearl_py.simulate.on_policy`.
    ``adapt``: an off-policy run's monitor corrects the learner's threads as a run's does, on the synthetic
    ``slowdown`` (:mod:`pearl_py.simulate.adapt`); its decisions are ``result.corrections``."""
    if isinstance(schedule, RolloutSchedule):
        return simulate_synchronous(problem, assignment, schedule, trace=trace)
    topo = Topology(problem, assignment)
    engine = Engine()
    rounds = schedule.total_updates // schedule.gradient_steps if schedule.gradient_steps else 0
    first = max(rounds // 2, 1)
    recorder = Recorder(open=rounds == 0) if trace else None
    pipe = Pipeline(engine, topo, schedule, recorder, trace_rounds=(first, first + TRACE_ROUNDS))
    if adapt is not None or slowdown is not None:
        pipe.adapt = SimAdapt(pipe, adapt, slowdown)
    for i in range(topo.actors):
        engine.process(processes.actor(pipe, i))
    if topo.device(REPLAY_SAMPLE) == topo.device(LEARNER_UPDATE):
        engine.process(processes.learner_with_replay(pipe))
    else:
        engine.process(processes.replay_server(pipe))
        engine.process(processes.learner(pipe))
    engine.run()
    if pipe.inserted < schedule.vector_steps or pipe.updates_done < schedule.total_updates:
        raise RuntimeError(f"simulation stalled: {pipe.inserted} of {schedule.vector_steps} vector steps, "
                           f"{pipe.updates_done} of {schedule.total_updates} updates")
    result = measure(pipe)
    result.corrections = pipe.adapt.corrections if pipe.adapt is not None else []
    return result
