"""The control block every process of a run shares: flags and counters, per-process kernel timings.

One small shared-memory segment (docs/runtime.md, "Processes and data paths"): the learner writes ``stop`` and
``completed``; the replay's owner ``limit`` and ``consumed``; a replay server ``applied`` and ``paused`` (answering
``pause``). Actor ``i`` writes row ``i`` of the timing arrays, the servers the rows after the actors'
(:data:`SERVICES`), so kernel times survive a crash and reach the result without pickling.

Example::

    >>> block = ControlBlock.create(actors=2, name="pearl-ctl")
    >>> block.limit = 256
    >>> peer = ControlBlock.attach("pearl-ctl")        # in an actor
    >>> peer.set_produced(1, 8)
    >>> peer.limit, peer.stopped, block.produced
    (256, False, 8)
    >>> peer.add_time(0, ENV_STEP, 1e-4)
    >>> block.kernel_times()[ENV_STEP]["calls"]
    1
    >>> block.service_row("replay")                    # the replay server's timing row
    2
"""
from __future__ import annotations

import numpy as np

from pearl_py.protocol.kernel import (
    ENV_STEP,
    INFERENCE,
    PARAM_SYNC,
    PRIORITY_UPDATE,
    REPLAY_INSERT,
    REPLAY_SAMPLE,
    ROLLOUT_INSERT,
)
from pearl_py.replay.storage import Layout, OnSegment, Storage
from pearl_py.runtime.collect import PARAM_READ, WARMUP_ACTIONS
from pearl_py.runtime.timing import KernelTimer

KERNELS = (ENV_STEP, INFERENCE, PARAM_SYNC, "actor_handoff", "inference_request",
           REPLAY_INSERT, REPLAY_SAMPLE, PRIORITY_UPDATE, WARMUP_ACTIONS, PARAM_READ, ROLLOUT_INSERT)
"""Kernels timed outside the learner process. ``actor_handoff``: an actor's own work after a step (episodes, its
ring), its side of replay_insert; ``inference_request``: an actor's wait for the central inference server."""

SERVICES = ("replay", INFERENCE)
"""Server processes with a timing row each, after the actors' rows."""
BUILT_BYTES = 32
"""Room for the name of the device a server built its part on (``cuda:0``), UTF-8."""

_FLAGS = ("limit", "stop", "consumed", "completed", "applied", "pause", "paused")


