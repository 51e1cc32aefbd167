"""Timing a kernel on the device that runs it: the host clock for a CPU, CUDA events for a GPU.

A kernel on a CUDA device is timed by two events recorded on its device's current stream, so its time is its own
work, not its launches (docs/runtime.md, "Timing on a GPU"). The host waits for the GPU only in
:meth:`EventLog.flush` (a session's summary, a checkpoint) and when more than :data:`MAX_PENDING` pairs are unread
(for the oldest); :meth:`EventLog.poll` reads the completed pairs without waiting (the run's log rows), with
``read_calls`` counting the calls read.

Example::

    >>> log = EventLog(CUDA.events(torch.device("cuda:0")))
    >>> start = log.start()
    >>> out = learner.update(batch)             # queued on cuda:0
    >>> log.stop("learner_update", start)       # no wait here
    >>> log.flush()                             # waits for the last end event
    {'learner_update': 0.00041}
"""
from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable
from typing import Protocol

import torch

MAX_PENDING = 1024
"""Unread event pairs kept at most; beyond, the oldest end event is waited for (bounded memory)."""


class DeviceEvent(Protocol):
    """What timing needs of a device event (:class:`~pearl_py.platform.runtimes.TorchEvent`)."""

    def record(self) -> None: ...

    def query(self) -> bool: ...

    def synchronize(self) -> None: ...

    def seconds_until(self, end: DeviceEvent) -> float: ...


DeviceEvents = Callable[[], DeviceEvent]
"""Makes a new event of one device."""


EventSource = Callable[[torch.device], DeviceEvents]
"""``events(device)``: the event factory of an accelerator device (its runtime's
:meth:`~pearl_py.platform.runtimes.DeviceRuntime.events`; tests pass fakes)."""


class EventLog:
    """Event pairs of the kernels timed on one device, read back without waiting until asked to."""

    def __init__(self, events: DeviceEvents, max_pending: int = MAX_PENDING) -> None:
        self.events = events
        self.max_pending = max_pending
        self.pending: deque[tuple[str, DeviceEvent, DeviceEvent, int]] = deque()
        self.read_calls: dict[str, int] = defaultdict(int)
        """Calls of each kernel whose seconds have been read back."""
        self.free: list[DeviceEvent] = []
        """Events of pairs already read (completed): recorded again rather than made anew for each call."""

    def _event(self) -> DeviceEvent:
        return self.free.pop() if self.free else self.events()

    def start(self) -> DeviceEvent:
        """Record the start event (before the kernel's first launch)."""
        event = self._event()
        event.record()
        return event

    def stop(self, kernel: str, start: DeviceEvent, calls: int = 1) -> dict[str, float]:
        """Record the end event (after the kernel's last launch; the pair times ``calls`` calls); seconds of pairs
        that have completed."""
        end = self._event()
        end.record()
        self.pending.append((kernel, start, end, calls))
        return self._read(wait=len(self.pending) > self.max_pending)

    def poll(self) -> dict[str, float]:
        """Seconds of the pairs that have completed, per kernel, never waiting."""
        return self._read(wait=False)

    def flush(self) -> dict[str, float]:
        """Seconds of every pending pair, per kernel, waiting for the device as needed."""
        return self._read(wait=True, all_of_them=True)

    def _read(self, wait: bool, all_of_them: bool = False) -> dict[str, float]:
        done: dict[str, float] = defaultdict(float)
        # in stream order: when an end event has not completed, none recorded after it has
        while self.pending:
            kernel, start, end, calls = self.pending[0]
            if not end.query():
                if not wait:
                    break
                end.synchronize()
                wait = all_of_them  # beyond the bound, one wait frees one pair
            self.pending.popleft()
            done[kernel] += start.seconds_until(end)
            self.read_calls[kernel] += calls
            self.free += (start, end)
        return dict(done)
