"""Discrete-event simulation of a plan on any platform (docs/simulator.md).

Example::

    >>> from pearl_py.simulate import SimSchedule, simulate
    >>> result = simulate(problem, assignment, SimSchedule.from_config(algo.config, 50_000))
    >>> result.samples_per_s, result.bottleneck
"""
from pearl_py.protocol.schedule import SimSchedule
from pearl_py.simulate.result import SimResult
from pearl_py.simulate.simulator import simulate

__all__ = ["SimResult", "SimSchedule", "simulate"]
