"""A small discrete-event engine: a clock, a heap of timed wake-ups, generator processes, resources.

A process is a generator that yields :class:`Event` objects and resumes when they fire. A :class:`Resource` has
``units`` identical servers and a FIFO queue; ``resource.use(seconds, label)`` fires when the work is done, after
waiting for a free unit (``units=n``: ``n`` at once). Busy time is accumulated per resource; segments ``(unit,
start, end, label)`` are kept while a :class:`Recorder` window is open. Why not SimPy: docs/simulator.md, "The engine".

Example::

    >>> eng = Engine()
    >>> gpu = Resource(eng, "gpu", units=1)
    >>> def job(name):
    ...     yield gpu.use(2.0, name)
    >>> eng.process(job("a")); eng.process(job("b"))
    >>> eng.run(); eng.now, gpu.busy_s
    (4.0, 4.0)
"""
from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

Process = Generator["Event", Any, None]


class Event:
    """Something that happens once; processes waiting on it resume, in the order they waited."""

    __slots__ = ("engine", "callbacks", "fired")

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.callbacks: list[Callable[[], None]] = []
        self.fired = False

    def fire(self) -> None:
        """Fire now: the waiters resume at the current time (after events already due now)."""
        if self.fired:
            return
        self.fired = True
        for callback in self.callbacks:
            self.engine.schedule(0.0, callback)
        self.callbacks = []

    def on_fire(self, callback: Callable[[], None]) -> None:
        if self.fired:
            self.engine.schedule(0.0, callback)
        else:
            self.callbacks.append(callback)


class Engine:
    """The clock and the event heap; ``run()`` processes wake-ups in time order (FIFO on ties)."""

    def __init__(self) -> None:
        self.now = 0.0
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = 0

    def schedule(self, delay: float, callback: Callable[[], None]) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (self.now + delay, self._seq, callback))

    def timeout(self, delay: float) -> Event:
        event = Event(self)
        self.schedule(delay, event.fire)
        return event

    def process(self, gen: Process) -> Event:
        """Start ``gen`` now; the returned event fires when it returns."""
        done = Event(self)

        def step() -> None:
            try:
                waiting_on = next(gen)
            except StopIteration:
                done.fire()
                return
            waiting_on.on_fire(step)

        self.schedule(0.0, step)
        return done

    def run(self) -> None:
        """Run until no wake-up is left."""
        heap = self._heap
        while heap:
            self.now, _, callback = heapq.heappop(heap)
            callback()


@dataclass
class Recorder:
    """Keeps ``(resource, unit, start, end, label)`` segments while ``open``, at most ``limit`` of them."""

    limit: int = 4000
    open: bool = False
    segments: list[tuple[str, int, float, float, str]] = field(default_factory=list)

    def add(self, resource: str, unit: int, start: float, end: float, label: str) -> None:
        if self.open and len(self.segments) < self.limit:
            self.segments.append((resource, unit, start, end, label))


class Resource:
    """``units`` identical servers with one FIFO queue (a CPU's cores, a GPU, a directed link)."""

    def __init__(self, engine: Engine, name: str, units: int = 1, recorder: Recorder | None = None) -> None:
        self.engine = engine
        self.name = name
        self.units = units
        self.recorder = recorder
        self.busy_s = 0.0
        """Busy unit-seconds (a call holding two units for a second adds two)."""
        self.calls = 0
        self.peak = 0
        """Most units ever busy at once (the cores a device's processes actually use)."""
        self._free = list(range(units - 1, -1, -1))
        self._queue: deque[tuple[float, str, Event]] = deque()

    def use(self, seconds: float, label: str, units: int = 1) -> Event:
        """An event firing when ``seconds`` of work labelled ``label`` has run on ``units`` units at once
        (a multi-threaded call holds that many cores); the queue is FIFO, so a call waiting for several
        units also holds back the calls behind it."""
        if not 1 <= units <= self.units:
            raise ValueError(f"{self.name}: a call needs {units} units, the resource has {self.units}")
        done = Event(self.engine)
        self._queue.append((seconds, label, done, units))
        self._dispatch()
        return done

    @property
    def queued(self) -> int:
        return len(self._queue)

    def _dispatch(self) -> None:
        """Start queued calls in order while the first one's units are free."""
        while self._queue and len(self._free) >= self._queue[0][3]:
            seconds, label, done, units = self._queue.popleft()
            self._start([self._free.pop() for _ in range(units)], seconds, label, done)
            self.peak = max(self.peak, self.units - len(self._free))

    def _start(self, held: list[int], seconds: float, label: str, done: Event) -> None:
        start = self.engine.now
        self.busy_s += seconds * len(held)
        self.calls += 1

        def finish() -> None:
            if self.recorder is not None:
                for unit in held:
                    self.recorder.add(self.name, unit, start, self.engine.now, label)
            self._free.extend(reversed(held))
            self._dispatch()
            done.fire()

        self.engine.schedule(seconds, finish)


class Signal:
    """Wakes every process waiting on it when state they wait for may have changed."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._event = Event(engine)

    def wait(self) -> Event:
        return self._event

    def notify(self) -> None:
        event, self._event = self._event, Event(self.engine)
        event.fire()
