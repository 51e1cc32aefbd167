"""Simulate a plan with the per-kernel latencies a run measured (``source: measured``).

Every kernel's option becomes its measured mean per call on the device the plan gave it;
transfers between the local processes happen inside the timed kernels (shared memory),
so the problem has no links. Parameter publications are charged per publication of the
run (``sync_every`` updates apart), on the learner's device.

Example::

    >>> result = ParallelExecutor(algo, plan, seed=0, sync_every=4).run(20_000)
    >>> sim = simulate_measured(algo, plan, result, units=os.cpu_count(), sync_every=4)
    >>> sim.run_samples_per_s / result.samples_per_second
    0.97
"""
from __future__ import annotations

from typing import Any

from pearl_py.optimize.model import Choice
from pearl_py.optimize.problem import AssignmentProblem, Device, Option, Task
from pearl_py.plan import Plan
from pearl_py.protocol.kernel import ENV_STEP, PARAM_SYNC
from pearl_py.protocol.schedule import SimSchedule
from pearl_py.simulate.result import SimResult
from pearl_py.simulate.simulator import simulate


def measured_problem(algorithm: Any, plan: Plan, kernel_times: dict[str, dict[str, float]], units: int,
                     publications: int) -> AssignmentProblem:
    """The plan's kernels on devices of ``units`` cores each, costing what the run measured per call."""
    protocol = algorithm.protocol()
    devices = {p.device: Device(p.device, "cpu", units=units, idle_w=0.0, peak_w=0.0)
               for p in plan.placements.values()}
    options = {}
    for kernel in protocol.kernels():
        timing = kernel_times.get(kernel.name)
        if timing is None:
            continue
        per_call = timing["total_s"] / max(publications, 1) if kernel.name == PARAM_SYNC else timing["mean_s"]
        if kernel.name == ENV_STEP and "actor_handoff" in kernel_times:
            per_call += kernel_times["actor_handoff"]["mean_s"]  # the actor loop's untimed remainder
        place = plan.placements[kernel.name]
        # a multi-threaded kernel (the learner update) was measured at its thread count: that call at every count
        threads = () if kernel.replicable else ((per_call, 0.0),) * (place.replicas - 1)
        options[(kernel.name, place.device, place.variant)] = Option(per_call, source="measured", threads=threads)
    tasks = tuple(Task(k.name, k.rate, k.replicable) for k in protocol.kernels() if k.name in kernel_times)
    return AssignmentProblem(tasks, devices, options, name="measured")


def simulate_measured(algorithm: Any, plan: Plan, run: Any, units: int, sync_every: int) -> SimResult:
    """Simulate ``run`` (a :class:`RunResult`) of ``plan`` with its own measured kernel latencies."""
    cfg = algorithm.config
    publications = run.gradient_steps // sync_every
    problem = measured_problem(algorithm, plan, run.kernel_times, units, publications)
    assignment = {t.name: Choice(plan.placements[t.name].device, plan.placements[t.name].variant,
                                 plan.placements[t.name].replicas) for t in problem.tasks}
    schedule = SimSchedule.from_config(cfg, run.env_steps, sync_every=sync_every)
    return simulate(problem, assignment, schedule, trace=False)
