"""The shared state of a simulated run: resources, counters, the rate limiter, transfers.

``pipeline.call(kernel, device)`` waits for as many free units of the device as the call holds, holds them for the
kernel's latency and adds the call's dynamic energy; a transfer holds each link of its route in turn.
:class:`Limiter`: vector step ``k`` may start once ``k < inserted + window`` and the learner is within the
schedule's ``max_policy_lag`` updates of the serial order.

Example::

    >>> p = Pipeline(Engine(), topology, schedule)
    >>> done = p.call(LEARNER_UPDATE, "gpu")     # an Event; a process yields it
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from pearl_py.protocol.schedule import SimSchedule
from pearl_py.simulate.engine import Engine, Event, Recorder, Resource, Signal
from pearl_py.simulate.topology import Topology

if TYPE_CHECKING:
    from pearl_py.simulate.adapt import SimAdapt


class Limiter:
    """Actors claim vector steps in order; a claim fires when the schedule admits it.

    The parallel runtime's rule (:meth:`TrainSchedule.actor_limit`): within the window
    past the inserted steps, and within ``max_policy_lag`` updates of the serial order.
    """

    def __init__(self, engine: Engine, schedule: SimSchedule) -> None:
        self.engine = engine
        self.schedule = schedule
        self.total = schedule.vector_steps
        self.claimed = 0
        self._inserted = 0
        self._updates = 0
        self.allowed = self._limit()
        self._waiting: deque[tuple[int, Event]] = deque()

    def _limit(self) -> int:
        s = self.schedule
        return s.actor_limit(self._inserted * s.n_envs, self._updates) // s.n_envs

    def claim(self) -> Event | None:
        """The event letting the caller run the next vector step, or ``None`` when the run has all it needs."""
        if self.claimed >= self.total:
            return None
        ticket, event = self.claimed, Event(self.engine)
        self.claimed += 1
        if ticket < self.allowed:
            event.fire()
        else:
            self._waiting.append((ticket, event))
        return event

    def inserted(self, steps: int) -> None:
        """``steps`` vector steps are in the replay: admit the claims that now fit."""
        self._inserted = steps
        self._admit()

    def updated(self, updates: int) -> None:
        """The learner has done ``updates`` updates: admit the claims the policy lag now allows."""
        self._updates = updates
        self._admit()

    def lift(self, schedule: SimSchedule) -> None:
        """Admit claims by ``schedule`` from now on (a run that went on overlapped: the parallel runtime's bound)."""
        self.schedule = schedule
        self._admit()

    def _admit(self) -> None:
        self.allowed = self._limit()
        while self._waiting and self._waiting[0][0] < self.allowed:
            self._waiting.popleft()[1].fire()


class Pipeline:
    """Resources, counters and signals shared by the actor, replay and learner processes."""

    def __init__(self, engine: Engine, topology: Topology, schedule: SimSchedule,
                 recorder: Recorder | None = None, trace_rounds: tuple[int, int] = (0, 0),
                 rate_limited: bool = True) -> None:
        self.engine = engine
        self.topo = topology
        self.schedule = schedule
        self.recorder = recorder
        self.trace_rounds = trace_rounds
        """The recorder is open from the end of round ``trace_rounds[0]`` to the end of ``trace_rounds[1]``."""
        self.resources: dict[str, Resource] = {}
        self.link_names: set[str] = set()
        self.limiter = Limiter(engine, schedule) if rate_limited else None
        """The off-policy actors' rate limiter (None in a synchronous run: the learner allows each rollout)."""
        self.work = Signal(engine)
        """Wakes the replay side: data arrived, priorities arrived, or the learner moved on."""
        self.learner_wake = Signal(engine)
        self.arrived = 0
        self.inserted = 0
        self.sampled = 0
        self.batches_ready = 0
        self.priorities_pending = 0
        self.updates_done = 0
        self.published = 0
        """Updates of the parameters the actors may last have received."""
        self.dynamic_j = 0.0
        self.round_marks: list[tuple[float, dict[str, float]]] = []
        """``(time, busy seconds per resource)`` when each round's last update finishes."""
        self.end_s = 0.0
        self.adapt: SimAdapt | None = None
        """The run's monitor on simulated time, with a synthetic slowdown (:mod:`pearl_py.simulate.adapt`)."""

    def resource(self, name: str, link: bool = False) -> Resource:
        res = self.resources.get(name)
        if res is None:
            units = 1 if link else self.topo.units(name)
            res = self.resources[name] = Resource(self.engine, name, units, self.recorder)
            if link:
                self.link_names.add(name)
        return res

    def call(self, kernel: str, device: str) -> Event:
        if self.adapt is not None:
            self.adapt.before(kernel)
        cost = self.topo.costs[kernel]
        self.dynamic_j += cost.energy_j
        latency = cost.latency_s if self.adapt is None else self.adapt.latency(kernel, cost.latency_s)
        return self.resource(device).use(latency, kernel, self.topo.threads[kernel])

    def transfer(self, a: str, b: str, src: str, dst: str, parts: int = 1) -> Iterator[Event]:
        """Yield the hops of the ``src -> dst`` edge's data (its ``1 / parts`` share: one actor's of a split
        call) from device ``a`` to ``b`` (a process body)."""
        nbytes = self.topo.edge_bytes(src, dst)
        for link, seconds in self.topo.hops(a, b, None if nbytes is None else nbytes / parts):
            yield self.resource(link, link=True).use(seconds, f"{src}->{dst}")

    def send(self, a: str, b: str, src: str, dst: str, arrived: Callable[[], None] | None = None) -> None:
        """Transfer in the background; call ``arrived`` when the data is at ``b``."""
        if not self.topo.hops(a, b, self.topo.edge_bytes(src, dst)):
            if arrived is not None:
                arrived()
            return
        done = self.engine.process(self.transfer(a, b, src, dst))
        if arrived is not None:
            done.on_fire(arrived)

    # -- arrivals -------------------------------------------------------------------------

    def transition_arrived(self) -> None:
        self.arrived += 1
        self.work.notify()

    def batch_arrived(self) -> None:
        self.batches_ready += 1
        self.learner_wake.notify()

    def priorities_arrived(self) -> None:
        self.priorities_pending += 1
        self.work.notify()

    def stored(self) -> None:
        """One more vector step is in the replay."""
        self.inserted += 1
        self.limiter.inserted(self.inserted)
        self.learner_wake.notify()

    def mark_round(self) -> None:
        self.round_marks.append((self.engine.now, {n: r.busy_s for n, r in self.resources.items()}))
        if self.adapt is not None:
            self.adapt.round_ended()
        if self.recorder is not None and len(self.round_marks) in self.trace_rounds:
            self.recorder.open = len(self.round_marks) == self.trace_rounds[0]
