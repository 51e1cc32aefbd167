"""Per-kernel timing, the "measured" column of every report, and how parts of a run add up.

A kernel on the CPU is timed by the host clock, a kernel on a CUDA device by CUDA events on its device's stream
(:mod:`pearl_py.runtime.device_timing`; docs/runtime.md, "Timing on a GPU").

Example::

    >>> timer = KernelTimer({LEARNER_UPDATE: torch.device("cuda:0")})
    >>> with timer(ENV_STEP):                   # host clock
    ...     envs.step(actions)
    >>> with timer(LEARNER_UPDATE):             # CUDA events on cuda:0's stream
    ...     update(batch)
    >>> LEARNER_UPDATE in timer.summary(wait=False)   # a log row: only the calls the GPU has finished, no wait
    False
    >>> timer.summary()[LEARNER_UPDATE]["calls"]       # the session's end: waits for the GPU's last event
    1
"""
from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import torch

from pearl_py.platform.runtimes import runtime_of
from pearl_py.protocol.kernel import LOOP_WORK, LOOP_WORK_LABEL, setup_timing
from pearl_py.runtime.device_timing import DeviceEvents, EventLog, EventSource
from pearl_py.runtime.kernel_devices import SimulatedKernel


class KernelTimer:
    """Accumulates seconds and call counts per kernel name.

    ``devices``: each kernel's torch device (:func:`~pearl_py.runtime.kernel_devices.timing_devices`); kernels off the
    host are timed with its events (``events``: the source; tests pass fakes), the others with the host clock.
    ``seconds`` holds what has been read back; :meth:`summary` (or :meth:`flush`) reads every pending event first.
    """

    def __init__(self, devices: Mapping[str, torch.device] | None = None, events: EventSource | None = None) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        logs: dict[torch.device, EventLog] = {}
        self._logs: dict[str, EventLog] = {}
        for kernel, device in (devices or {}).items():
            device = torch.device(device)
            runtime = runtime_of(device)
            if not runtime.on_host:  # the kernel's one-off setup is timed on the same device
                log = logs.setdefault(device, EventLog((events or runtime.events)(device)))
                self._logs.update({kernel: log, setup_timing(kernel): log})
        self._devices = list(logs.values())

    @property
    def evented(self) -> frozenset[str]:
        """Kernels timed with device events (on a CUDA device; their setups' entries too, not listed)."""
        return frozenset(k for k in self._logs if setup_timing(k) in self._logs)

    def events_of(self, kernel: str) -> DeviceEvents | None:
        """The event factory of the device that times ``kernel`` (None: the host clock times it)."""
        log = self._logs.get(kernel)
        return log.events if log is not None else None

    def __call__(self, kernel: str, calls: int = 1) -> AbstractContextManager[None]:
        """Time the block as ``calls`` calls of ``kernel``, on its device's clock."""
        log = self._logs.get(kernel)
        return _HostBlock(self, kernel, calls) if log is None else self._evented(log, kernel, calls)

    @contextmanager
    def _evented(self, log: EventLog, kernel: str, calls: int) -> Iterator[None]:
        begin = log.start()
        try:
            yield
        finally:
            self.calls[kernel] += calls
            self._credit(log.stop(kernel, begin, calls))

    def add(self, kernel: str, seconds: float, calls: int = 1) -> None:
        """Host-measured seconds (never for a kernel on a CUDA device: time it with ``timer(kernel)``)."""
        if kernel in self._logs:
            raise ValueError(f"{kernel} runs on a CUDA device: time it with the timer's events, not host seconds")
        self.seconds[kernel] += seconds
        self.calls[kernel] += calls

    def flush(self) -> None:
        """Read every pending device event (waits for the devices' queued work up to the last timed kernel)."""
        for log in self._devices:
            self._credit(log.flush())

    def _credit(self, seconds: Mapping[str, float]) -> None:
        for kernel, s in seconds.items():
            self.seconds[kernel] += s

    def summary(self, wait: bool = True) -> dict[str, dict[str, float]]:
        """``{kernel: {calls, total_s, mean_s, source}}``, every figure measured. ``wait``: read every pending
        device event first (the host waits for the devices); else only those completed, a device kernel's
        ``calls`` then counting the calls read (the run's log rows ask so every round: the host never waits)."""
        if wait:
            self.flush()
        else:
            for log in self._devices:
                self._credit(log.poll())
        calls = {name: self._logs[name].read_calls[name] if name in self._logs else self.calls[name]
                 for name in self.seconds}
        return {
            name: {"calls": calls[name], "total_s": self.seconds[name],
                   "mean_s": self.seconds[name] / max(calls[name], 1), "source": "measured"}
            for name in sorted(self.seconds)
        }


