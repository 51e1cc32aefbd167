"""The serial executor: the whole protocol in one process, in order — the reference run.

Deterministic for a seed: the same seed gives the same returns, bit for bit. It drives the
loop's two halves (:mod:`pearl_py.runtime.collect`) in the serial order: one vector step,
its transitions into the replay, the per-step hook, then a training round when the schedule
says so. Each part runs where the plan puts it (:mod:`pearl_py.runtime.kernel_devices`): the
learner, inference and the replay on their planned devices (a GPU replay is a
``TorchReplayBuffer``; inference apart from the learner acts on a copy refreshed once per
round, the plan's ``param_sync``), kernels on a GPU timed by CUDA events, kernels on a
simulated device run on the CPU and charged their modelled time. SIGINT or SIGTERM stops it after the vector
step in progress (and its training round): it writes the stop checkpoint (``out_dir/checkpoint``) that
``resume_from`` continues from and raises ``RunInterrupted`` naming it (:mod:`pearl_py.runtime.checkpoints`).

Example::

    >>> result = SerialExecutor(pearl.DQN("CartPole-v1"), seed=0).run(total_steps=5_000)
    >>> result.env_steps
    5000
"""
from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

import torch

from pearl_py import kernels
from pearl_py.algorithms.off_policy.base import Algorithm
from pearl_py.algorithms.off_policy.learner import Learner, TensorBatch, UpdateResult
from pearl_py.kernels.affinity import LearnerThreads
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
from pearl_py.runtime.checkpoints import (
    CheckpointOptions,
    PeriodicCheckpoints,
    restore,
    session_log_dir,
    session_seed,
)
from pearl_py.runtime.collect import Collector, LossMeans, TimedReplay, gradient_step, round_progress_remaining
from pearl_py.runtime.device_replay import replay_from_state, replay_on
from pearl_py.runtime.evaluation import EVAL_SEED_OFFSET, PeriodicEvaluation, evaluate
from pearl_py.runtime.kernel_devices import (
    REPLAY_KERNELS,
    check_runnable,
    device_of,
    kernel_devices,
    simulated_kernels,
    timing_devices,
)
from pearl_py.runtime.parallel.checkpoint import Progress
from pearl_py.runtime.parallel.interrupts import RunInterrupted, StopSignals
from pearl_py.runtime.monitor import AdaptOptions, Monitor, result_fields
from pearl_py.runtime.result import RunResult
from pearl_py.runtime.run_log import RunLog
from pearl_py.runtime.timing import KernelTimer, merge_kernel_times, record_loop_work


