"""The training protocol: kernels, their workloads and the graph of data between them."""
from pearl_py.protocol.graph import ProtocolGraph
from pearl_py.protocol.kernel import REPLAY_KINDS, Kernel, KernelKind
from pearl_py.protocol.workload import (
    DenseLayer,
    EnvWorkload,
    NetworkWorkload,
    ReplayWorkload,
    SyncWorkload,
    TransitionLayout,
    Workload,
)

__all__ = [
    "DenseLayer", "EnvWorkload", "Kernel", "KernelKind", "NetworkWorkload", "ProtocolGraph",
    "REPLAY_KINDS", "ReplayWorkload", "SyncWorkload", "TransitionLayout", "Workload",
]
