"""pinned_threads: the caller on the first usable core, the process's other threads on the others,
everything restored on exit; a child started meanwhile gets every usable core back (release_child)."""
from __future__ import annotations

import multiprocessing as mp
import os
import threading

import pytest

from pearl_py.errors import UserError
from pearl_py.kernels.affinity import (
    CPUS_ENV,
    can_pin,
    pinned_threads,
    release_child,
    usable_cpus,
)

pytestmark = pytest.mark.skipif(not (can_pin() and len(usable_cpus()) >= 2),
                                reason="needs sched_setaffinity and 2 usable cores")


def affinities() -> dict[int, set[int]]:
    return {int(t): os.sched_getaffinity(int(t)) for t in os.listdir("/proc/self/task")}


def test_pins_the_caller_and_the_other_threads_to_cores_of_their_own_and_restores_them():
    stop = threading.Event()
    helper = threading.Thread(target=stop.wait, daemon=True)
    helper.start()
    cpus, before = usable_cpus(), affinities()
    try:
        with pinned_threads(2) as pinned:
            now = affinities()
            assert pinned
            assert now[threading.get_native_id()] == {cpus[0]}
            assert now[helper.native_id] == set(cpus[1:])
            assert all(cores == set(cpus[1:]) for tid, cores in now.items() if tid != threading.get_native_id())
            assert os.environ[CPUS_ENV] == ",".join(map(str, cpus))
        assert {t: c for t, c in affinities().items() if t in before} == before
        assert CPUS_ENV not in os.environ
    finally:
        stop.set()
        helper.join()


def test_one_thread_or_more_threads_than_cores_pins_nothing():
    before = affinities()
    with pinned_threads(1) as one, pinned_threads(len(usable_cpus()) + 1) as too_many:
        assert not one and not too_many
        assert affinities() == before


def _child_cores(queue) -> None:
    release_child()
    queue.put(sorted(os.sched_getaffinity(0)))


def test_a_child_started_while_pinned_gets_every_usable_core_back():
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    with pinned_threads(2):
        child = ctx.Process(target=_child_cores, args=(queue,))
        child.start()
        cores = queue.get(timeout=60)
        child.join()
    assert cores == usable_cpus()


def test_a_core_the_system_refuses_leaves_the_threads_as_they_were_and_the_environment_clean(monkeypatch):
    monkeypatch.setenv(CPUS_ENV, f"{os.cpu_count() + 7},{os.cpu_count() + 8}")  # cores this machine lacks
    before = affinities()
    with pinned_threads(2) as pinned:
        assert pinned and affinities() == before
    assert os.environ[CPUS_ENV] == f"{os.cpu_count() + 7},{os.cpu_count() + 8}"  # the recorded value is put back


def test_the_pinning_is_undone_when_the_body_raises():
    before = affinities()
    with pytest.raises(RuntimeError, match="boom"):
        with pinned_threads(2):
            raise RuntimeError("boom")
    assert {t: c for t, c in affinities().items() if t in before} == before and CPUS_ENV not in os.environ


def test_a_garbled_cpu_list_in_the_environment_is_named_in_the_error(monkeypatch):
    monkeypatch.setenv(CPUS_ENV, "0,one")
    with pytest.raises(UserError, match=r"environment variable PEARL_CPUS='0,one': expected comma-separated core numbers"):
        usable_cpus()


def test_learner_threads_move_between_counts_pinning_at_two_and_restore_everything_on_exit():
    import torch

    from pearl_py.kernels.affinity import LearnerThreads

    cpus, before, threads_before = usable_cpus(), affinities(), torch.get_num_threads()
    torch.set_num_threads(2)   # the executor sets the plan's count, then enters
    try:
        with LearnerThreads(2) as threads:
            assert affinities()[threading.get_native_id()] == {cpus[0]}
            threads.set(1)
            assert torch.get_num_threads() == 1 and threads.n == 1
            assert affinities()[threading.get_native_id()] == before[threading.get_native_id()]  # one thread: unpinned
            threads.set(2)
            assert torch.get_num_threads() == 2 and affinities()[threading.get_native_id()] == {cpus[0]}
        assert all(cores == before.get(tid, set(cpus)) for tid, cores in affinities().items())  # new: every core
        assert CPUS_ENV not in os.environ
    finally:
        torch.set_num_threads(threads_before)
