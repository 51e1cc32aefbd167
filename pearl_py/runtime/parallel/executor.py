"""``ParallelExecutor``: a plan executed by actor processes and a learner, concurrently.

Actors (``env_step`` replicas, one process and one torch thread each) step their vector envs and infer, or ask a
central inference server; the learner consumes transitions exactly as the serial schedule would (from its replay or
a replay server's) and publishes parameters through shared memory (the mode is the plan's, :mod:`placement`, unless
``inference``/``replay`` say). Ctrl-C, SIGTERM or a crash write ``out_dir/checkpoint`` that ``resume_from``
continues; no child process or shared-memory segment outlives ``run``. docs/runtime.md.

Example::

    >>> algo = pearl.DQN("CartPole-v1", batch_size=64, train_freq=256, gradient_steps=128)
    >>> plan = Plan.single_device(algo.protocol())
    >>> result = ParallelExecutor(algo, plan, seed=0, out_dir=Path("runs/dqn")).run(50_000)
    >>> result.backend, result.env_steps
    ('local-parallel', 50000)
    >>> # after Ctrl-C (RunInterrupted): continue where it stopped
    >>> ParallelExecutor(algo, plan, seed=0, out_dir=Path("runs/dqn"), resume_from=Path("runs/dqn")).run(50_000)
    >>> # a replay server process and central batched inference, whatever the plan says
    >>> result = ParallelExecutor(algo, plan, seed=0, replay="server", inference="central").run(50_000)
    >>> result.layout["replay"]
    'server process (prefetch 4, strict priority order)'
    >>> result.layout[INFERENCE]
    'central on cpu (one server process, batched over the actors)'
"""
from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from pathlib import Path
from typing import Any

from pearl_py.algorithms.off_policy.base import Algorithm
from pearl_py.algorithms.off_policy.learner import Learner
from pearl_py.kernels.affinity import LearnerThreads
from pearl_py.kernels.registry import build_learner_update
from pearl_py.plan import Plan
from pearl_py.protocol.kernel import (
    ENV_STEP,
    INFERENCE,
    LEARNER_UPDATE,
    PARAM_SYNC,
    REPLAY_INSERT,
)
from pearl_py.protocol.schedule import (
    DEFAULT_POLICY_LAG,
    DEFAULT_SYNC_EVERY,
    TrainSchedule,
)
from pearl_py.runtime.device_replay import replay_from_state, replay_on
from pearl_py.runtime.first_calls import warm_up
from pearl_py.runtime.kernel_devices import (
    REPLAY_KERNELS,
    check_runnable,
    device_of,
    kernel_devices,
    timing_devices,
)
from pearl_py.runtime.monitor import VariantSwitch
from pearl_py.runtime.parallel.actor import ActorSpec, ring_fields
from pearl_py.runtime.parallel.control import SERVICES, ControlBlock
from pearl_py.runtime.parallel.feed import RingFeed
from pearl_py.runtime.parallel.interrupts import RunInterrupted, StopSignals
from pearl_py.runtime.parallel.learner_loop import LearnerLoop, LoopParts, StopRequested
from pearl_py.runtime.parallel.params import ParamBoard
from pearl_py.runtime.parallel.placement import RuntimeLayout
from pearl_py.runtime.parallel.process import (
    Doorbell,
    ProcessGuard,
    sweep_stale_segments,
)
from pearl_py.runtime.parallel.replay_access import LocalReplay
from pearl_py.runtime.parallel.ring import ShmRing
from pearl_py.runtime.parallel.shared_statistics import SharedStatistics
from pearl_py.runtime.parallel.services import (
    start_inference_server,
    start_replay_server,
)
from pearl_py.runtime.parallel.supervisor import ActorPool, Service, ServiceFailed, log
from pearl_py.runtime.result import RunResult
from pearl_py.runtime.session import ModeSwitched, RunSession, SessionExecutor
from pearl_py.runtime.timing import KernelTimer, merge_kernel_times

MIN_RING_RECORDS = 1024
"""Ring slots per actor at least (room to run ahead during the warm-up, when the window does not bind)."""

SHM_PREFIX = "pearl"
"""Shared-memory segments of a run are named ``pearl-<pid>-<token>-<role>``."""


