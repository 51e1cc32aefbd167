"""Calibrate this machine's CUDA GPUs as ``pearl profile`` calibrates its CPU: same grids, synchronized timing.

Every kernel kind that runs on a GPU is timed there over the CPU's grid with a clock that synchronizes the device
first; models are keyed by the GPU's local name (``gpu0:learner_update/cuda_graph``), and GPUs of a model already
calibrated share its models (``meta["gpus"]["gpu1"]["models"] == "gpu0"``). docs/cost-models.md §2, "A local
GPU, calibrated".

Example::

    >>> cal = profile(quick=True)                  # pearl_py.profile.profiler: CPU, then every local GPU
    >>> cal.meta["gpus"]
    {'gpu0': {'name': 'NVIDIA H100 PCIe', 'models': 'gpu0'}}
    >>> cal.model("learner_update", "cuda_graph", device="gpu0").form
    'linear'
"""
from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch

from pearl_py.estimate.calibration import Calibration, model_key
from pearl_py.platform.runtimes import CUDA
from pearl_py.profile.microbench import OFF_POLICY, variants
from pearl_py.protocol.kernel import ENV_STEP

GPU_KINDS_SKIPPED = (ENV_STEP,)
"""Kernel kinds that never run on a GPU (gymnasium environments run on CPUs)."""


@dataclass(frozen=True)
class LocalGpu:
    """A CUDA device of this machine: its local platform name (``gpu0``), torch device and torch's name for it."""

    name: str
    device: torch.device
    model: str


def synchronized_clock(device: torch.device, synchronize: Callable[[torch.device], None] | None = None,
                       ) -> Callable[[], float]:
    """A clock that first waits for every kernel queued on ``device`` (``torch.cuda.synchronize``)."""
    wait = synchronize if synchronize is not None else torch.cuda.synchronize

    def clock() -> float:
        wait(device)
        return time.perf_counter()

    return clock


def profile_gpus(calibration: Calibration, quick: bool, kinds: Sequence[str], log: Callable[[str], None],
                 power: Any, gpus: Sequence[LocalGpu] | None = None,
                 synchronize: Callable[[torch.device], None] | None = None,
                 grid: Mapping[str, Any] | None = None, skip: Mapping[str, str] | None = None) -> None:
    """Add every local GPU's models to ``calibration`` (``gpus``: default this machine's CUDA devices; ``synchronize``:
    default ``torch.cuda.synchronize``; tests pass the CPU device and a recording fake). ``grid``: the
    ``envs``, ``networks`` and ``max_envs`` of :func:`~pearl_py.profile.profiler.calibration_grid` (default: every
    env, network and vector size); ``skip``:
    ``kind/variant`` keys left for later on the GPUs too, as :func:`~pearl_py.profile.profiler.profile`'s."""
    from pearl_py.profile.profiler import (
        calibration_grid,
        fit_measurements,
        measure,
        setup_entry,
        variant_available,
    )

    gpus = list(gpus) if gpus is not None else [
        LocalGpu(f"gpu{i}", CUDA.torch_device(f"gpu{i}"), torch.cuda.get_device_properties(i).name)
        for i in range(CUDA.device_count())]
    calibrated: dict[str, str] = {}
    meta = calibration.meta.setdefault("gpus", {})
    for gpu in gpus:
        if gpu.model in calibrated:
            meta[gpu.name] = {"name": gpu.model, "models": calibrated[gpu.model]}
            log(f"{gpu.name} ({gpu.model}): same model as {calibrated[gpu.model]}, its models serve")
            continue
        log(f"calibrating {gpu.name} ({gpu.model}), synchronized timing ...")
        clock = synchronized_clock(gpu.device, synchronize)
        for kind in kinds:
            if kind in GPU_KINDS_SKIPPED:
                continue
            for variant in variants(kind, OFF_POLICY):
                ok, reason = variant_available(kind, variant, "gpu", family=OFF_POLICY)
                key = model_key(kind, variant, device=gpu.name)
                if skip and model_key(kind, variant) in skip:
                    log(f"{key:<40} deferred: {skip[model_key(kind, variant)]}")
                    continue
                if not ok:
                    log(f"{key:<40} skipped: {reason}")
                    continue
                points = [replace(p, device=str(gpu.device))
                          for p in calibration_grid(kind, quick, variant, family=OFF_POLICY, **(grid or {}))]
                if not points:
                    continue
                t0 = time.perf_counter()
                setup: list = []
                measured = measure(kind, variant, points, setup=setup, clock=clock, family=OFF_POLICY,
                                   window=lambda k=kind, v=variant, g=gpu.name: power.window(g, model_key(k, v)))
                if setup:   # every GPU setup counts as cold
                    calibration.meta.setdefault("setup", {})[key] = setup_entry([(w, s, True) for w, s, _ in setup])
                for group, model in fit_measurements(kind, measured).items():   # None: MLPs; "cnn"
                    grouped = model_key(kind, variant, group, device=gpu.name)
                    calibration.models[grouped] = model
                    log(f"{grouped:<40} {model.form:<9} cv error {model.cv_mape:5.1f}%  ({model.n_points} points, "
                        f"{time.perf_counter() - t0:.1f}s)")
        meta[gpu.name] = {"name": gpu.model, "models": gpu.name}
        calibrated[gpu.model] = gpu.name

