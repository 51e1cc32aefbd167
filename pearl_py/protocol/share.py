"""A kernel's workload when its vector of envs is split among actors: what one actor's call does.

The optimizer costs a replicated act-side kernel of a synchronous run (``RolloutSchedule.env_split``) at each
replica count by the workload of its largest share (``ceil(n / replicas)`` envs: the slowest actor sets the pace);
workloads that do not depend on the env count are returned unchanged.

Example::

    >>> env_share(EnvWorkload("CartPole-v1", 4, 2, n_envs=8, loop_family="off_policy"), replicas=3).n_envs
    3
    >>> env_count(EnvWorkload("CartPole-v1", 4, 2, n_envs=8, loop_family="off_policy"))
    8
"""
from __future__ import annotations

import dataclasses
import math

from pearl_py.protocol.workload import (
    EnvWorkload,
    NetworkWorkload,
    RolloutWorkload,
    Workload,
)


def env_count(workload: Workload) -> int:
    """The envs one call serves (the most replicas it can be split over); 1 for a workload without envs."""
    if isinstance(workload, EnvWorkload):
        return workload.n_envs
    if isinstance(workload, (RolloutWorkload, NetworkWorkload)):
        return workload.batch
    return 1


def env_share(workload: Workload, replicas: int) -> Workload:
    """The workload of the largest share when the call's envs are split ``replicas`` ways."""
    if isinstance(workload, EnvWorkload):
        return dataclasses.replace(workload, n_envs=math.ceil(workload.n_envs / replicas))
    if isinstance(workload, RolloutWorkload):
        return dataclasses.replace(workload, batch=math.ceil(workload.batch / replicas))
    if isinstance(workload, NetworkWorkload):
        rows = math.ceil(workload.batch / replicas)
        layers = tuple(dataclasses.replace(layer, batch=math.ceil(layer.batch * rows / workload.batch))
                       for layer in workload.layers)
        return dataclasses.replace(workload, batch=rows, layers=layers)
    return workload
