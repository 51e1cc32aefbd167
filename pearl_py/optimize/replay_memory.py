"""Memory admission: a protocol whose replay cannot fit in any device that may hold it is refused with the figure.

The replay kernels' storage (``capacity x bytes per stored transition``: float32 observations
twice, uint8 frames twice with prioritized replay, or every distinct frame once:
:mod:`pearl_py.replay.frames`) is what a run allocates up front; a buffer larger than the memory
of every device that may host it is refused before anything is allocated, at plan time
(:func:`pearl_py.optimize.api.plan`) and before a run (``pearl.train``, with this machine's
available memory), instead of being discovered by the OOM killer hours later.

Example::

    >>> algo = pearl.DQN("BreakoutNoFrameskip-v4", buffer_size=100_000_000)
    >>> check_replay_memory(algo.protocol(), Platform.load("pearl-cpu-gpu-fpga"))
    Traceback (most recent call last):
    ...
    pearl_py.errors.PlanningError: replay of 100,000,000 transitions x 8,914 B = 891.4 GB does not fit ...
"""
from __future__ import annotations

from pearl_py.errors import PlanningError
from pearl_py.protocol import ProtocolGraph
from pearl_py.protocol.workload import ReplayWorkload


def replay_bytes(protocol: ProtocolGraph) -> tuple[float, ReplayWorkload] | None:
    """``(bytes, workload)`` of the protocol's replay storage, or None without a replay."""
    for kernel in protocol.kernels():
        if kernel.kind.storage == "replay" and isinstance(kernel.workload, ReplayWorkload):
            return kernel.memory_bytes, kernel.workload
    return None


def check_replay_memory(protocol: ProtocolGraph, platform, available_bytes: float | None = None,
                        where: str | None = None) -> None:
    """Raise :class:`~pearl_py.errors.PlanningError` if the replay fits in no device that may host it.

    Devices whose memory is unknown (0) are not checked (they admit anything). ``available_bytes``
    overrides the devices' figures (this machine's available memory before a run); ``where`` names it.
    """
    found = replay_bytes(protocol)
    if found is None:
        return
    need, workload = found
    kinds = {kernel.kind for kernel in protocol.kernels() if kernel.kind.storage == "replay"}
    hosts = [d for d in platform.devices.values() if all(kind.can_run_on(d.kind) for kind in kinds)]
    if available_bytes is not None:
        capacities = [(where or "this machine", available_bytes)]
    else:
        capacities = [(d.name, d.memory_bytes) for d in hosts]
        if not capacities or any(memory <= 0 for _, memory in capacities):
            return
    name, largest = max(capacities, key=lambda item: item[1])
    if need <= largest:
        return
    fitting = int(largest // max(workload.item_bytes, 1))
    raise PlanningError(
        f"replay of {workload.capacity:,} transitions x {workload.item_bytes:,} B = {size(need)} does not fit "
        f"in the memory of any device that can hold it (largest: {name}, {size(largest)}); lower "
        f"buffer_size to at most {fitting:,}")


def size(nbytes: float) -> str:
    """``nbytes`` in B, KB, MB or GB (decimal units, as the catalogue's memory_gb)."""
    for unit, factor in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if nbytes >= factor:
            return f"{nbytes / factor:,.1f} {unit}"
    return f"{nbytes:,.0f} B"