class ActorProcessExecutor(SessionExecutor):
    """What both local parallel executors share: actor processes restarted up to ``max_restarts`` times, the learner
    in this process, and the shared segments every run opens first (:meth:`_open`)."""

    def __init__(self, algorithm: Any, plan: Plan, seed: int = 0, *, max_restarts: int = 3, **options: Any) -> None:
        super().__init__(algorithm, plan, seed, **options)
        self.max_restarts = max_restarts
        self.restarts: list = []
        """Actor restarts of the last run (:class:`supervisor.Restart`)."""
        self.learner: Any = None
        """The learner of the current (or last) run; ``learner.gradient_steps`` shows its progress."""
        self._pool: ActorPool | None = None

    @property
    def actor_pids(self) -> list[int]:
        """Process ids of the live actors (empty outside ``run``)."""
        return self._pool.pids if self._pool is not None else []

    def _open(self, stack: contextlib.ExitStack, learner: Any, actors: int
              ) -> tuple[str, ProcessGuard, ControlBlock, ParamBoard, SharedStatistics | None, Path]:
        """The run's segment prefix, process guard, control block, parameter board, shared statistics (with
        ``normalize``) and the actors' error folder; ``stack`` undoes it all in reverse."""
        algo = self.algorithm
        sweep_stale_segments(SHM_PREFIX)  # of runs killed with their guard (logged)
        prefix = f"{SHM_PREFIX}-{os.getpid()}-{secrets.token_hex(4)}"
        guard = ProcessGuard.start(prefix)  # first: closed last, once every child and segment is gone
        stack.callback(guard.close)
        control = ControlBlock.create(actors, f"{prefix}-ctl")
        stack.callback(control.close)
        board = ParamBoard.create(learner.nets.acting_state(algo.acting_networks), f"{prefix}-params",
                                 tag=learner.gradient_steps)
        stack.callback(board.close)
        statistics = None
        if algo.obs_transform is not None:  # the session's base: the restored statistics, if resuming
            statistics = SharedStatistics.create(algo.obs_transform, actors, f"{prefix}-stats")
            stack.callback(statistics.close)
        errors = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="pearl-actors-")))
        return prefix, guard, control, board, statistics, errors

    def _start_pool(self, stack: contextlib.ExitStack, pool: ActorPool, control: ControlBlock) -> StopSignals:
        """Start ``pool`` (closed by ``stack``) under the run's stop signals."""
        self._pool, self.restarts = pool, pool.restarts
        stack.callback(setattr, self, "_pool", None)
        stack.callback(pool.close, control)
        signals = stack.enter_context(StopSignals())
        pool.start()
        return signals


