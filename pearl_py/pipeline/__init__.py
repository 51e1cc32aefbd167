"""The pipeline driver: resolve a plan (calibrate, optimize, load or tune), run it, write the report.

It sits above the stage packages (protocol, estimate, optimize, runtime, report) and is the only
place that calls more than one of them. ``pearl.train`` is :func:`pearl_py.pipeline.train.train`.
"""
from pearl_py.pipeline.train import train
from pearl_py.pipeline.tune import TuneOptions

__all__ = ["TuneOptions", "train"]
