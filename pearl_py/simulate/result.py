"""SimResult: what a simulation measured (every figure ``simulated``).

Steady state runs from the end of the round a third of the way through the run to the end of the last round;
utilization is busy unit-seconds over ``span x units used`` (the most units a device ever ran at once, as the
performance model counts a replica's core). The timeline keeps the busiest rows of a two-round window.

Example::

    >>> result.samples_per_s, result.bottleneck, result.utilization["gpu"]
    (5480.2, 'gpu', 0.998)
    >>> result.summary().source
    'simulated'
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pearl_py.plan import Simulation
from pearl_py.runtime.monitor import Correction
from pearl_py.simulate.pipeline import Pipeline

TIMELINE_ROWS = 16
TIMELINE_SEGMENTS = 1500


@dataclass
class SimResult:
    """Simulated throughput, utilization, energy and a timeline of one plan."""

    samples_per_s: float
    """Steady-state transitions per second."""
    run_samples_per_s: float
    """Transitions of the whole run over its simulated time (start-up and the last round included)."""
    elapsed_s: float
    env_steps: int
    updates: int
    utilization: dict[str, float]
    links: list[str]
    bottleneck: str
    energy_j: float
    idle_w: float
    schedule: dict[str, int]
    timeline: list[tuple[str, float, float, str]] = field(default_factory=list)
    """``(row, start s, end s, kernel or edge)`` of the traced window."""
    corrections: list[Correction] = field(default_factory=list)
    """The monitor's decisions in a simulation run with ``adapt`` (:mod:`pearl_py.simulate.adapt`)."""

    @property
    def energy_per_sample_j(self) -> float:
        return self.energy_j / self.env_steps if self.env_steps else 0.0

    @property
    def samples_per_j(self) -> float:
        return self.env_steps / self.energy_j if self.energy_j > 0 else 0.0

    @property
    def power_w(self) -> float:
        return self.energy_j / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def summary(self) -> Simulation:
        """What a plan's prediction keeps of it (every figure ``simulated``)."""
        return Simulation(samples_per_s=self.samples_per_s, run_samples_per_s=self.run_samples_per_s,
                          elapsed_s=self.elapsed_s, env_steps=self.env_steps, updates=self.updates,
                          utilization=dict(self.utilization), bottleneck=self.bottleneck,
                          energy_per_sample_j=self.energy_per_sample_j, samples_per_j=self.samples_per_j,
                          power_w=self.power_w, timeline=tuple(tuple(seg) for seg in self.timeline))


def _window(pipe: Pipeline) -> tuple[float, float, dict[str, float], dict[str, float], int]:
    """``(t0, t1, busy at t0, busy at t1, transitions in between)`` of the steady state."""
    marks, s = pipe.round_marks, pipe.schedule
    final = {n: r.busy_s for n, r in pipe.resources.items()}
    if len(marks) >= 3:
        k = len(marks) // 3
        (t0, b0), (t1, b1) = marks[k], marks[-1]
        return t0, t1, b0, b1, (len(marks) - 1 - k) * s.round_transitions
    return 0.0, pipe.end_s, {}, final, s.vector_steps * s.n_envs


def _timeline(pipe: Pipeline) -> list[tuple[str, float, float, str]]:
    if pipe.recorder is None or not pipe.recorder.segments:
        return []
    rows: dict[str, float] = {}
    named = []
    for resource, unit, start, end, label in pipe.recorder.segments:
        row = resource if pipe.resources[resource].units == 1 else f"{resource} #{unit}"
        rows[row] = rows.get(row, 0.0) + end - start
        named.append((row, start, end, label))
    keep = set(sorted(rows, key=lambda r: -rows[r])[:TIMELINE_ROWS])
    return [seg for seg in named if seg[0] in keep][:TIMELINE_SEGMENTS]


def measure(pipe: Pipeline) -> SimResult:
    """Read the figures off a finished pipeline."""
    s = pipe.schedule
    t0, t1, b0, b1, samples = _window(pipe)
    span = max(t1 - t0, 1e-30)
    utilization = {name: (b1.get(name, 0.0) - b0.get(name, 0.0)) / (span * max(pipe.resources[name].peak, 1))
                   for name in b1}
    utilization = dict(sorted(utilization.items(), key=lambda kv: -kv[1]))
    used = [n for n, r in pipe.resources.items() if n not in pipe.link_names and r.calls]
    idle_w = sum(pipe.topo.idle_w(n) for n in used)
    env_steps = s.vector_steps * s.n_envs
    return SimResult(samples_per_s=samples / span, run_samples_per_s=env_steps / max(pipe.end_s, 1e-30),
                     elapsed_s=pipe.end_s, env_steps=env_steps, updates=pipe.updates_done,
                     utilization=utilization, links=sorted(pipe.link_names),
                     bottleneck=next(iter(utilization), "none"), energy_j=idle_w * pipe.end_s + pipe.dynamic_j,
                     idle_w=idle_w, schedule=s.to_dict(), timeline=_timeline(pipe))
