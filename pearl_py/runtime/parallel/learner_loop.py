"""The learner's loop: consume transitions as the schedule allows, train, publish parameters.

It replays the serial executor's order on virtual vector steps (insert, ``after_env_step``, a training round's
updates, publications every ``sync_every`` updates, evaluations). Actors collect the next ``window`` transitions only
once the learner is within ``max_policy_lag`` updates of the serial order; between updates it restarts failed actors
and honours stop requests (a :class:`StopRequested` leaves the learner consistent). The replay is reached through
:mod:`~pearl_py.runtime.parallel.replay_access` (this process, or a replay server :meth:`LearnerLoop.settle` stops).

Example (what :class:`ParallelExecutor` does)::

    >>> loop = LearnerLoop(parts, progress, sync_every=1)
    >>> loop.run()                  # returns when the schedule is done
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from pearl_py.algorithms.off_policy.base import Algorithm
from pearl_py.algorithms.off_policy.learner import Learner, TensorBatch, UpdateResult
from pearl_py.protocol.kernel import LEARNER_UPDATE, PARAM_SYNC
from pearl_py.protocol.schedule import TrainSchedule
from pearl_py.runtime.collect import LossMeans, gradient_step, round_beta, round_progress_remaining
from pearl_py.runtime.parallel.checkpoint import Progress
from pearl_py.runtime.parallel.control import ControlBlock
from pearl_py.runtime.parallel.interrupts import StopSignals
from pearl_py.runtime.parallel.params import ParamBoard
from pearl_py.runtime.parallel.replay_access import (
    LocalReplay,
    ServedReplay,
)
from pearl_py.runtime.parallel.shared_statistics import SharedStatistics
from pearl_py.runtime.parallel.supervisor import ActorPool, Service
from pearl_py.runtime.session import RunSession
from pearl_py.runtime.timing import KernelTimer

CHECK_EVERY_S = 0.05
"""How often the learner looks at the actors' health while it trains."""


class StopRequested(Exception):
    """Ctrl-C or SIGTERM arrived; raised between two updates."""

    def __init__(self, signal_name: str) -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name


class HealthClock:
    """When a learner loop looks at its processes' health: a stop request raises :class:`StopRequested` at
    once; a health check is due every ``CHECK_EVERY_S`` of training, or whenever forced (while waiting)."""

    def __init__(self, signals: StopSignals) -> None:
        self.signals = signals
        self.last = 0.0

    def due(self, force: bool = False) -> bool:
        if self.signals.requested:
            raise StopRequested(self.signals.requested)
        now = time.perf_counter()
        if not force and now - self.last < CHECK_EVERY_S:
            return False
        self.last = now
        return True


@dataclass
class LoopParts:
    """What the learner loop works with (built and torn down by the executor)."""

    algorithm: Algorithm
    learner: Learner
    update: Callable[[TensorBatch], UpdateResult]
    replay: LocalReplay | ServedReplay
    board: ParamBoard
    control: ControlBlock
    pool: ActorPool
    schedule: TrainSchedule
    session: RunSession
    """The run session: its log, clock, evaluations, checkpoints and monitor (:mod:`pearl_py.runtime.session`)."""
    timer: KernelTimer
    signals: StopSignals
    services: list[Service] = field(default_factory=list)
    """Server processes whose failure fails the run (replay server, inference server)."""
    periodic: bool = False
    """Whether periodic checkpoints of the learner and the (local) replay are taken after a training round."""
    statistics: SharedStatistics | None = None
    """``normalize``: the actors' shares, merged into the algorithm's statistics at each publication, before a
    checkpoint and at the end (the samples are normalized with them)."""


