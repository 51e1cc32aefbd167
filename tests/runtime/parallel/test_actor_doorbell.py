"""A held-back actor sleeps on its doorbell until the learner raises the limit; the learner rings
every actor's bell (ActorPool.wake)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from pearl_py.runtime.parallel import actor
from pearl_py.runtime.parallel.process import Doorbell
from pearl_py.runtime.parallel.supervisor import ActorPool


class LearnerRingsAfter:
    """A room bell whose ``wait`` plays the learner: the ``rings``-th wait returns with the limit raised."""

    def __init__(self, control, rings: int, raise_to: int) -> None:
        self.control, self.left, self.raise_to = control, rings, raise_to
        self.waits: list[float] = []
        self.rung = 0

    def wait(self, timeout: float) -> None:
        self.waits.append(timeout)
        self.left -= 1
        if self.left == 0:
            self.control.limit = self.raise_to

    def ring(self) -> None:
        self.rung += 1


def held_back(limit: int = 8, produced: int = 8):
    control = SimpleNamespace(produced=produced, limit=limit, stopped=False)
    ring = SimpleNamespace(free=lambda: 100)
    return control, ring


def test_waits_on_the_bell_not_a_polling_sleep(monkeypatch):
    monkeypatch.setattr(actor.time, "sleep", lambda s: pytest.fail("the actor polled with a sleep"))
    control, ring = held_back()
    bell = LearnerRingsAfter(control, rings=3, raise_to=9)
    spec = SimpleNamespace(steps_before=0, room_bell=bell)
    assert actor._wait_for_room(spec, ring, control, 1)
    assert bell.waits == [actor.WAIT_S] * 3  # woken three times (two stale rings), the third with room


def test_a_stop_ends_the_wait():
    control, ring = held_back()
    bell = LearnerRingsAfter(control, rings=10**6, raise_to=0)
    bell.wait = lambda timeout: setattr(control, "stopped", True)
    assert not actor._wait_for_room(SimpleNamespace(steps_before=0, room_bell=bell), ring, control, 1)


def test_without_a_bell_the_actor_polls(monkeypatch):
    control, ring = held_back()
    sleeps = []

    def sleep(seconds):
        sleeps.append(seconds)
        control.limit = 9

    monkeypatch.setattr(actor.time, "sleep", sleep)
    assert actor._wait_for_room(SimpleNamespace(steps_before=0, room_bell=None), ring, control, 1)
    assert sleeps == [actor.POLL_S]


def test_wake_rings_every_actor_bell():
    bells = [LearnerRingsAfter(None, 1, 0) for _ in range(3)]
    pool = ActorPool([SimpleNamespace(room_bell=b) for b in bells] + [SimpleNamespace(room_bell=None)])
    pool.wake()
    pool.wake()
    assert [b.rung for b in bells] == [2, 2, 2]


def test_rings_do_not_pile_up_while_nobody_waits():
    bell = Doorbell()
    for _ in range(1000):  # e.g. the learner absorbing the whole warm-up while the actor runs freely
        bell.ring()
    try:
        pending = bell._sem.get_value()
    except NotImplementedError:
        pytest.skip("this platform cannot read a semaphore's value")
    assert pending == 1
    bell.wait(1.0)
    assert bell._sem.get_value() == 0