class _HostBlock:
    """A block timed by the host clock into a :class:`KernelTimer` (a plain object, not a generator: the acting
    loop times three blocks a step, and this costs a fraction of ``contextmanager``'s)."""

    __slots__ = ("timer", "kernel", "calls", "start")

    def __init__(self, timer: KernelTimer, kernel: str, calls: int) -> None:
        self.timer, self.kernel, self.calls = timer, kernel, calls

    def __enter__(self) -> None:
        self.start = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        timer = self.timer
        timer.seconds[self.kernel] += time.perf_counter() - self.start
        timer.calls[self.kernel] += self.calls


def record_loop_work(timer: KernelTimer, session_seconds: float, vector_steps: int) -> None:
    """Credit a serial session's training seconds that no timed kernel took to ``LOOP_WORK`` (the loop's own
    work), as ``vector_steps`` calls; never below 0 (a GPU kernel's events may overlap the host's waiting)."""
    timer.flush()
    busy = sum(s for kernel, s in timer.seconds.items() if kernel != LOOP_WORK)
    timer.add(LOOP_WORK, max(session_seconds - busy, 0.0), calls=vector_steps)


def merge_kernel_times(parts: Iterable[Mapping[str, Mapping[str, Any]]],
                       simulated: Mapping[str, SimulatedKernel]) -> dict[str, dict[str, Any]]:
    """Per-kernel times summed over ``parts`` (processes, workers, earlier sessions of a resumed run).

    A kernel in ``simulated`` ran on a simulated device (the FPGA: executed on the CPU): its
    ``total_s`` is charged at its modelled latency per call, marked ``source: modelled`` and labelled
    (``label``: ``modelled (simulated FPGA)``), and the CPU's own time is kept as ``cpu_total_s``;
    ``LOOP_WORK`` is derived (``label``: :data:`LOOP_WORK_LABEL`); every other figure is measured (``label``:
    ``measured``).

    Example::

        >>> merge_kernel_times([learner_timer.summary(), actor_times], simulated_kernels(plan))["replay_sample"]
        {'calls': 24576, 'total_s': 0.049, 'mean_s': 2e-06, 'source': 'modelled', 'label': 'modelled (simulated FPGA)',
         'cpu_total_s': 1.21}
    """
    totals: dict[str, list[float]] = {}
    for part in parts:
        for kernel, t in part.items():
            calls, seconds = totals.setdefault(kernel, [0, 0.0])
            totals[kernel] = [calls + int(t["calls"]), seconds + t.get("cpu_total_s", t["total_s"])]
    out: dict[str, dict[str, Any]] = {}
    for kernel in sorted(totals):
        calls, seconds = totals[kernel]
        if kernel in simulated:
            charged = simulated[kernel]
            out[kernel] = {"calls": calls, "total_s": calls * charged.latency_s, "mean_s": charged.latency_s,
                           "source": "modelled", "label": charged.label, "cpu_total_s": seconds}
        else:
            how = ("derived", LOOP_WORK_LABEL) if kernel == LOOP_WORK else ("measured", "measured")
            out[kernel] = {"calls": calls, "total_s": seconds, "mean_s": seconds / max(calls, 1), "source": how[0],
                           "label": how[1]}
    return out
