"""Kernels: the units of work an off-policy training loop is split into.

Example::

    >>> k = Kernel("learner_update", KernelKind.LEARNER_UPDATE, workload, rate=0.5)
    >>> k.rate          # calls per collected transition
    0.5
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from pearl_py.protocol.workload import Workload


class KernelKind(str, enum.Enum):
    """The seven kinds of work of an off-policy DRL training loop."""

    ENV_STEP = "env_step"
    INFERENCE = "inference"
    REPLAY_INSERT = "replay_insert"
    REPLAY_SAMPLE = "replay_sample"
    PRIORITY_UPDATE = "priority_update"
    LEARNER_UPDATE = "learner_update"
    PARAM_SYNC = "param_sync"

    def __str__(self) -> str:
        return self.value


REPLAY_KINDS = frozenset({KernelKind.REPLAY_INSERT, KernelKind.REPLAY_SAMPLE, KernelKind.PRIORITY_UPDATE})
"""Kernels that touch the replay storage and so must run where it lives."""


@dataclass(frozen=True)
class Kernel:
    """A named unit of work with its workload and how often it runs.

    ``rate`` is calls per collected transition (one env step of one env).
    ``replicable`` kernels (actors: env_step, inference) may run as several
    parallel replicas, each taking a share of the calls.
    """

    name: str
    kind: KernelKind
    workload: Workload
    rate: float
    replicable: bool = False

    def __post_init__(self) -> None:
        if self.rate < 0:
            raise ValueError(f"kernel {self.name!r}: rate must be >= 0, got {self.rate}")
