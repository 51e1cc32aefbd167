"""The serial executor: the whole protocol in one process, in order — the reference run.

Deterministic for a seed (bit for bit): one vector step, its transitions into the replay, the per-step hook, then a
training round when the schedule says so (:mod:`pearl_py.runtime.collect`), each part where the plan puts it
(:mod:`pearl_py.runtime.kernel_devices`). SIGINT or SIGTERM stops it after the vector step in progress and its round,
with the stop checkpoint written (``RunInterrupted``; :mod:`pearl_py.runtime.checkpoints`).

Example::

    >>> result = SerialExecutor(pearl.DQN("CartPole-v1"), seed=0).run(total_steps=5_000)
    >>> result.env_steps
    5000
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import torch

from pearl_py import kernels
from pearl_py.algorithms.off_policy.base import Algorithm
from pearl_py.algorithms.off_policy.learner import Learner, TensorBatch, UpdateResult
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
from pearl_py.protocol.schedule import TrainSchedule
from pearl_py.runtime.acting import ActingNetworks
from pearl_py.runtime.collect import Collector, LossMeans, TimedReplay, gradient_step, round_progress_remaining
from pearl_py.runtime.device_replay import replay_from_state, replay_on
from pearl_py.runtime.first_calls import warm_up
from pearl_py.runtime.kernel_devices import (
    REPLAY_KERNELS,
    check_runnable,
    device_of,
    kernel_devices,
    simulated_kernels,
    timing_devices,
)
from pearl_py.runtime.monitor import VariantSwitch
from pearl_py.runtime.parallel.checkpoint import Progress
from pearl_py.runtime.parallel.interrupts import RunInterrupted, StopSignals
from pearl_py.runtime.result import RunResult
from pearl_py.runtime.session import SessionExecutor
from pearl_py.runtime.timing import KernelTimer, merge_kernel_times, record_loop_work


class SerialExecutor(SessionExecutor):
    """Runs collection and learning alternately in this process, timing every kernel; ``options``: the
    :class:`~pearl_py.runtime.session.SessionExecutor`'s."""

    def __init__(self, algorithm: Algorithm, seed: int = 0, *, plan: Plan | None = None, threads: int | None = None,
                 **options: Any) -> None:
        super().__init__(algorithm, plan or Plan.single_device(algorithm.protocol(serialized=True)), seed, **options)
        self.threads = threads if threads is not None else self.plan.learner_threads
        """Torch intra-op threads of this process (default: the plan's learner threads, ``Plan.learner_threads``;
        1 in the default plan, one core per process as the cost models are calibrated)."""
        check_runnable(self.plan, family=algorithm.family)
        self.devices = kernel_devices(self.plan)
        """Each kernel's torch device (the plan's placements on this machine)."""

    @property
    def device(self) -> torch.device:
        """The learner's device."""
        return self.devices[LEARNER_UPDATE]

    def run(self, total_steps: int) -> RunResult:
        algo, cfg = self.algorithm, self.algorithm.config
        session = self.session(total_steps)
        session.seed_torch(self.threads)
        learner = Learner(algo, self.device)
        replay_state = session.restore(learner)
        done = session.progress
        update = self._learner_update(learner)
        acting = ActingNetworks(algo, learner, self.devices[INFERENCE])
        infer = self._inference(algo, acting)
        timer = KernelTimer(timing_devices(self.plan))
        log = session.open_log(lambda: timer.summary(wait=False))
        collector = Collector(algo, session.env_seed, timer.add, timed=timer,
                              env_variant=self.plan.variant(ENV_STEP))
        replay_device = self.devices[REPLAY_INSERT]
        replay = (replay_from_state(replay_state, replay_device) if replay_state is not None
                  else replay_on(algo, self.seed, replay_device))
        timed_replay = TimedReplay(replay, timer)
        warm_up(algo, replay_device=replay_device, infer=infer)  # first calls in the start-up, not the timed ones
        schedule = TrainSchedule.from_config(cfg, total_steps)
        session.evaluate_with(learner)
        steps = done.transitions
        vector_steps = steps // cfg.n_envs
        with contextlib.ExitStack() as stack:
            for close in (log.close, replay.close, collector.close):  # closed in the reverse order
                stack.callback(close)
            threads = stack.enter_context(LearnerThreads(self.threads))
            signals = stack.enter_context(StopSignals())
            # the fused and reference updates share the learner's memory: the monitor may switch between them
            switch = VariantSwitch(threads, self.plan.variant(LEARNER_UPDATE), update,
                                   lambda variant: self._learner_update(learner, variant))
            update = session.watch(switch, switch, modes=True)
            session.clock.start()

            def rate() -> float:
                """Env steps per training second of this session."""
                return (steps - done.transitions) / max(session.clock.session_seconds, 1e-9)

            def reached() -> Progress:
                """The run's progress at ``steps`` env steps: what a checkpoint records."""
                return session.snapshot([timer.summary()], transitions=steps,
                                        episodes=done.episodes + collector.episodes)

            while steps < total_steps:
                progress = steps / total_steps
                policy = None if steps < algo.random_warmup_steps else (
                    lambda obs: infer(obs, explore=True, progress=progress))  # noqa: B023 (called at once)
                step = collector.step(policy)
                with timer(REPLAY_INSERT):
                    stored = step.env_step or step           # the env's transitions; samples are normalized
                    replay.add(stored.obs, stored.actions, stored.rewards, stored.next_obs, stored.terminated)
                for _, episode_return, length in step.ended:
                    log.episode(steps + cfg.n_envs, episode_return, length)
                steps += cfg.n_envs
                vector_steps += 1
                algo.after_env_step(learner.nets, vector_steps)
                if schedule.is_round(vector_steps):
                    learner.set_learning_rate(round_progress_remaining(schedule, vector_steps))
                    means = LossMeans()
                    for _ in range(cfg.gradient_steps):
                        means.add(gradient_step(timed_replay, update, cfg.batch_size, algo.beta_at(progress),
                                                self.device, timer, algo.obs_transform))
                    if acting.copied:
                        with timer(PARAM_SYNC):
                            acting.sync()
                    log.train(steps, means.pending(timer.events_of(LEARNER_UPDATE)), rate())
                    session.round_ended(steps, learner.gradient_steps, timer)
                session.evaluate(steps - cfg.n_envs, steps, cfg.n_envs)
                if session.mode_switch:  # at the round boundary, its evaluations done: the other mode goes on
                    session.switch_mode(learner.state_dict(), replay.state_dict(), reached())
                if session.due(steps):
                    session.checkpoint(learner.state_dict(), replay.state_dict(), reached())
                log.tick(steps, rate)
                if signals.requested:  # a consistent point: the step's transitions are in, its round is done
                    saved = session.stop_checkpoint(learner.state_dict(), replay.state_dict(), reached())
                    raise RunInterrupted(signals.requested, saved)
            timer.flush()  # the GPU's queued work is part of the training time
            session.clock.stop()
            record_loop_work(timer, session.clock.session_seconds, (steps - done.transitions) // cfg.n_envs)
        self.learner = learner
        executed_on = {k: "cpu" for k in self.plan.placements}  # env_step and simulated kernels: the host
        executed_on.update({INFERENCE: device_of(acting.nets), LEARNER_UPDATE: device_of(learner.nets),
                            **{k: device_of(replay) for k in self.plan.placements if k in REPLAY_KERNELS},
                            PARAM_SYNC: device_of(learner.nets)})
        return session.result(env_steps=steps, executed_on=executed_on, gradient_steps=learner.gradient_steps,
                                eval_returns=session.final_evaluation(learner.nets, self.device),
                                kernel_times=merge_kernel_times([done.kernel_times, timer.summary()],
                                                                simulated_kernels(self.plan)),
                                episodes=done.episodes + collector.episodes, backend="serial")

    def _learner_update(self, learner: Learner, variant: str | None = None) -> Callable[[TensorBatch], UpdateResult]:
        """The ``learner_update`` variant from ``pearl_py.kernels`` (default: the plan's; "reference":
        ``learner.update``)."""
        return build_learner_update(learner, variant or self.plan.variant(LEARNER_UPDATE))

    def _inference(self, algo: Algorithm, acting: ActingNetworks) -> kernels.inference.Inference:
        """The plan's ``inference`` variant from ``pearl_py.kernels`` ("reference": ``algo.act`` under
        ``no_grad``, what this loop always ran) on inference's networks; built after ``torch.manual_seed(seed)``."""
        return kernels.build(INFERENCE, self.plan.variant(INFERENCE),
                             algo, acting.nets, device_class=kernels.device_class(acting.device))