class _Flag:
    """An int64 slot of the block's ``flags`` array, as an attribute."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.index = _FLAGS.index(name)

    def __get__(self, block: ControlBlock, owner: type) -> int:
        return int(block._flags[self.index])

    def __set__(self, block: ControlBlock, value: int) -> None:
        block._flags[self.index] = value


class ControlBlock(OnSegment):
    """Shared counters of a run; attribute access reads and writes shared memory."""

    limit = _Flag()
    """Transitions all actors together may have produced (the rate limiter's actor side)."""
    consumed = _Flag()
    """Transitions in the replay (inserted by its owner), over all sessions."""
    completed = _Flag()
    """Gradient steps the learner has finished, over all sessions."""
    applied = _Flag()
    """Priority updates a replay server has applied, over all sessions."""
    pause = _Flag()
    """Set by the learner before a checkpoint: the replay server stops sampling and inserting."""
    paused = _Flag()
    """Set by the replay server once paused (its sampling generator is then fixed)."""

    def __init__(self, storage: Storage) -> None:
        self._storage = storage
        self._flags = storage["flags"]
        self._produced = storage["produced"]
        self._finished = storage["finished"]
        self._lag = storage["lag"]
        self._ready = storage["ready"]
        self._seconds = storage["seconds"]
        self._calls = storage["calls"]
        self._built = storage["built"]
        self.actors = int(storage.layout.meta["actors"])

    @classmethod
    def create(cls, actors: int, name: str) -> ControlBlock:
        rows = actors + len(SERVICES)
        layout = Layout.of({"flags": (np.int64, (len(_FLAGS),)), "produced": (np.int64, (actors,)),
                            "finished": (np.int64, (actors,)), "lag": (np.int64, (actors,)),
                            "ready": (np.int64, (actors,)),
                            "seconds": (np.float64, (rows, len(KERNELS))),
                            "calls": (np.int64, (rows, len(KERNELS))),
                            "built": (np.uint8, (len(SERVICES), BUILT_BYTES))}, {"actors": actors})
        return cls(Storage.create(layout, shared=True, name=name))

    @property
    def stopped(self) -> bool:
        return bool(self._flags[_FLAGS.index("stop")])

    def stop(self) -> None:
        self._flags[_FLAGS.index("stop")] = 1

    def set_produced(self, actor: int, transitions: int) -> None:
        self._produced[actor] = transitions

    @property
    def produced(self) -> int:
        """Transitions produced by all actors of this session."""
        return int(self._produced.sum())

    def produced_by(self, actor: int) -> int:
        """What actor ``actor`` last reported with :meth:`set_produced` (an on-policy actor: rollouts collected)."""
        return int(self._produced[actor])

    @property
    def least_produced(self) -> int:
        """The smallest count any actor reported (an on-policy run: the rollouts every actor has collected)."""
        return int(self._produced.min()) if self.actors else 0

    def set_ready(self, actor: int) -> None:
        """Actor ``actor`` has built its envs and kernels and waits for work."""
        self._ready[actor] = 1

    @property
    def all_ready(self) -> bool:
        return bool(self._ready.all())

    def finish(self, actor: int) -> None:
        """Actor ``actor`` has run its whole quota (it sends no more inference requests)."""
        self._finished[actor] = 1

    def finished(self, actor: int) -> bool:
        return bool(self._finished[actor])

    def note_lag(self, actor: int, updates: int) -> None:
        """Actor ``actor`` is about to act on parameters ``updates`` behind the serial order (keeps the max)."""
        if updates > self._lag[actor]:
            self._lag[actor] = updates

    @property
    def max_policy_lag(self) -> int:
        """The largest policy lag (updates) any actor of this session noted."""
        return int(self._lag.max(initial=0))

    def service_row(self, service: str) -> int:
        """Timing row of a server process (``"replay"`` or ``"inference"``)."""
        return self.actors + SERVICES.index(service)

    def add_time(self, row: int, kernel: str, seconds: float, calls: int = 1) -> None:
        j = KERNELS.index(kernel)
        self._seconds[row, j] += seconds
        self._calls[row, j] += calls

    def store_times(self, row: int, timer: KernelTimer) -> None:
        """Overwrite row ``row`` with a process's own timer totals (a server's periodic flush)."""
        timer.flush()  # a server on a GPU: its kernels' events (complete: the results are on the host)
        for kernel, seconds in timer.seconds.items():
            j = KERNELS.index(kernel)
            self._seconds[row, j] = seconds
            self._calls[row, j] = timer.calls[kernel]

    def set_built_on(self, service: str, device: str) -> None:
        """Server ``service`` built its part on ``device`` (``device_of`` what it built): the result's
        ``executed_on`` reads it rather than the plan."""
        raw = np.frombuffer(device.encode()[:BUILT_BYTES], np.uint8)
        row = self._built[SERVICES.index(service)]
        row[:] = 0
        row[:len(raw)] = raw

    def built_on(self, service: str) -> str | None:
        """The device server ``service`` reported building its part on (None: it has not reported)."""
        return bytes(self._built[SERVICES.index(service)]).rstrip(b"\0").decode() or None

    def kernel_times(self) -> dict[str, dict[str, float]]:
        """Per-kernel ``{calls, total_s}`` summed over actors and servers."""
        return {k: {"calls": int(self._calls[:, j].sum()), "total_s": float(self._seconds[:, j].sum())}
                for j, k in enumerate(KERNELS) if self._calls[:, j].sum()}

    def close(self) -> None:
        self._storage.close()
