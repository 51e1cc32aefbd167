"""The on-policy learner's loop: allow a rollout, wait for the actors, learn on it, publish, again.

For rollout ``k`` the learner raises the control block's ``limit`` to ``k + 1``; once every actor has collected its
envs' share into the :class:`SharedRollout`, it copies the rollout (``rollout_handoff``), runs the evaluations due,
scans the advantages, learns on the serial run's minibatches and publishes (``param_sync``). Collection and learning
never overlap; between them it restarts failed actors and honours stop requests (:class:`StopRequested`).

Example (what :class:`OnPolicyParallelExecutor` does)::

    >>> loop = OnPolicyLoop(parts, progress)
    >>> loop.run()                  # returns when every rollout is learnt
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pearl_py.algorithms.on_policy.base import OnPolicyAlgorithm
from pearl_py.algorithms.on_policy.learner import OnPolicyLearner
from pearl_py.protocol.kernel import ADVANTAGE, PARAM_SYNC
from pearl_py.protocol.schedule import RolloutSchedule
from pearl_py.replay.rollout import RolloutBuffer
from pearl_py.runtime.parallel.actor import WAIT_S
from pearl_py.runtime.parallel.checkpoint import Progress
from pearl_py.runtime.parallel.control import ControlBlock
from pearl_py.runtime.parallel.interrupts import StopSignals
from pearl_py.runtime.parallel.learner_loop import HealthClock
from pearl_py.runtime.parallel.params import ParamBoard
from pearl_py.runtime.parallel.process import Doorbell
from pearl_py.runtime.parallel.shared_rollout import SharedRollout
from pearl_py.runtime.parallel.shared_statistics import SharedStatistics
from pearl_py.runtime.parallel.supervisor import ActorPool
from pearl_py.runtime.session import RunSession
from pearl_py.runtime.timing import KernelTimer

ROLLOUT_HANDOFF = "rollout_handoff"
"""The learner's copy of the shared rollout into its own storage (timed beside the kernels)."""


@dataclass
class OnPolicyLoopParts:
    """What the loop works with (built and torn down by the executor)."""

    algorithm: OnPolicyAlgorithm
    learner: OnPolicyLearner
    rollout: RolloutBuffer
    shared: SharedRollout
    board: ParamBoard
    control: ControlBlock
    pool: ActorPool
    schedule: RolloutSchedule
    session: RunSession
    """The run session: its log, clock, evaluations, checkpoints and monitor (:mod:`pearl_py.runtime.session`)."""
    timer: KernelTimer
    signals: StopSignals
    done_bell: Doorbell
    rollout_state: Callable[[], dict] = dict
    """The rollout part of a checkpoint (the minibatch generator's state)."""
    statistics: SharedStatistics | None = None
    """``normalize``: the actors' shares, merged into the algorithm's statistics once a rollout is in."""


class OnPolicyLoop:
    """Runs the session's rollouts to the end of the schedule (or to a stop request)."""

    def __init__(self, parts: OnPolicyLoopParts, progress: Progress) -> None:
        self.p = parts
        self.progress = progress
        self.learnt = progress.transitions // parts.schedule.rollout_size
        """Rollouts learnt, over all sessions."""
        self._first = self.learnt
        self.clock = parts.session.clock
        self._health = HealthClock(parts.signals)
        self.between_rollouts = True
        """False while the learner learns on a rollout (a checkpoint then would not be consistent)."""

    def run(self) -> None:
        p, size = self.p, self.p.schedule.rollout_size
        self._wait(lambda: p.control.all_ready)
        self.clock.start()  # actor start-up is not training time
        while self.learnt < p.schedule.rollouts:
            session_rollout = self.learnt - self._first
            p.control.limit = session_rollout + 1
            p.pool.wake()
            self._wait(lambda: p.control.least_produced > session_rollout)  # noqa: B023 (called here)
            self.between_rollouts = False
            with p.timer(ROLLOUT_HANDOFF):
                last_values, last_dones, ended = p.shared.copy_into(p.rollout)
            if p.statistics is not None:  # published now; the actors read them once allowed rollout k + 1
                p.statistics.combine(p.algorithm.obs_transform)
            before = self.progress.transitions
            self.progress.transitions = before + size
            for offset, episode_return, length in ended:
                p.session.log.episode(before + offset, episode_return, length)
            self.progress.episodes += len(ended)
            # the evaluations the serial run makes during this rollout's collection (same networks)
            p.session.evaluate(before, self.progress.transitions, p.schedule.n_envs)
            with p.timer(ADVANTAGE):
                p.rollout.compute_advantages(last_values, last_dones, p.algorithm.config.gamma,
                                             p.algorithm.config.gae_lambda)
            stats = p.learner.learn(p.rollout, p.schedule.progress_remaining(self.learnt + 1), p.timer)
            self.learnt += 1
            with p.timer(PARAM_SYNC):
                p.board.publish(p.learner.nets.acting_state(p.algorithm.acting_networks),
                                tag=p.learner.gradient_steps)
            self.between_rollouts = True
            p.session.log.train(self.progress.transitions, stats.as_log(), self._rate())
            p.session.log.tick(self.progress.transitions, self._rate)
            p.session.round_ended(self.progress.transitions, p.learner.gradient_steps, p.timer)
            if p.session.due(self.progress.transitions):
                # the learner, the minibatch generator and the counters so far (the actors wait meanwhile)
                p.session.checkpoint(p.learner.state_dict(), p.rollout_state(), self.snapshot())
            self._check()

    def snapshot(self) -> Progress:
        """The run's progress now (between rollouts), as a checkpoint records it."""
        return self.p.session.snapshot([self.p.timer.summary(), self.p.control.kernel_times()])

    def _wait(self, done: Callable[[], bool]) -> None:
        """Sleep on the learner's doorbell until ``done()``, honouring stop requests and restarting failed actors."""
        while not done():
            self._check(force=True)
            self.p.done_bell.wait(WAIT_S)

    def _check(self, force: bool = False) -> None:
        """Honour a stop request; every ``CHECK_EVERY_S`` (or when waiting) restart failed actors."""
        if not self._health.due(force):
            return
        self.p.pool.check()
        if force and self.p.pool.finished and self.p.control.least_produced < self.learnt - self._first + 1:
            raise RuntimeError(f"actors finished after {self.p.control.least_produced} of "
                               f"{self.p.schedule.rollouts - self._first} rollouts of this session")

    def _rate(self) -> float:
        return self.progress.transitions / max(self.clock.seconds, 1e-9)
