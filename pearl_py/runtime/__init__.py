"""Executors that run a plan: the serial reference executor (and, later, parallel backends)."""
from pearl_py.runtime.result import RunResult
from pearl_py.runtime.serial import SerialExecutor
from pearl_py.runtime.train import train

__all__ = ["RunResult", "SerialExecutor", "train"]