class SerialExecutor:
    """Runs collection and learning alternately in this process, timing every kernel."""

    def __init__(self, algorithm: Algorithm, seed: int = 0, *, out_dir: Path | None = None, eval_episodes: int = 10,
                 eval_freq: int = 0, progress: bool | None = None, plan: Plan | None = None,
                 threads: int | None = None, checkpoints: CheckpointOptions | None = None,
                 resume_from: Path | None = None, adapt: bool | AdaptOptions = True) -> None:
        self.algorithm = algorithm
        self.seed = seed
        self.out_dir = out_dir
        self.eval_episodes = eval_episodes
        self.eval_freq = eval_freq
        self.progress = progress
        self.plan = plan or Plan.single_device(algorithm.protocol(serialized=True))
        self.threads = threads if threads is not None else self.plan.learner_threads
        """Torch intra-op threads of this process (default: the plan's learner threads, ``Plan.learner_threads``;
        1 in the default plan, one core per process as the cost models are calibrated)."""
        check_runnable(self.plan)
        self.devices = kernel_devices(self.plan)
        """Each kernel's torch device (the plan's placements on this machine)."""
        self.checkpoints = checkpoints or CheckpointOptions()
        """Periodic checkpoints (:mod:`pearl_py.runtime.checkpoints`), written after a training round."""
        self.resume_from = Path(resume_from) if resume_from is not None else None
        self.adapt = adapt
        """Whether (and by which rule) the run corrects a plan its kernels do not hold to (:mod:`pearl_py.runtime.monitor`)."""

    @property
    def device(self) -> torch.device:
        """The learner's device."""
        return self.devices[LEARNER_UPDATE]

    def run(self, total_steps: int) -> RunResult:
        entered = time.perf_counter()
        algo, cfg = self.algorithm, self.algorithm.config
        torch.set_num_threads(self.threads)
        torch.manual_seed(self.seed)  # every device's generator
        learner = Learner(algo, self.device)
        done, replay_state = restore(algo, learner, self.seed, total_steps, self.resume_from)
        update = self._learner_update(learner)
        acting = ActingNetworks(algo, learner, self.devices[INFERENCE])
        infer = self._inference(algo, acting)
        timer = KernelTimer(timing_devices(self.plan))
        log = RunLog(session_log_dir(self.out_dir, done.sessions), total_steps, self.progress, algorithm=algo,
                     kernel_times=lambda: timer.summary(wait=False))
        collector = Collector(algo, session_seed(self.seed, done.sessions), timer.add, timed=timer,
                              env_variant=self.plan.variant(ENV_STEP))
        replay_device = self.devices[REPLAY_INSERT]
        replay = (replay_from_state(replay_state, replay_device) if replay_state is not None
                  else replay_on(algo, self.seed, replay_device))
        timed_replay = TimedReplay(replay, timer)
        schedule = TrainSchedule.from_config(cfg, total_steps)
        periodic = PeriodicCheckpoints(self.out_dir, self.checkpoints, algo, self.seed, total_steps, done.transitions)
        eval_history: list[dict[str, float]] = done.eval_history
        evals = PeriodicEvaluation(algo, learner, self.eval_episodes, self.seed, eval_history, log, self.out_dir)
        steps = done.transitions
        vector_steps = steps // cfg.n_envs
        eval_seconds = 0.0
        with contextlib.ExitStack() as stack:
            for close in (log.close, replay.close, collector.close):  # closed in the reverse order
                stack.callback(close)
            threads = stack.enter_context(LearnerThreads(self.threads))
            signals = stack.enter_context(StopSignals())
            monitor = Monitor.of(self.plan, threads, self.adapt, log)
            if monitor is not None:
                update = monitor.watch(update)
            start = time.perf_counter()
            startup = start - entered

            def rate() -> float:
                """Env steps per training second of this session."""
                return (steps - done.transitions) / max(time.perf_counter() - start - eval_seconds, 1e-9)

            def reached(now: float) -> Progress:
                """The run's progress at ``steps`` env steps, ``now`` on the clock: what a checkpoint records."""
                return dataclasses.replace(
                    done, transitions=steps, episodes=done.episodes + collector.episodes,
                    wall_seconds=done.wall_seconds + now - start - eval_seconds, eval_history=list(eval_history),
                    kernel_times=merge_kernel_times([done.kernel_times, timer.summary()], {}))

            while steps < total_steps:
                progress = steps / total_steps
                policy = None if steps < cfg.learning_starts else (
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
                    log.train(steps, means.means(), rate())
                    if monitor is not None:
                        monitor.round_ended(steps, learner.gradient_steps, timer)
                if self.eval_freq and steps % self.eval_freq < cfg.n_envs:
                    eval_seconds += evals.run(steps)
                if periodic.due(steps):
                    t0 = time.perf_counter()
                    periodic.save(learner.state_dict(), replay.state_dict(), reached(t0))
                    eval_seconds += time.perf_counter() - t0  # not training time
                log.tick(steps, rate())
                if signals.requested:  # a consistent point: the step's transitions are in, its round is done
                    saved = periodic.save_stop(learner.state_dict(), replay.state_dict(), reached(time.perf_counter()))
                    raise RunInterrupted(signals.requested, saved)
            timer.flush()  # the GPU's queued work is part of the training time
            wall = done.wall_seconds + time.perf_counter() - start - eval_seconds
            record_loop_work(timer, wall - done.wall_seconds, (steps - done.transitions) // cfg.n_envs)
        eval_returns = evaluate(algo, learner.nets, self.device, self.eval_episodes,
                                self.seed + EVAL_SEED_OFFSET)
        self.learner = learner
        executed_on = {k: "cpu" for k in self.plan.placements}  # env_step and simulated kernels: the host
        executed_on.update({INFERENCE: device_of(acting.nets), LEARNER_UPDATE: device_of(learner.nets),
                            **{k: device_of(replay) for k in self.plan.placements if k in REPLAY_KERNELS},
                            PARAM_SYNC: device_of(learner.nets)})
        return RunResult(executed_on=executed_on, algorithm=algo.name, env=algo.env_id, seed=self.seed, env_steps=steps,
                         gradient_steps=learner.gradient_steps, wall_seconds=wall, startup_seconds=startup,
                         eval_returns=eval_returns,
                         plan=self.plan.to_dict(),
                         kernel_times=merge_kernel_times([done.kernel_times, timer.summary()],
                                                         simulated_kernels(self.plan)),
                         episodes=done.episodes + collector.episodes,
                         eval_history=eval_history, backend="serial",
                         **result_fields(monitor, self.plan, steps))

    def _learner_update(self, learner: Learner) -> Callable[[TensorBatch], UpdateResult]:
        """The plan's ``learner_update`` variant from ``pearl_py.kernels`` ("reference": ``learner.update``)."""
        return kernels.build(LEARNER_UPDATE, self.plan.variant(LEARNER_UPDATE),
                             learner, device_class=kernels.device_class(self.device))

    def _inference(self, algo: Algorithm, acting: ActingNetworks) -> kernels.inference.Inference:
        """The plan's ``inference`` variant from ``pearl_py.kernels`` ("reference": ``algo.act`` under
        ``no_grad``, what this loop always ran) on inference's networks; built after ``torch.manual_seed(seed)``."""
        return kernels.build(INFERENCE, self.plan.variant(INFERENCE),
                             algo, acting.nets, device_class=kernels.device_class(acting.device))
