"""Calibrate this CPU: run every kernel kind over a grid, fit a model per (kind, variant[, env]).

Runs single-threaded (``torch.set_num_threads(1)``), as every pearl_py runtime process
does. ``pearl profile`` calls :func:`profile` and caches the result per machine.

Example::

    >>> cal = profile(quick=True)                 # ~1 minute on a 2-core VM
    >>> cal.model("inference", "reference").form
    'linear'
"""
from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Callable, Iterator

import torch

from pearl_py.estimate.calibration import Calibration, machine_fingerprint, model_key
from pearl_py.estimate.features import workload_features
from pearl_py.estimate.fit import FittedModel, select_model
from pearl_py.estimate.microbench import BenchPoint, build, time_call, variants
from pearl_py.protocol import Workload

KINDS = ("learner_update", "inference", "replay_insert", "replay_sample", "priority_update", "env_step",
         "param_sync")
CALIBRATED_ENVS = ("CartPole-v1", "Pendulum-v1")

KIND_FEATURES: dict[str, tuple[str, list[str]]] = {
    "learner_update": ("flops", ["flops", "bytes", "ops"]),
    "inference": ("flops", ["flops", "bytes", "ops"]),
    "replay_insert": ("batch", ["batch", "bytes", "levels", "tree_work", "prioritized"]),
    "replay_sample": ("batch", ["batch", "bytes", "levels", "tree_work", "prioritized"]),
    "priority_update": ("batch", ["batch", "levels", "tree_work"]),
    "env_step": ("n_envs", ["n_envs"]),
    "param_sync": ("bytes", ["bytes"]),
}
"""Primary size (power-law and piecewise forms) and linear features of each kind's model."""


def _network(kind: str, widths, batches) -> list[BenchPoint]:
    return [BenchPoint(kind, algo=a, width=w, batch=b) for a, w, b in itertools.product(("dqn", "ddpg"), widths, batches)]


def _replay(kind: str, capacities, batches) -> list[BenchPoint]:
    flags = (True,) if kind == "priority_update" else (False, True)
    return [BenchPoint(kind, capacity=c, batch=b, prioritized=p) for c, b, p in itertools.product(capacities, batches, flags)]


def calibration_grid(kind: str, quick: bool = False) -> list[BenchPoint]:
    """Points ``pearl profile`` measures; ``quick`` keeps the corners and the middle."""
    if kind in ("learner_update", "inference"):
        batches = (32, 64, 128, 256) if kind == "learner_update" else (1, 4, 16, 64)
        widths = (32, 64, 128, 256)
        if quick:
            batches, widths = batches[::2] + batches[-1:], (32, 128, 256)
        return _network(kind, widths, batches)
    if kind in ("replay_insert", "replay_sample", "priority_update"):
        return _replay(kind, (1_000, 100_000) if quick else (1_000, 10_000, 100_000),
                       (1, 16, 256) if quick else (1, 8, 64, 256))
    if kind == "env_step":
        return [BenchPoint(kind, env_id=e, batch=n) for e in CALIBRATED_ENVS for n in (1, 2, 4, 8, 16)]
    if kind == "param_sync":
        return [BenchPoint(kind, nbytes=n) for n in (1_000, 10_000, 100_000, 1_000_000, 4_000_000)]
    raise KeyError(kind)


def heldout_grid(kind: str) -> list[BenchPoint]:
    """Points never used in calibration (other batch sizes, widths, capacities, sizes)."""
    if kind in ("learner_update", "inference"):
        batches = (48, 96, 192) if kind == "learner_update" else (2, 8, 32)
        return _network(kind, (48, 96, 192), batches)
    if kind in ("replay_insert", "replay_sample", "priority_update"):
        return _replay(kind, (3_000, 30_000), (4, 32, 128))
    if kind == "env_step":
        return [BenchPoint(kind, env_id=e, batch=n) for e in CALIBRATED_ENVS for n in (3, 6, 12)]
    if kind == "param_sync":
        return [BenchPoint(kind, nbytes=n) for n in (3_000, 30_000, 300_000, 2_000_000)]
    raise KeyError(kind)


@contextlib.contextmanager
def single_thread() -> Iterator[None]:
    """One intra-op thread, as in every pearl_py runtime process; restores the previous setting."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def measure(kind: str, variant: str, points: list[BenchPoint], passes: int = 3) -> list[tuple[Workload, float]]:
    """Seconds per call of ``kind``/``variant`` at every point (single-threaded).

    The grid is timed ``passes`` times, interleaved, and each point keeps its fastest
    pass: neighbours on a shared machine only ever add time (cache and memory
    interference), so the minimum is the least disturbed figure.
    """
    with single_thread():
        benches = [build(kind, variant, point) for point in points]
        best = [time_call(call) for _, call in benches]
        for _ in range(passes - 1):
            best = [min(b, time_call(call)) for b, (_, call) in zip(best, benches)]
    return [(workload, seconds) for (workload, _), seconds in zip(benches, best)]


def fit_measurements(kind: str, measured: list[tuple[Workload, float]]) -> dict[str | None, FittedModel]:
    """One model per kind, or per env id for ``env_step`` (keyed by env id, else None)."""
    primary, features = KIND_FEATURES[kind]
    groups: dict[str | None, list[tuple[Workload, float]]] = {}
    for workload, seconds in measured:
        groups.setdefault(getattr(workload, "env_id", None) if kind == "env_step" else None, []).append(
            (workload, seconds))
    return {key: select_model([workload_features(w) for w, _ in rows], [s for _, s in rows], primary, features)
            for key, rows in groups.items()}


def profile(quick: bool = False, kinds: tuple[str, ...] = KINDS,
            log: Callable[[str], None] = lambda line: None) -> Calibration:
    """Measure and fit every registered variant of every kind on this CPU."""
    calibration = Calibration(machine_fingerprint(), meta={"quick": quick, "threads": 1,
                                                           "torch": torch.__version__})
    start = time.perf_counter()
    for kind in kinds:
        for variant in variants(kind):
            t0 = time.perf_counter()
            measured = measure(kind, variant, calibration_grid(kind, quick))
            for env_id, model in fit_measurements(kind, measured).items():
                calibration.models[model_key(kind, variant, env_id)] = model
                log(f"{model_key(kind, variant, env_id):<32} {model.form:<9} cv error {model.cv_mape:5.1f}%  "
                    f"({model.n_points} points, {time.perf_counter() - t0:.1f}s)")
    calibration.meta["seconds"] = round(time.perf_counter() - start, 1)
    return calibration
