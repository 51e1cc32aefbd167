"""Numbers a cost model reads from a workload: FLOPs, bytes, dispatched ops, batch.

Calibrated and roofline models share these, so a kernel measured on one grid is
predicted on another through the same quantities.

Example::

    >>> from pearl_py.protocol import ReplayWorkload
    >>> workload_features(ReplayWorkload(capacity=1024, batch=32, item_bytes=48, prioritized=True))
    {'batch': 32.0, 'bytes': 1536.0, 'levels': 10.0, 'tree_work': 320.0, 'capacity': 1024.0, 'prioritized': 1.0}
"""
from __future__ import annotations

from pearl_py.protocol import (
    AdvantageWorkload,
    EnvWorkload,
    NetworkWorkload,
    ReplayWorkload,
    RolloutWorkload,
    SyncWorkload,
    Workload,
)
from pearl_py.protocol.workload import FLOAT_BYTES

ADAM_STATE_WORDS = 4
"""Adam reads and writes parameter, gradient and two moments per trained parameter."""


def model_group(workload: Workload) -> str | None:
    """Which calibrated model of its kind predicts ``workload``: its env id (``env_step``), ``cnn`` (a network with
    convolutions: fitted on CNN micro-benchmarks of its own), or None (the kind's one model)."""
    if isinstance(workload, EnvWorkload):
        return workload.env_id
    if isinstance(workload, NetworkWorkload) and workload.has_conv:
        return "cnn"
    return None


def cpu_ops(workload: NetworkWorkload) -> float:
    """The op count the CPU models read (``ops``): the feature their calibrations were fitted on, kept so a cached
    calibration reads what it was fitted on. The off-policy grids were fitted on the layer estimate, the
    on-policy grids on the observed count; the GPU model reads the observed count (``launches``) for both."""
    return float(workload.n_ops if workload.family == "on_policy" else workload.layer_ops)


def workload_features(workload: Workload) -> dict[str, float]:
    """Features of one call; keys depend on the workload type (see docs/cost-models.md)."""
    if isinstance(workload, NetworkWorkload):
        return {
            "flops": workload.flops,
            "conv_flops": workload.conv_flops,
            "bytes": float(workload.weight_bytes + workload.activation_bytes
                           + ADAM_STATE_WORDS * FLOAT_BYTES * workload.trained_params),
            "ops": cpu_ops(workload),
            "launches": float(workload.n_ops),
            "batch": float(workload.batch),
            "activations": float(workload.activation_elements),
            "weights": float(workload.weight_bytes),
        }
    if isinstance(workload, ReplayWorkload):
        return {
            "batch": float(workload.batch),
            "bytes": float(workload.bytes_moved),
            "levels": float(workload.tree_depth),
            "tree_work": float(workload.batch * workload.tree_depth),
            "capacity": float(workload.capacity),
            "prioritized": 1.0 if workload.prioritized else 0.0,
        }
    if isinstance(workload, EnvWorkload):
        return {"n_envs": float(workload.n_envs), "obs_bytes": float(workload.obs_bytes)}
    if isinstance(workload, SyncWorkload):
        return {"bytes": float(workload.param_bytes), "tensors": float(workload.tensors)}
    if isinstance(workload, RolloutWorkload):   # a replay insert without a tree (the replay roofline reads these)
        return {"batch": float(workload.batch), "bytes": float(workload.bytes_moved), "levels": 0.0, "tree_work": 0.0}
    if isinstance(workload, AdvantageWorkload):
        return {"steps": float(workload.n_steps), "elements": float(workload.elements),
                "flops": float(workload.flops), "bytes": float(workload.bytes_moved)}
    raise TypeError(f"no cost features for workload type {type(workload).__name__}")