class LearnerLoop:
    """Runs the training schedule to its end (or to a stop request)."""

    def __init__(self, parts: LoopParts, progress: Progress, sync_every: int = 1) -> None:
        self.p = parts
        self.progress = progress
        self.sync_every = max(int(sync_every), 1)
        self._published = parts.learner.gradient_steps
        """Gradient steps of the parameters last published to the actors."""
        self.clock = parts.session.clock
        self.log = parts.session.log
        self._health = HealthClock(parts.signals)
        self._session_start = progress.transitions
        self.step = progress.transitions // parts.schedule.n_envs
        """The vector step the learner is at (a training round's, while it trains)."""
        parts.replay.wait = self._wait

    def run(self) -> None:
        p = self.p
        self._health.last = time.perf_counter()
        p.control.limit = p.schedule.actor_limit(self.progress.transitions, p.learner.gradient_steps)
        p.pool.wake()
        while True:
            step = self.step
            due = p.schedule.updates_until(step)
            if p.learner.gradient_steps < due:
                self._train_round(step, due)
                self._maybe_evaluate(step)
                if p.session.mode_switch:  # the round's evaluations done: the run goes on serialized
                    self.merge_statistics()
                    p.session.switch_mode(p.learner.state_dict(), p.replay.state_dict(), self.snapshot())
                continue
            if step >= p.schedule.vector_steps:
                p.replay.finish()
                self.merge_statistics()  # every actor has posted its last share: the run's statistics are final
                return
            self._advance()

    def _advance(self) -> None:
        """Insert transitions up to the next training step and run the per-step hooks."""
        p, n = self.p, self.p.schedule.n_envs
        moved, episodes = p.replay.take(p.schedule.next_round(self.step) * n - self.progress.transitions)
        if not moved:
            self._check(force=True)
            p.replay.nap()
            return
        self.clock.start()  # training time starts with the first transition or update (actor start-up excluded)
        self._absorb(moved, episodes)
        self._check()

    def _absorb(self, moved: int, episodes: list[tuple[int, float, int]]) -> None:
        """Account for ``moved`` new transitions: log episodes, per-step hooks, actor limit, ``self.step``."""
        p, n = self.p, self.p.schedule.n_envs
        step, inserted = self.step, self.progress.transitions
        for offset, episode_return, length in episodes:
            self.log.episode(inserted + offset + 1, episode_return, length)
        self.progress.episodes += len(episodes)
        self.progress.transitions = inserted + moved
        self._raise_limit()
        p.pool.wake()  # the rings have room again, and the limit may have risen
        self.step = self.progress.transitions // n
        for j in range(step + 1, self.step + 1):
            p.algorithm.after_env_step(p.learner.nets, j)
            if not p.schedule.is_round(j):
                self._maybe_evaluate(j)
        self.log.tick(self.progress.transitions, self._rate)

    def _train_round(self, step: int, due: int) -> None:
        p = self.p
        self.clock.start()
        beta = round_beta(p.algorithm, p.schedule, step)
        means = LossMeans()
        while p.learner.gradient_steps < due:
            means.add(self._update(beta, step))
            self._check()
        self.log.train(step * p.algorithm.config.n_envs, means.pending(p.timer.events_of(LEARNER_UPDATE)),
                       self._rate())
        p.session.round_ended(self.progress.transitions, p.learner.gradient_steps, p.timer)
        if p.periodic and p.session.due(self.progress.transitions):
            # the learner, the replay (every drained transition in it) and the counters so far; the actors run on
            # meanwhile (their rings are drained after), and the statistics hold what they have counted so far
            self.merge_statistics()
            p.session.checkpoint(p.learner.state_dict(), p.replay.state_dict(), self.snapshot())

    def snapshot(self) -> Progress:
        """The run's progress now, as a checkpoint records it."""
        p = self.p
        return p.session.snapshot([p.timer.summary(), p.control.kernel_times()],
                                  max_policy_lag=max(self.progress.max_policy_lag, p.control.max_policy_lag))

    def _update(self, beta: float, step: int) -> UpdateResult:
        p = self.p
        p.replay.round_step = step
        p.learner.set_learning_rate(round_progress_remaining(p.schedule, step))
        out = gradient_step(p.replay, p.update, p.algorithm.config.batch_size, beta, p.learner.device, p.timer,
                            p.algorithm.obs_transform)
        p.replay.finished_update(p.learner.gradient_steps)
        if p.learner.gradient_steps % self.sync_every == 0:
            self._publish()
        if self._raise_limit():
            p.pool.wake()
        return out

    def _publish(self) -> None:
        with self.p.timer(PARAM_SYNC):
            self.merge_statistics()
            # looked up at each publish: a fused update built mid-run (a variant switch) moves the tensors' storage
            self.p.board.publish(self.p.learner.nets.acting_state(self.p.algorithm.acting_networks),
                                 tag=self.p.learner.gradient_steps)
        self._published = self.p.learner.gradient_steps

    def merge_statistics(self) -> None:
        """``normalize``: the algorithm's statistics become the session's base merged with every actor's share."""
        if self.p.statistics is not None:
            self.p.statistics.remerge(self.p.algorithm.obs_transform)

    def _raise_limit(self) -> bool:
        """Let actors collect as far as the schedule allows, publishing first where the policy lag needs it; whether
        the limit rose (the caller wakes the actors)."""
        p = self.p
        limit = p.schedule.actor_limit(self.progress.transitions, p.learner.gradient_steps)
        if limit <= p.control.limit:
            return False
        if self._published < p.schedule.params_needed(limit):
            self._publish()
        p.control.limit = limit
        return True

    def _maybe_evaluate(self, step: int) -> None:
        n = self.p.schedule.n_envs
        self.p.session.evaluate((step - 1) * n, step * n, n)

    def settle(self, finish: bool) -> None:
        """Before a checkpoint: pause a replay server, train on the batches it drew (``finish``: a stop request, so a
        resumed run draws the next batch as this one would; else they are drawn again), catch up with every
        transition and ``normalize`` update posted."""
        p = self.p
        self.merge_statistics()
        if not p.replay.remote:
            return
        p.replay.pause()
        while finish and p.replay.outstanding():
            # a batch of a later round than the learner has reached (a stop can land while it takes the
            # transitions before that round): account for them first, as the serial order inserts before training
            step = p.replay.next_round_step()
            self._catch_up(step * p.schedule.n_envs)
            self._update(round_beta(p.algorithm, p.schedule, step), step)
        self._catch_up(p.control.consumed)

    def _catch_up(self, transitions: int) -> None:
        """Account for the transitions the replay server inserted, up to ``transitions`` in all."""
        moved, episodes = self.p.replay.take(transitions - self.progress.transitions)
        if moved:
            self._absorb(moved, episodes)

    def _wait(self) -> None:
        """While the learner waits on the replay server: stop requests, health checks, until it rings."""
        self._check()
        self.p.replay.nap()

    def _check(self, force: bool = False) -> None:
        """Honour a stop request; every ``CHECK_EVERY_S`` (or when idle) restart failed actors, check servers."""
        if not self._health.due(force):
            return
        self.p.pool.check()
        for service in self.p.services:
            service.check()
        produced = self._session_start + self.p.control.produced
        if force and self.p.pool.finished and produced < self.p.schedule.env_steps:
            raise RuntimeError(f"actors finished after {produced} of {self.p.schedule.env_steps} transitions")

    def _rate(self) -> float:
        return self.progress.transitions / max(self.clock.seconds, 1e-9)
