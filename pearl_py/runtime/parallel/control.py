"""The control block every process of a run shares: stop flag, actor limit, per-actor timings.

One small shared-memory segment. The learner writes ``limit`` (transitions the actors
together may have produced) and ``stop``; actor ``i`` writes row ``i`` of the timing
arrays, so kernel times survive an actor's crash and reach the result without pickling.

Example::

    >>> block = ControlBlock.create(actors=2, name="pearl-ctl")
    >>> block.limit = 256
    >>> peer = ControlBlock.attach("pearl-ctl")        # in an actor
    >>> peer.set_produced(1, 8)
    >>> peer.limit, peer.stopped, block.produced
    (256, False, 8)
    >>> peer.add_time(0, "env_step", 1e-4)
    >>> block.kernel_times()["env_step"]["calls"]
    1
"""
from __future__ import annotations

import numpy as np

from pearl_py.replay.storage import Layout, Storage

ACTOR_KERNELS = ("env_step", "inference", "param_sync", "actor_handoff")
"""Timed on the actors; ``actor_handoff`` is the loop's own work after a step (episode
bookkeeping, writing the transitions into the ring), the actor's side of replay_insert."""
"""Kernels an actor runs and times."""


class ControlBlock:
    """Shared counters of a run; attribute access reads and writes shared memory."""

    def __init__(self, storage: Storage) -> None:
        self._storage = storage
        self._flags = storage["flags"]
        self._produced = storage["produced"]
        self._seconds = storage["seconds"]
        self._calls = storage["calls"]

    @classmethod
    def create(cls, actors: int, name: str) -> ControlBlock:
        layout = Layout.of({"flags": (np.int64, (2,)), "produced": (np.int64, (actors,)),
                            "seconds": (np.float64, (actors, len(ACTOR_KERNELS))),
                            "calls": (np.int64, (actors, len(ACTOR_KERNELS)))}, {"actors": actors})
        return cls(Storage.create(layout, shared=True, name=name))

    @classmethod
    def attach(cls, name: str) -> ControlBlock:
        return cls(Storage.attach(name))

    @property
    def name(self) -> str:
        return self._storage.name

    @property
    def limit(self) -> int:
        """Transitions all actors together may have produced (the rate limiter's actor side)."""
        return int(self._flags[0])

    @limit.setter
    def limit(self, value: int) -> None:
        self._flags[0] = value

    @property
    def stopped(self) -> bool:
        return bool(self._flags[1])

    def stop(self) -> None:
        self._flags[1] = 1

    def set_produced(self, actor: int, transitions: int) -> None:
        self._produced[actor] = transitions

    @property
    def produced(self) -> int:
        """Transitions produced by all actors of this session."""
        return int(self._produced.sum())

    def add_time(self, actor: int, kernel: str, seconds: float) -> None:
        j = ACTOR_KERNELS.index(kernel)
        self._seconds[actor, j] += seconds
        self._calls[actor, j] += 1

    def kernel_times(self) -> dict[str, dict[str, float]]:
        """Per-kernel ``{calls, total_s}`` summed over actors."""
        return {k: {"calls": int(self._calls[:, j].sum()), "total_s": float(self._seconds[:, j].sum())}
                for j, k in enumerate(ACTOR_KERNELS) if self._calls[:, j].sum()}

    def close(self) -> None:
        self._storage.close()
