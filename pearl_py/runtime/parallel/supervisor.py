"""Actor supervision: start actor processes, restart the ones that fail, stop them all.

Processes start with the ``spawn`` method (no inherited locks or CUDA state), ignore
Ctrl-C (the learner decides how the run ends), and die with their parent
(``PR_SET_PDEATHSIG``). An actor that exits non-zero before its quota is done is
restarted with the next generation's seed, up to ``max_restarts`` times, and logged.
:meth:`ActorPool.close` sets the stop flag, joins, then terminates and kills stragglers,
so no child outlives the run.

Example::

    >>> pool = ActorPool(specs, max_restarts=3)
    >>> pool.start()
    >>> pool.check()            # call often: restarts failed actors, returns what it restarted
    []
    >>> pool.close(control)     # always, in a finally
"""
from __future__ import annotations

import dataclasses
import logging
import multiprocessing as mp
from dataclasses import dataclass
from pathlib import Path

from pearl_py.runtime.parallel.actor import ActorSpec, run_actor
from pearl_py.runtime.parallel.control import ControlBlock

log = logging.getLogger("pearl_py.runtime.parallel")

JOIN_TIMEOUT_S = 5.0


class ActorFailed(RuntimeError):
    """An actor kept failing after ``max_restarts`` restarts."""


@dataclass(frozen=True)
class Restart:
    """One restart: which actor, its new generation, how the old process ended, its error."""

    actor: int
    generation: int
    exitcode: int
    error: str


class ActorPool:
    """The actor processes of a run, by index."""

    def __init__(self, specs: list[ActorSpec], max_restarts: int = 3) -> None:
        self.specs = list(specs)
        self.max_restarts = max_restarts
        self.restarts: list[Restart] = []
        self._ctx = mp.get_context("spawn")
        self._procs: list[mp.process.BaseProcess | None] = [None] * len(specs)

    def start(self) -> None:
        for i in range(len(self.specs)):
            self._launch(i)

    def _launch(self, i: int) -> None:
        proc = self._ctx.Process(target=run_actor, args=(self.specs[i],), name=f"pearl-actor-{i}", daemon=True)
        proc.start()
        self._procs[i] = proc

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
            error_file = Path(spec.error_file)
            error = error_file.read_text().strip() if error_file.exists() else f"killed by signal {-proc.exitcode}"
            error_file.unlink(missing_ok=True)
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
        """Stop every actor: flag, join, terminate, kill; reap them all. Idempotent."""
        control.stop()
        for proc in self._procs:
            if proc is not None:
                proc.join(JOIN_TIMEOUT_S)
        for proc in self._procs:
            if proc is not None and proc.is_alive():
                proc.terminate()
                proc.join(JOIN_TIMEOUT_S)
            if proc is not None and proc.is_alive():
                proc.kill()
                proc.join()
        for i, proc in enumerate(self._procs):
            if proc is not None:
                proc.close()
                self._procs[i] = None
