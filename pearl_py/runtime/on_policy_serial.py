"""The on-policy serial executor: collect a rollout, compute its advantages, learn on it — in one process.

The reference run of PPO, A2C and user on-policy algorithms, deterministic for a seed. As
Stable-Baselines3's ``OnPolicyAlgorithm.learn``: rollouts of ``n_steps`` vector steps are
collected while fewer than ``total_steps`` env steps are done (so the last rollout may pass
``total_steps``), the episodes ended by a time limit get ``gamma * V(final obs)`` added to
their last reward, and the schedules read ``progress_remaining = 1 - env_steps / total_steps``
after each rollout (held at 0 past the end, where SB3 lets it go negative): the
:class:`~pearl_py.protocol.schedule.RolloutSchedule` the parallel runtime shares. Env ``i``
resets with seed ``seed + i`` and samples its actions from its own uniforms
(:class:`~pearl_py.runtime.on_policy_collect.RolloutCollector`), so a parallel run that splits
the envs among actors collects the same rollouts.

The plan's ``inference`` and ``learner_update`` variants run (``pearl_py.kernels.on_policy``:
``reference`` or ``fused``), the learner at the plan's threads.

Kernels timed (``RunResult.kernel_times``): ``inference`` (the policy on every env's
observation; also V of final observations of truncated episodes and of the rollout's last
observations), ``env_step``, ``rollout_insert``, ``advantage`` (GAE over the rollout) and
``learner_update`` (one call per minibatch step). Inference runs on its planned device: the
learner's networks where the plan puts it beside the learner, else a copy there, refreshed after
each rollout's learning (timed as ``param_sync``). ``learner_update`` and ``param_sync`` are timed
on the learner's device (CUDA events on a GPU); ``RunResult.executed_on`` is read from the networks
the run built.

SIGINT or SIGTERM stops it once the rollout in progress is learned on: it writes the stop checkpoint
(``out_dir/checkpoint``) that ``resume_from`` continues from and raises ``RunInterrupted`` naming it.

Example::

    >>> result = OnPolicySerialExecutor(pearl.PPO("CartPole-v1", n_envs=8, n_steps=32), seed=0).run(10_000)
    >>> result.env_steps, result.kernel_times[LEARNER_UPDATE]["calls"]    # 40 rollouts of 256 steps
    (10240, 1600)
"""
from __future__ import annotations

import contextlib
import dataclasses
import time
from pathlib import Path

import torch

from pearl_py.algorithms.on_policy.base import OnPolicyAlgorithm
from pearl_py.algorithms.on_policy.learner import OnPolicyLearner
from pearl_py.kernels.affinity import LearnerThreads
from pearl_py.kernels.on_policy import build_acting, install_update, warm_up
from pearl_py.plan import Placement, Plan
from pearl_py.protocol.kernel import (
    ADVANTAGE,
    ENV_STEP,
    INFERENCE,
    LEARNER_UPDATE,
    PARAM_SYNC,
    ROLLOUT_INSERT,
)
from pearl_py.protocol.schedule import RolloutSchedule
from pearl_py.runtime.acting import ActingNetworks
from pearl_py.runtime.checkpoints import (
    CheckpointOptions,
    PeriodicCheckpoints,
    restore,
    session_log_dir,
    session_seed,
)
from pearl_py.runtime.evaluation import (
    EVAL_SEED_OFFSET,
    PeriodicEvaluation,
    evaluate,
    evaluation_points,
)
from pearl_py.runtime.kernel_devices import device_of, execution_device, learner_timing_devices
from pearl_py.runtime.monitor import AdaptOptions, Monitor, result_fields
from pearl_py.runtime.on_policy_collect import RolloutCollector
from pearl_py.runtime.on_policy_layout import OnPolicyLayout
from pearl_py.runtime.parallel.checkpoint import Progress
from pearl_py.runtime.parallel.interrupts import RunInterrupted, StopSignals
from pearl_py.runtime.result import RunResult
from pearl_py.runtime.run_log import RunLog
from pearl_py.runtime.timing import KernelTimer, merge_kernel_times, record_loop_work