class ParallelExecutor(ActorProcessExecutor):
    """Runs ``algorithm`` under ``plan`` with actor processes and a learner; see the module docstring. ``options``:
    the :class:`~pearl_py.runtime.session.SessionExecutor`'s (periodic checkpoints after a training round, with the
    replay in the learner's process only: a replay server's state is taken when the run stops)."""

    def __init__(self, algorithm: Algorithm, plan: Plan, seed: int = 0, *, sync_every: int = DEFAULT_SYNC_EVERY,
                 lookahead_rounds: int = 1, max_policy_lag: int | None = DEFAULT_POLICY_LAG,
                 inference: str | None = None, replay: str | None = None,
                 replay_prefetch: int = 4, replay_order: str = "strict", **options: Any) -> None:
        super().__init__(algorithm, plan, seed, **options)
        self.sync_every = sync_every
        """Publish the acting networks to the actors every this many updates (the plan's K)."""
        self.lookahead_rounds = lookahead_rounds
        """Training rounds of data actors may collect ahead of the learner."""
        self.max_policy_lag = max_policy_lag
        """Updates the actors' parameters may trail the serial order (:class:`TrainSchedule`; None: unbounded)."""
        self.inference = inference
        """``"actor"``, ``"central"`` or None (as the plan places inference; :mod:`placement`)."""
        self.replay = replay
        """``"colocated"``, ``"server"`` or None (as the plan places the replay kernels)."""
        self.replay_prefetch = replay_prefetch
        """Batches a replay server may draw ahead of the learner."""
        self.replay_order = replay_order
        """Prioritized replay behind a server: ``"strict"`` (serial order) or ``"relaxed"`` (see docs/runtime.md)."""
        self._replay_device = "cpu"
        """Where the current run's replay lives when the learner holds it (device_of its buffer)."""
        self._services: dict[str, Service] = {}

    @property
    def server_pids(self) -> dict[str, int]:
        """Process ids of the live servers by name (``"replay server"``, ``"inference server"``)."""
        return {name: s.pid for name, s in self._services.items() if s.pid is not None}

    def run(self, total_steps: int) -> RunResult:
        algo = self.algorithm
        check_runnable(self.plan, family=algo.family)
        layout = RuntimeLayout.from_plan(self.plan, inference=self.inference, replay=self.replay,
                                         replay_prefetch=self.replay_prefetch, replay_order=self.replay_order)
        schedule = TrainSchedule.from_config(algo.config, total_steps, lookahead_rounds=self.lookahead_rounds,
                                             max_policy_lag=self.max_policy_lag)
        session = self.session(total_steps)
        session.seed_torch(layout.learner_threads)  # the plan's; actors and servers set their own (one)
        learner = self.learner = Learner(algo, layout.learner_device)
        replay_state = session.restore(learner)
        progress = session.progress
        timer = KernelTimer(timing_devices(self.plan))
        log = session.open_log()
        session.evaluate_with(learner)
        with contextlib.ExitStack() as stack:
            stack.callback(log.close)
            parts = self._start(stack, layout, schedule, learner, replay_state, session, timer)
            if layout.replay != "server":  # while the actors start (a replay server warms its own up)
                warm_up(algo, replay_device=self._replay_device)
            log.kernel_times = lambda: merge_kernel_times([timer.summary(wait=False), parts.control.kernel_times()],
                                                           {})
            threads = stack.enter_context(LearnerThreads(layout.learner_threads))  # after the actors started: free
            # the fused and reference updates share the learner's memory: the monitor may switch between them at a
            # round boundary (another variant is built then, in this process, the learner's)
            switch = VariantSwitch(threads, layout.learner_variant, parts.update,
                                   lambda variant: build_learner_update(learner, variant))
            # a replay server's state is taken only when the run stops: a run changes mode with the learner's replay
            parts.update = session.watch(switch, switch, modes=layout.replay != "server")
            loop = LearnerLoop(parts, progress, self.sync_every)
            try:
                loop.run()
            except ModeSwitched:
                raise  # its checkpoint is written: the serial executor goes on from it
            except BaseException as exc:
                saved = self._checkpoint_after(exc, loop, parts)
                if isinstance(exc, StopRequested):
                    raise RunInterrupted(exc.signal_name, saved) from None
                raise
            session.clock.stop()
            progress.max_policy_lag = max(progress.max_policy_lag, parts.control.max_policy_lag)
            times = merge_kernel_times([progress.kernel_times, timer.summary(), parts.control.kernel_times()],
                                       layout.simulated)
            served = {service: parts.control.built_on(service) or "not reported" for service in SERVICES}
        replay_device = served["replay"] if layout.replay == "server" else self._replay_device
        executed_on = {k: "cpu" for k in self.plan.placements}  # actors and simulated kernels: the host
        executed_on.update({LEARNER_UPDATE: device_of(learner.nets), PARAM_SYNC: device_of(learner.nets),
                            **{k: replay_device for k in self.plan.placements if k in REPLAY_KERNELS}})
        if layout.inference == "central":  # what the servers built, as they reported it
            executed_on[INFERENCE] = served[INFERENCE]
        return session.result(env_steps=progress.transitions, executed_on=executed_on,
                              gradient_steps=learner.gradient_steps,
                              eval_returns=session.final_evaluation(learner.nets, learner.device),
                              kernel_times=times, episodes=progress.episodes, backend="local-parallel",
                              policy_lag={"bound": self.max_policy_lag, "max_observed": progress.max_policy_lag},
                              layout=layout.describe())

    def _start(self, stack: contextlib.ExitStack, layout: RuntimeLayout, schedule: TrainSchedule,
               learner: Learner, replay_state: dict | None, session: RunSession, timer: KernelTimer) -> LoopParts:
        """Create the shared segments and start the actors; ``stack`` undoes it all in reverse."""
        algo, n, progress = self.algorithm, self.algorithm.config.n_envs, session.progress
        prefix, guard, control, board, statistics, errors = self._open(stack, learner, layout.actors)
        rings = []
        for i in range(layout.actors):
            capacity = ring_capacity(schedule, layout.actors)
            ring = ShmRing.create(ring_fields(algo), capacity, f"{prefix}-ring{i}")
            stack.callback(ring.close)
            rings.append(ring)
        base_seed = session.env_seed
        done = progress.transitions // n
        stack.callback(self._services.clear)
        if layout.replay == "server":
            replay, self._services["replay server"] = start_replay_server(
                stack, prefix, algo, control, rings, schedule=schedule, seed=self.seed, errors=errors,
                resume=self.resume_from if replay_state is not None else None, consumed=progress.transitions,
                updates=learner.gradient_steps, prefetch=layout.replay_prefetch,
                strict=layout.replay_order == "strict", timer=timer, guard=guard)
        else:
            device = kernel_devices(self.plan)[REPLAY_INSERT]  # a GPU replay is the learner's (check_runnable)
            buffer = (replay_from_state(replay_state, device) if replay_state is not None
                      else replay_on(algo, self.seed, device))
            self._replay_device = device_of(buffer)
            stack.callback(buffer.close)
            replay = LocalReplay(RingFeed(rings, buffer, timer, n), timer)
        links = [None] * layout.actors
        if layout.inference == "central":
            central = start_inference_server(stack, prefix, algo, control, board, actors=layout.actors,
                                             variant=layout.inference_variant, device=layout.inference_device,
                                             seed=base_seed + layout.actors, total_steps=schedule.total_steps,
                                             errors=errors, guard=guard)
            links, self._services["inference server"] = central.links, central.service
        warmups = _split(max(-(-algo.random_warmup_steps // n) - done, 0), layout.actors)
        specs = [ActorSpec(algo, index=i, seed=base_seed, generation=0, quota=quota, total_steps=schedule.total_steps,
                           steps_before=done * n, ring=rings[i].name, params=board.name, control=control.name,
                           error_file=str(errors / f"actor{i}.err"), inference=layout.inference_variant,
                           env_step=self.plan.variant(ENV_STEP),
                           warmup=warmups[i], actors=layout.actors, central=links[i],
                           replay_bell=replay.server_bell if replay.remote else None, room_bell=Doorbell(),
                           statistics=statistics.name if statistics is not None else None)
                 for i, quota in enumerate(schedule.quotas(layout.actors, done))]
        signals = self._start_pool(stack, ActorPool(specs, self.max_restarts, guard), control)
        pool = self._pool
        return LoopParts(algorithm=algo, learner=learner, update=build_learner_update(learner, layout.learner_variant),
                         replay=replay, board=board, control=control, pool=pool,
                         schedule=schedule, session=session, timer=timer, signals=signals,
                         services=list(self._services.values()), periodic=self._periodic(layout, session),
                         statistics=statistics)

    def _periodic(self, layout: RuntimeLayout, session: RunSession) -> bool:
        """Whether the run writes periodic checkpoints of the learner and the local replay."""
        if session.periodic.enabled and layout.replay == "server":
            log.warning("periodic checkpoints are off: the replay runs in a server process, whose state is "
                        "taken only when the run stops (Ctrl-C, SIGTERM, a crash)")
            return False
        return session.periodic.enabled

    def _checkpoint_after(self, exc: BaseException, loop: LearnerLoop, parts: LoopParts) -> Path | None:
        """Checkpoint a run that ``exc`` ended; None without ``out_dir`` or when a server's state is lost."""
        if self.out_dir is None:
            return None
        try:
            loop.settle(finish=isinstance(exc, StopRequested))
        except ServiceFailed as failure:
            log.error("no checkpoint written: %s", str(failure).splitlines()[0])
            return None
        return parts.session.stop_checkpoint(parts.learner.state_dict(), parts.replay.state_dict(),
                                             loop.snapshot())


def ring_capacity(schedule: TrainSchedule, actors: int) -> int:
    """Records of each actor's ring: the limiter's window (at least ``MIN_RING_RECORDS``) plus a vector step of
    every actor (the slack one round's interleaving needs)."""
    return max(schedule.window, MIN_RING_RECORDS) + actors * schedule.n_envs


def _split(total: int, parts: int) -> list[int]:
    """``total`` as ``parts`` near-equal shares, the larger ones first."""
    return [total // parts + (i < total % parts) for i in range(parts)]
