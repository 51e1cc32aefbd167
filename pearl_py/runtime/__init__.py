"""Executors that run a plan: the serial reference executor, the local parallel runtime, Ray.

The pipeline (:mod:`pearl_py.pipeline`) picks one for a plan; executors read the plan's
placements and never import the optimizer or the estimator.
"""
from pearl_py.runtime.result import RunResult
from pearl_py.runtime.serial import SerialExecutor

__all__ = ["RunResult", "SerialExecutor"]