ON_POLICY_KERNELS = (ENV_STEP, INFERENCE, ROLLOUT_INSERT, ADVANTAGE, LEARNER_UPDATE)
"""The kernels of the serial on-policy loop, in the order one rollout runs them."""


def serial_plan(device: str = "cpu") -> Plan:
    """Every on-policy kernel on one device, reference implementation, unpredicted (this executor's plan)."""
    return Plan(platform="local", objective="none", placements={k: Placement(device) for k in ON_POLICY_KERNELS},
                mode="serialized", devices={device: "cpu"}, solver="single-device")


class OnPolicySerialExecutor:
    """Runs collection and learning alternately in this process, timing every kernel."""

    def __init__(self, algorithm: OnPolicyAlgorithm, seed: int = 0, *, plan: Plan | None = None,
                 out_dir: Path | None = None, eval_episodes: int = 10, eval_freq: int = 0,
                 progress: bool | None = None, threads: int | None = None,
                 checkpoints: CheckpointOptions | None = None, resume_from: Path | None = None,
                 adapt: bool | AdaptOptions = True) -> None:
        self.algorithm = algorithm
        self.seed = seed
        self.plan = plan or serial_plan()
        self.layout = OnPolicyLayout.from_plan(self.plan, algorithm)
        self.device = self.layout.learner_device
        self.out_dir = out_dir
        self.eval_episodes = eval_episodes
        self.eval_freq = eval_freq
        self.progress = progress
        self.threads = threads if threads is not None else self.layout.learner_threads
        """Torch intra-op threads of this process (default: the plan's learner threads; 1 in the default plan,
        one core per process as the cost models are calibrated)."""
        self.checkpoints = checkpoints or CheckpointOptions()
        """Periodic checkpoints (:mod:`pearl_py.runtime.checkpoints`), written between rollouts (no replay to save)."""
        self.resume_from = Path(resume_from) if resume_from is not None else None
        self.adapt = adapt
        """Whether (and by which rule) the run corrects a plan its kernels do not hold to (:mod:`pearl_py.runtime.monitor`)."""

    def run(self, total_steps: int) -> RunResult:
        entered = time.perf_counter()
        algo, cfg = self.algorithm, self.algorithm.config
        schedule = RolloutSchedule.from_config(cfg, total_steps)
        torch.set_num_threads(self.threads)
        torch.manual_seed(self.seed)
        learner = OnPolicyLearner(algo, self.device)
        done, _ = restore(algo, learner, self.seed, total_steps, self.resume_from)
        install_update(self.layout.learner_variant, learner)
        acting_nets = ActingNetworks(algo, learner, execution_device(self.plan, INFERENCE))
        acting = build_acting(self.layout.inference_variant, algo, acting_nets.nets)
        warm_up(algo, self.layout.learner_variant, acting)   # compiled variants load their code before the clock
        timer = KernelTimer(learner_timing_devices(self.device))
        log = RunLog(session_log_dir(self.out_dir, done.sessions), total_steps, self.progress, algorithm=algo,
                     kernel_times=lambda: timer.summary(wait=False))
        # a resumed session's envs start anew with session seeds; the noise streams stay keyed by the run's seed
        collector = RolloutCollector(algo, self.seed, acting, timer.add,
                                     env_seed=session_seed(self.seed, done.sessions),
                                     env_variant=self.plan.variant(ENV_STEP))
        rollout = algo.make_rollout(seed=session_seed(self.seed, done.sessions))
        periodic = PeriodicCheckpoints(self.out_dir, self.checkpoints, algo, self.seed, total_steps, done.transitions)
        eval_history: list[dict[str, float]] = done.eval_history
        evals = PeriodicEvaluation(algo, learner, self.eval_episodes, self.seed, eval_history, log, self.out_dir)
        steps = done.transitions
        eval_seconds = 0.0

        def rate() -> float:
            """Env steps per training second of this session."""
            return (steps - done.transitions) / max(time.perf_counter() - start - eval_seconds, 1e-9)

        def reached(now: float) -> Progress:
            """The run's progress at ``steps`` env steps, ``now`` on the clock: what a checkpoint records."""
            return dataclasses.replace(
                done, transitions=steps, episodes=done.episodes + collector.episodes,
                wall_seconds=done.wall_seconds + now - start - eval_seconds, eval_history=list(eval_history),
                kernel_times=merge_kernel_times([done.kernel_times, timer.summary()], {}))

        with contextlib.ExitStack() as stack:
            for close in (log.close, collector.close):  # closed in the reverse order
                stack.callback(close)
            threads = stack.enter_context(LearnerThreads(self.threads))
            signals = stack.enter_context(StopSignals())
            monitor = Monitor.of(self.plan, threads, self.adapt, log)
            if monitor is not None:
                learner.update = monitor.watch(learner.update)
            start = time.perf_counter()
            startup = start - entered
            for k in range(done.transitions // schedule.rollout_size, schedule.rollouts):
                rollout.reset()
                for t in range(cfg.n_steps):
                    step = collector.step(k * cfg.n_steps + t)
                    with timer(ROLLOUT_INSERT):
                        rollout.add(step.obs, step.actions, step.rewards, step.episode_starts, step.values,
                                    step.log_probs)
                    before, steps = steps, steps + cfg.n_envs
                    for _, episode_return, length in step.step.ended:
                        log.episode(steps, episode_return, length)
                    for at in evaluation_points(self.eval_freq, cfg.n_envs, before, steps):
                        eval_seconds += evals.run(at)
                    log.tick(steps, rate())
                last_values, last_dones = collector.last_values()
                with timer(ADVANTAGE):
                    rollout.compute_advantages(last_values, last_dones, cfg.gamma, cfg.gae_lambda)
                stats = learner.learn(rollout, schedule.progress_remaining(k + 1), timer)
                if acting_nets.copied:
                    with timer(PARAM_SYNC):
                        acting_nets.sync()
                log.train(steps, stats.as_log(), rate())
                if monitor is not None:
                    monitor.round_ended(steps, learner.gradient_steps, timer)
                if periodic.due(steps):  # between rollouts: the learner holds the whole state
                    t0 = time.perf_counter()
                    periodic.save(learner.state_dict(), {}, reached(t0))
                    eval_seconds += time.perf_counter() - t0  # not training time
                if signals.requested:
                    raise RunInterrupted(signals.requested,
                                         periodic.save_stop(learner.state_dict(), {}, reached(time.perf_counter())))
            wall = done.wall_seconds + time.perf_counter() - start - eval_seconds
            record_loop_work(timer, wall - done.wall_seconds, (steps - done.transitions) // cfg.n_envs)
        eval_returns = evaluate(algo, learner.nets, self.device, self.eval_episodes, self.seed + EVAL_SEED_OFFSET)
        self.learner, self.rollout = learner, rollout  # the trained networks and the last rollout, for inspection
        executed_on = {k: "cpu" for k in self.plan.placements}  # env_step, the rollout, the scan, simulated kernels
        executed_on.update({INFERENCE: device_of(acting_nets.nets), LEARNER_UPDATE: device_of(learner.nets)})
        if acting_nets.copied:
            executed_on[PARAM_SYNC] = device_of(learner.nets)
        return RunResult(executed_on=executed_on, algorithm=algo.name, env=algo.env_id, seed=self.seed, env_steps=steps,
                         gradient_steps=learner.gradient_steps, wall_seconds=wall, startup_seconds=startup,
                         eval_returns=eval_returns,
                         plan=self.plan.to_dict(),
                         kernel_times=merge_kernel_times([done.kernel_times, timer.summary()], self.layout.simulated),
                         episodes=done.episodes + collector.episodes, eval_history=eval_history, backend="serial",
                         **result_fields(monitor, self.plan, steps))
