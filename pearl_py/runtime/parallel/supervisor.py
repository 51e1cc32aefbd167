"""Supervision of the run's child processes: actors (restarted when they fail) and servers (not).

A failed actor is restarted with the next generation's seed up to ``max_restarts`` times; a server's failure fails
the run (:class:`ServiceFailed`). Closing stops, joins, then kills stragglers (docs/runtime.md, "Faults and exits").

Example::

    >>> pool = ActorPool(specs, max_restarts=3)
    >>> pool.start()
    >>> pool.check()            # call often: restarts failed actors, returns what it restarted
    []
    >>> pool.close(control)     # always, in a finally
    >>> server = Service("replay server", run_replay_server, spec, error_file)
    >>> server.start(); server.check()    # raises ServiceFailed once the server died
    >>> server.close(control)
"""
from __future__ import annotations

import dataclasses
import logging
import multiprocessing as mp
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pearl_py.runtime.parallel.actor import ActorSpec, run_actor
from pearl_py.runtime.parallel.control import ControlBlock
from pearl_py.runtime.parallel.process import ProcessGuard

log = logging.getLogger("pearl_py.runtime.parallel")

JOIN_TIMEOUT_S = 5.0

_CONTEXT = mp.get_context("spawn")


SPAWN_FAILED = ("exit code 1 before it started (its traceback is on stderr): a script that trains on a parallel "
                "plan must call pearl.train under `if __name__ == \"__main__\":`, since each spawned process "
                "imports the script again (docs/api.md)")
"""A child that failed before its entry point (no error file): most often a script without the main guard."""


class ActorFailed(RuntimeError):
    """An actor kept failing after ``max_restarts`` restarts."""


class ServiceFailed(RuntimeError):
    """A server process of the run died; the run cannot go on without it."""


@dataclass(frozen=True)
class Restart:
    """One restart: which actor, its new generation, how the old process ended, its error."""

    actor: int
    generation: int
    exitcode: int
    error: str


def _exit_error(proc: mp.process.BaseProcess, error_file: Path) -> str:
    """The traceback a failed child left (consumed), or the signal that killed it."""
    if error_file.exists():
        error = error_file.read_text().strip()
    else:
        error = (f"killed by signal {-proc.exitcode}" if proc.exitcode < 0
                 else SPAWN_FAILED if proc.exitcode == 1 else f"exit code {proc.exitcode}, no traceback")
    error_file.unlink(missing_ok=True)
    return error


def _stop(procs: list[mp.process.BaseProcess | None], control: ControlBlock) -> None:
    """Flag stop, join, terminate, kill; reap and close every process of ``procs``."""
    control.stop()
    started = [proc for proc in procs if proc is not None]
    for proc in started:
        proc.join(JOIN_TIMEOUT_S)
    for proc in started:
        if proc.is_alive():
            proc.terminate()
            proc.join(JOIN_TIMEOUT_S)
        if proc.is_alive():
            proc.kill()
            proc.join()
        proc.close()


def _spawn(target: Callable[[Any], None], spec: Any, name: str, guard: ProcessGuard | None
           ) -> mp.process.BaseProcess:
    """Start ``target(spec)`` as the daemon process ``name`` and tell ``guard`` its pid."""
    proc = _CONTEXT.Process(target=target, args=(spec,), name=name, daemon=True)
    proc.start()
    if guard is not None:
        guard.watch(proc.pid)
    return proc


class ActorPool:
    """The actor processes of a run, by index. ``target(spec)`` is the actor's entry point (the off-policy
    actor's by default; a spec has ``generation``, ``error_file`` and ``room_bell``)."""

    def __init__(self, specs: list[ActorSpec], max_restarts: int = 3, guard: ProcessGuard | None = None,
                 target: Callable[[Any], None] = run_actor) -> None:
        self.specs = list(specs)
        self.max_restarts = max_restarts
        self.target = target
        self.guard = guard
        """Told every actor's pid as it starts (kills them should the run's process die first)."""
        self.restarts: list[Restart] = []
        self._procs: list[mp.process.BaseProcess | None] = [None] * len(specs)

    def start(self) -> None:
        for i in range(len(self.specs)):
            self._launch(i)

    def _launch(self, i: int) -> None:
        self._procs[i] = _spawn(self.target, self.specs[i], f"pearl-actor-{i}", self.guard)

    def wake(self) -> None:
        """Ring every actor's ``room_bell``: the limit rose, a held-back actor may collect again."""
        for spec in self.specs:
            if spec.room_bell is not None:
                spec.room_bell.ring()

    @property
    def pids(self) -> list[int]:
        """Process ids of the actors currently alive."""
        return [p.pid for p in self._procs if p is not None and p.is_alive()]

    def check(self) -> list[Restart]:
        """Restart actors that exited with an error; raise :class:`ActorFailed` past ``max_restarts``."""
        done = []
        for i, proc in enumerate(self._procs):
            if proc is None or proc.exitcode in (None, 0):
                continue
            spec = self.specs[i]
            error = _exit_error(proc, Path(spec.error_file))
            exitcode = proc.exitcode
            proc.close()
            self._procs[i] = None
            if spec.generation >= self.max_restarts:
                raise ActorFailed(f"actor {i} failed {spec.generation + 1} times; last error:\n{error}")
            self.specs[i] = dataclasses.replace(spec, generation=spec.generation + 1)
            restart = Restart(i, spec.generation + 1, exitcode, error.splitlines()[-1] if error else "")
            log.warning("actor %d exited (%s); restarted as generation %d", i, restart.error, restart.generation)
            self._launch(i)
            self.restarts.append(restart)
            done.append(restart)
        return done

    @property
    def finished(self) -> bool:
        """Whether every actor has exited successfully (its quota done)."""
        return all(p is not None and p.exitcode == 0 for p in self._procs)

    def close(self, control: ControlBlock) -> None:
        """Stop every actor: flag, wake, join, terminate, kill; reap them all. Idempotent."""
        control.stop()
        self.wake()  # a held-back actor sees the stop now, not after its doorbell wait times out
        _stop(self._procs, control)
        self._procs = [None] * len(self._procs)


class Service:
    """One supervised server process: started once, never restarted; its death fails the run."""

    def __init__(self, name: str, target: Callable[[Any], None], spec: Any, error_file: str,
                 guard: ProcessGuard | None = None) -> None:
        self.name = name
        self._target, self._spec, self._error_file = target, spec, Path(error_file)
        self._guard = guard
        self._proc: mp.process.BaseProcess | None = None
        self._failure: ServiceFailed | None = None

    def start(self) -> None:
        self._proc = _spawn(self._target, self._spec, f"pearl-{self.name}", self._guard)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None and self._proc.is_alive() else None

    def check(self) -> None:
        """Raise :class:`ServiceFailed` (with the server's last error) if the process has exited."""
        proc = self._proc
        if self._failure is None and proc is not None and proc.exitcode is not None:
            error = _exit_error(proc, self._error_file) if proc.exitcode else "it returned before the run ended"
            self._failure = ServiceFailed(f"the {self.name} (pid {proc.pid}) exited with code {proc.exitcode}; "
                                          f"the run cannot continue without it. Its last error:\n{error}")
        if self._failure is not None:
            raise self._failure

    def close(self, control: ControlBlock) -> None:
        """Stop the server: flag, join, terminate, kill; reap it. Idempotent."""
        _stop([self._proc], control)
        self._proc = None
