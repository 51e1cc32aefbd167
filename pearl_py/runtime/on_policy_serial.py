"""The on-policy serial executor: collect a rollout, compute its advantages, learn on it — in one process.

The reference run of PPO, A2C and user on-policy algorithms, deterministic for a seed, as SB3's
``OnPolicyAlgorithm.learn`` (docs/api.md): env ``i`` is reset with seed ``seed + i`` and acts on its own uniforms
(:class:`~pearl_py.runtime.on_policy_collect.RolloutCollector`), so a parallel run that splits the envs among actors
collects the same rollouts. Inference apart from the learner acts on a copy refreshed after each rollout's learning
(``param_sync``). SIGINT or SIGTERM stops it once the rollout in progress is learned on, with the stop checkpoint
written (``RunInterrupted``).

Example::

    >>> result = OnPolicySerialExecutor(pearl.PPO("CartPole-v1", n_envs=8, n_steps=32), seed=0).run(10_000)
    >>> result.env_steps, result.kernel_times[LEARNER_UPDATE]["calls"]    # 40 rollouts of 256 steps
    (10240, 1600)
"""
from __future__ import annotations

import contextlib
from typing import Any

from pearl_py.algorithms.on_policy.base import OnPolicyAlgorithm
from pearl_py.algorithms.on_policy.learner import OnPolicyLearner
from pearl_py.kernels.affinity import LearnerThreads
from pearl_py.kernels.on_policy import build_acting, install_update, switched_update, warm_up
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
from pearl_py.runtime.kernel_devices import device_of, execution_device, learner_timing_devices
from pearl_py.runtime.monitor import VariantSwitch
from pearl_py.runtime.on_policy_collect import RolloutCollector
from pearl_py.runtime.on_policy_layout import OnPolicyLayout
from pearl_py.runtime.parallel.checkpoint import Progress
from pearl_py.runtime.parallel.interrupts import RunInterrupted, StopSignals
from pearl_py.runtime.result import RunResult
from pearl_py.runtime.session import SessionExecutor
from pearl_py.runtime.timing import KernelTimer, merge_kernel_times, record_loop_work

ON_POLICY_KERNELS = (ENV_STEP, INFERENCE, ROLLOUT_INSERT, ADVANTAGE, LEARNER_UPDATE)
"""The kernels of the serial on-policy loop, in the order one rollout runs them."""


def serial_plan(device: str = "cpu") -> Plan:
    """Every on-policy kernel on one device, reference implementation, unpredicted (this executor's plan)."""
    return Plan(platform="local", objective="none", placements={k: Placement(device) for k in ON_POLICY_KERNELS},
                mode="serialized", devices={device: "cpu"}, solver="single-device")


class OnPolicySerialExecutor(SessionExecutor):
    """Runs collection and learning alternately in this process, timing every kernel; ``options``: the
    :class:`~pearl_py.runtime.session.SessionExecutor`'s (periodic checkpoints are written between rollouts)."""

    def __init__(self, algorithm: OnPolicyAlgorithm, seed: int = 0, *, plan: Plan | None = None,
                 threads: int | None = None, **options: Any) -> None:
        super().__init__(algorithm, plan or serial_plan(), seed, **options)
        self.layout = OnPolicyLayout.from_plan(self.plan, algorithm)
        self.device = self.layout.learner_device
        self.threads = threads if threads is not None else self.layout.learner_threads
        """Torch intra-op threads of this process (default: the plan's learner threads; 1 in the default plan,
        one core per process as the cost models are calibrated)."""

    def run(self, total_steps: int) -> RunResult:
        algo, cfg = self.algorithm, self.algorithm.config
        schedule = RolloutSchedule.from_config(cfg, total_steps)
        session = self.session(total_steps)
        session.seed_torch(self.threads)
        learner = OnPolicyLearner(algo, self.device)
        session.restore(learner)
        done = session.progress
        install_update(self.layout.learner_variant, learner)
        acting_nets = ActingNetworks(algo, learner, execution_device(self.plan, INFERENCE))
        acting = build_acting(self.layout.inference_variant, algo, acting_nets.nets)
        warm_up(algo, self.layout.learner_variant, acting)   # compiled variants load their code before the clock
        timer = KernelTimer(learner_timing_devices(self.device))
        log = session.open_log(lambda: timer.summary(wait=False))
        # a resumed session's envs start anew with session seeds; the noise streams stay keyed by the run's seed
        collector = RolloutCollector(algo, self.seed, acting, timer.add, env_seed=session.env_seed,
                                     env_variant=self.plan.variant(ENV_STEP))
        rollout = algo.make_rollout(seed=session.env_seed)
        session.evaluate_with(learner)
        steps = done.transitions

        def rate() -> float:
            """Env steps per training second of this session."""
            return (steps - done.transitions) / max(session.clock.session_seconds, 1e-9)

        def reached() -> Progress:
            """The run's progress at ``steps`` env steps: what a checkpoint records."""
            return session.snapshot([timer.summary()], transitions=steps, episodes=done.episodes + collector.episodes)

        with contextlib.ExitStack() as stack:
            for close in (log.close, collector.close):  # closed in the reverse order
                stack.callback(close)
            threads = stack.enter_context(LearnerThreads(self.threads))
            signals = stack.enter_context(StopSignals())
            # the fused and reference steps share the learner's memory: the monitor may switch between them
            switch = VariantSwitch(threads, self.layout.learner_variant, learner.update,
                                   lambda variant: switched_update(variant, learner))
            learner.update = session.watch(switch, switch)
            session.clock.start()
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
                    session.evaluate(before, steps, cfg.n_envs)
                    log.tick(steps, rate)
                last_values, last_dones = collector.last_values()
                with timer(ADVANTAGE):
                    rollout.compute_advantages(last_values, last_dones, cfg.gamma, cfg.gae_lambda)
                stats = learner.learn(rollout, schedule.progress_remaining(k + 1), timer)
                if acting_nets.copied:
                    with timer(PARAM_SYNC):
                        acting_nets.sync()
                log.train(steps, stats.as_log(), rate())
                session.round_ended(steps, learner.gradient_steps, timer)
                if session.due(steps):  # between rollouts: the learner holds the whole state
                    session.checkpoint(learner.state_dict(), {}, reached())
                if signals.requested:
                    saved = session.stop_checkpoint(learner.state_dict(), {}, reached())
                    raise RunInterrupted(signals.requested, saved)
            session.clock.stop()
            record_loop_work(timer, session.clock.session_seconds, (steps - done.transitions) // cfg.n_envs)
        self.learner, self.rollout = learner, rollout  # the trained networks and the last rollout, for inspection
        executed_on = {k: "cpu" for k in self.plan.placements}  # env_step, the rollout, the scan, simulated kernels
        executed_on.update({INFERENCE: device_of(acting_nets.nets), LEARNER_UPDATE: device_of(learner.nets)})
        if acting_nets.copied:
            executed_on[PARAM_SYNC] = device_of(learner.nets)
        return session.result(env_steps=steps, executed_on=executed_on, gradient_steps=learner.gradient_steps,
                              eval_returns=session.final_evaluation(learner.nets, self.device),
                              kernel_times=merge_kernel_times([done.kernel_times, timer.summary()],
                                                              self.layout.simulated),
                              episodes=done.episodes + collector.episodes, backend="serial")
