"""The training protocol as pure data: kernel kinds (declared once), kernels, workloads, the graph, schedules.

Nothing here imports torch or an algorithm; each algorithm family derives its graph
(pearl_py/algorithms/*/derive.py).
"""
from pearl_py.protocol.graph import ProtocolGraph
from pearl_py.protocol.kernel import (
    ADVANTAGE,
    ENV_STEP,
    INFERENCE,
    LEARNER_UPDATE,
    PARAM_SYNC,
    PRIORITY_UPDATE,
    REPLAY_INSERT,
    REPLAY_KINDS,
    REPLAY_SAMPLE,
    ROLLOUT_INSERT,
    Kernel,
    KernelKind,
)
from pearl_py.protocol.layers import Conv2dLayer, FlattenLayer, PoolLayer
from pearl_py.protocol.workload import (
    AdvantageWorkload,
    DenseLayer,
    EnvWorkload,
    NetworkWorkload,
    ReplayWorkload,
    RolloutWorkload,
    SyncWorkload,
    TransitionLayout,
    Workload,
)

__all__ = [
    "ADVANTAGE", "AdvantageWorkload", "ROLLOUT_INSERT", "RolloutWorkload", "Conv2dLayer", "FlattenLayer", "PoolLayer",
    "DenseLayer", "ENV_STEP", "EnvWorkload", "INFERENCE", "Kernel", "KernelKind", "LEARNER_UPDATE",
    "NetworkWorkload", "PARAM_SYNC", "PRIORITY_UPDATE", "ProtocolGraph", "REPLAY_INSERT", "REPLAY_KINDS",
    "REPLAY_SAMPLE", "ReplayWorkload", "SyncWorkload", "TransitionLayout", "Workload",
]
