"""RunResult: what a training run measured, and its ``result.json``.

Example::

    >>> result = pearl.train(algo, total_steps=2000, seed=0)
    >>> result.eval_return_mean, result.samples_per_second
    (23.4, 1510.2)
    >>> result.save(Path("runs/x/result.json"))   # atomic
    >>> result.to_dict()["source"], result.to_dict()["modelled"]   # a plan with the replay on a simulated FPGA
    ('mixed', ['kernel_times.replay_sample: modelled (simulated FPGA)'])
    >>> rate_label(result.kernel_times)
    'measured, replay_sample emulated on the CPU for a simulated device'
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pearl_py.fileio import atomic_write_json
from pearl_py.runtime.monitor import Correction


def emulated(kernel_times: dict[str, dict[str, Any]]) -> list[str]:
    """Kernels that ran on the host CPU standing in for a simulated device (their time is charged as modelled)."""
    return sorted(k for k, t in kernel_times.items() if t.get("source") == "modelled")


def rate_label(kernel_times: dict[str, dict[str, Any]]) -> str:
    """How a run's samples/s was obtained: measured, and with which kernels emulated on the CPU (the rate is then
    the emulation's, not the simulated device's)."""
    stand_ins = emulated(kernel_times)
    if not stand_ins:
        return "measured"
    return f"measured, {', '.join(stand_ins)} emulated on the CPU for a simulated device"


@dataclass
class RunResult:
    """Figures of one run, measured on this machine (``kernel_times`` in seconds) except what says ``modelled``:
    a kernel on a simulated device (``kernel_times[k]["source"]``), a device without an energy counter."""

    algorithm: str
    env: str
    seed: int
    env_steps: int
    gradient_steps: int
    wall_seconds: float
    """Training time: from the first env step to the last update (evaluation excluded)."""
    eval_returns: list[float]
    plan: dict[str, Any]
    kernel_times: dict[str, dict[str, float]] = field(default_factory=dict)
    episodes: int = 0
    eval_history: list[dict[str, float]] = field(default_factory=list)
    backend: str = "serial"
    policy_lag: dict[str, int | None] = field(default_factory=lambda: {"bound": 0, "max_observed": 0})
    """Updates the acting parameters trailed the serial order: the limiter's ``bound`` (None:
    unbounded) and the largest lag an actor noted (``max_observed``); 0 and 0 in the serial executor."""
    layout: dict[str, Any] = field(default_factory=dict)
    """How the parallel runtime laid the run out (actors, where inference and replay ran); empty elsewhere."""
    executed_on: dict[str, str] = field(default_factory=dict)
    """The torch device each kernel executed on, read from what the run built (the learner's parameters, the replay,
    inference's networks; ``cpu`` for a simulated device's kernels): compare with the plan's (benchmarks/gpu_smoke.py)."""
    energy: dict[str, Any] = field(default_factory=dict)
    """Joules per device over the run, each ``measured`` (RAPL, NVML) or ``modelled`` with the reason
    (:mod:`pearl_py.runtime.run_energy`); empty for a run not metered."""
    admission: dict[str, Any] = field(default_factory=dict)
    """What admission found before the run (:mod:`pearl_py.pipeline.admission`): processes, busy cores against
    usable ones, whether it ran oversubscribed, memory needed against available (modelled, per-process memory
    measured); empty where the pipeline did not admit the run (an executor called directly, Ray)."""
    corrections: list[Correction] = field(default_factory=list)
    """What the run's monitor decided when the plan did not hold (:mod:`pearl_py.runtime.monitor`), in order; empty
    when it held, with ``adapt=False`` (``--no-adapt``) or where no monitor runs."""
    prediction_as_executed: dict[str, Any] | None = None
    """After a correction: the plan's predicted samples/s recomputed for the run as executed
    (:func:`pearl_py.runtime.monitor.result_fields`, modelled); None when the run ran its plan as planned."""
    startup_seconds: float | None = None
    """Start-up of this session, not in ``wall_seconds``: from the executor's ``run`` to the first env step of
    training (child processes spawned and ready, envs built, kernels warmed up; the Ray backend's from its
    cluster joined); None where the run never started training."""
    drift: dict[str, dict[str, float]] = field(default_factory=dict)
    """Where no monitor could switch anything (the Ray backend): each predicted kernel's measured seconds a call
    against the plan's (``predicted_s`` modelled, ``measured_s``, ``ratio``; :func:`pearl_py.runtime.monitor.drift`);
    empty elsewhere."""

    @property
    def eval_return_mean(self) -> float:
        return float(np.mean(self.eval_returns)) if self.eval_returns else float("nan")

    @property
    def eval_return_std(self) -> float:
        return float(np.std(self.eval_returns)) if self.eval_returns else float("nan")

    @property
    def samples_per_second(self) -> float:
        return self.env_steps / self.wall_seconds if self.wall_seconds > 0 else 0.0

    @property
    def run_samples_per_second(self) -> float | None:
        """Env steps over start-up plus training (what the model's whole-run figure predicts); None without a
        measured start-up."""
        if self.startup_seconds is None:
            return None
        seconds = self.startup_seconds + self.wall_seconds
        return self.env_steps / seconds if seconds > 0 else 0.0

    @property
    def best_eval(self) -> dict[str, float] | None:
        """The periodic evaluation (``eval_freq``) with the highest mean return, if any ran."""
        return max(self.eval_history, key=lambda e: e["return_mean"], default=None)

    def modelled(self) -> list[str]:
        """Every figure of the result that is modelled, not measured, with why (``kernel_times.<kernel>: label``,
        ``energy.<device>: reason``)."""
        kernels = [f"kernel_times.{k}: {self.kernel_times[k].get('label', 'modelled')}"
                   for k in emulated(self.kernel_times)]
        devices = (self.energy.get("devices") or {}).items()
        return kernels + [f"energy.{d}: modelled ({e.get('reason', '')})" for d, e in devices
                          if e.get("source") == "modelled"]

    def to_dict(self) -> dict[str, Any]:
        """The result's figures; ``source``: ``measured`` where every figure is, else ``mixed`` with the modelled
        ones listed (``modelled``); ``samples_per_second_label`` says how the rate was obtained (:func:`rate_label`)."""
        data = asdict(self)
        best = self.best_eval
        modelled = self.modelled()
        data.update(eval_return_mean=self.eval_return_mean, eval_return_std=self.eval_return_std,
                    samples_per_second=self.samples_per_second, run_samples_per_second=self.run_samples_per_second,
                    samples_per_second_label=rate_label(self.kernel_times),
                    best_eval_return_mean=best["return_mean"] if best else None,
                    best_eval_step=best["step"] if best else None, source="mixed" if modelled else "measured",
                    modelled=modelled)
        return data

    def save(self, path: Path) -> None:
        atomic_write_json(path, self.to_dict())
