"""``OnPolicyParallelExecutor``: a synchronous on-policy run with actor processes and a learner.

The plan's ``env_step`` replicas are the actors (one process and one torch thread each), the run's envs split
among them (``RolloutSchedule.env_split``), each env keeping its global index, seed and noise stream. Every
rollout the actors collect into one shared-memory rollout, then the learner (this process, on the plan's device,
variant and threads) learns on it and publishes the acting parameters (:mod:`.on_policy_loop`). A seeded run
performs the serial executor's updates on the same rollouts (bit for bit with the ``fused`` inference, or one
actor); stops and crashes between rollouts write a checkpoint, failed actors are restarted, and no child process
or segment outlives ``run`` (docs/runtime.md, "On-policy").

Example::

    >>> algo = pearl.PPO("CartPole-v1", n_envs=8, n_steps=32, batch_size=256, n_epochs=20)
    >>> plan = pearl.plan(algo, Platform.local())               # synchronous: 2 actors, fused kernels
    >>> result = OnPolicyParallelExecutor(algo, plan, seed=0, out_dir=Path("runs/ppo")).run(100_000)
    >>> result.backend, result.layout["actors"]
    ('local-parallel', 2)
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from pearl_py.algorithms.on_policy.base import OnPolicyAlgorithm
from pearl_py.algorithms.on_policy.learner import OnPolicyLearner
from pearl_py.kernels.affinity import LearnerThreads
from pearl_py.kernels.on_policy import install_update, switched_update, warm_up
from pearl_py.plan import Plan
from pearl_py.protocol.kernel import ENV_STEP, LEARNER_UPDATE, PARAM_SYNC
from pearl_py.protocol.schedule import RolloutSchedule
from pearl_py.replay.rollout import RolloutBuffer
from pearl_py.runtime.kernel_devices import device_of, learner_timing_devices
from pearl_py.runtime.monitor import VariantSwitch
from pearl_py.runtime.on_policy_layout import OnPolicyLayout
from pearl_py.runtime.parallel.executor import ActorProcessExecutor
from pearl_py.runtime.parallel.interrupts import RunInterrupted
from pearl_py.runtime.parallel.learner_loop import StopRequested
from pearl_py.runtime.parallel.on_policy_actor import (
    OnPolicyActorSpec,
    run_on_policy_actor,
)
from pearl_py.runtime.parallel.on_policy_loop import OnPolicyLoop, OnPolicyLoopParts
from pearl_py.runtime.parallel.process import Doorbell
from pearl_py.runtime.parallel.shared_rollout import SharedRollout
from pearl_py.runtime.parallel.supervisor import ActorPool, log
from pearl_py.runtime.result import RunResult
from pearl_py.runtime.session import RunSession
from pearl_py.runtime.timing import KernelTimer, merge_kernel_times

ROLLOUT_STATE = "rollout_rng"
"""The checkpoint's rollout part: the state of the generator of the minibatch permutations."""


class OnPolicyParallelExecutor(ActorProcessExecutor):
    """Runs an on-policy ``algorithm`` under ``plan`` with actor processes and a learner; see the module docstring.
    ``options``: the :class:`~pearl_py.runtime.session.SessionExecutor`'s (periodic checkpoints between rollouts;
    the monitor moves the learner's threads)."""

    def __init__(self, algorithm: OnPolicyAlgorithm, plan: Plan, seed: int = 0, **options: Any) -> None:
        super().__init__(algorithm, plan, seed, **options)
        self.layout = OnPolicyLayout.from_plan(plan, algorithm)

    def run(self, total_steps: int) -> RunResult:
        algo, layout = self.algorithm, self.layout
        schedule = RolloutSchedule.from_config(algo.config, total_steps)
        session = self.session(total_steps)
        session.seed_torch(layout.learner_threads)  # the plan's; actors set their own (one)
        learner = self.learner = OnPolicyLearner(algo, layout.learner_device)
        rollout = algo.make_rollout(seed=self.seed)
        state = session.restore(learner)
        if state and ROLLOUT_STATE in state:   # a periodic checkpoint of the serial executor has none
            rollout.rng.bit_generator.state = state[ROLLOUT_STATE]
        progress = session.progress
        install_update(layout.learner_variant, learner)
        timer = KernelTimer(learner_timing_devices(layout.learner_device))
        run_log = session.open_log()
        session.evaluate_with(learner)
        with contextlib.ExitStack() as stack:
            stack.callback(run_log.close)
            parts = self._start(stack, schedule, learner, rollout, session, timer)
            run_log.kernel_times = lambda: merge_kernel_times([timer.summary(wait=False), parts.control.kernel_times()], {})
            warm_up(algo, layout.learner_variant)  # while the actors start: the clock starts once they are ready
            threads = stack.enter_context(LearnerThreads(layout.learner_threads))  # after the actors started: free
            # the fused and reference steps share the learner's memory: the monitor may switch between them
            switch = VariantSwitch(threads, layout.learner_variant, learner.update,
                                   lambda variant: switched_update(variant, learner))
            learner.update = session.watch(switch, switch)
            loop = OnPolicyLoop(parts, progress)
            try:
                loop.run()
            except BaseException as exc:
                saved = self._checkpoint_after(loop, parts)
                if isinstance(exc, StopRequested):
                    raise RunInterrupted(exc.signal_name, saved) from None
                raise
            session.clock.stop()
            times = merge_kernel_times([progress.kernel_times, timer.summary(), parts.control.kernel_times()],
                                       layout.simulated)
        self.rollout = rollout  # the last rollout, for inspection
        # the actors build their networks on the host (on_policy_actor); the learner's are read from what it built
        executed_on = {k: "cpu" for k in self.plan.placements}
        executed_on.update({LEARNER_UPDATE: device_of(learner.nets), PARAM_SYNC: device_of(learner.nets)})
        return session.result(env_steps=progress.transitions, executed_on=executed_on,
                              gradient_steps=learner.gradient_steps,
                              eval_returns=session.final_evaluation(learner.nets, learner.device),
                              kernel_times=times, episodes=progress.episodes, backend="local-parallel",
                              layout=layout.describe())

    def _start(self, stack: contextlib.ExitStack, schedule: RolloutSchedule, learner: OnPolicyLearner,
               rollout: RolloutBuffer, session: RunSession, timer: KernelTimer) -> OnPolicyLoopParts:
        """Create the shared segments and start the actors; ``stack`` undoes it all in reverse."""
        algo, layout, progress = self.algorithm, self.layout, session.progress
        prefix, guard, control, board, statistics, errors = self._open(stack, learner, layout.actors)
        shared = SharedRollout.create(algo, f"{prefix}-rollout")
        stack.callback(shared.close)
        learnt = progress.transitions // schedule.rollout_size
        done_bell = Doorbell()
        specs = [OnPolicyActorSpec(algo, index=i, envs=envs, seed=self.seed,
                                   env_seed=session.env_seed, generation=0,
                                   rollouts=schedule.rollouts - learnt, rollouts_before=learnt, rollout=shared.name,
                                   params=board.name, control=control.name, error_file=str(errors / f"actor{i}.err"),
                                   inference=layout.inference_variant, env_step=self.plan.variant(ENV_STEP),
                                   room_bell=Doorbell(), done_bell=done_bell,
                                   statistics=statistics.name if statistics is not None else None)
                 for i, envs in enumerate(schedule.env_split(layout.actors))]
        signals = self._start_pool(stack, ActorPool(specs, self.max_restarts, guard, target=run_on_policy_actor),
                                   control)
        pool = self._pool
        return OnPolicyLoopParts(algorithm=algo, learner=learner, rollout=rollout, shared=shared, board=board,
                                 control=control, pool=pool, schedule=schedule, session=session, timer=timer,
                                 signals=signals, done_bell=done_bell,
                                 rollout_state=lambda: {ROLLOUT_STATE: rollout.rng.bit_generator.state},
                                 statistics=statistics)

    def _checkpoint_after(self, loop: OnPolicyLoop, parts: OnPolicyLoopParts) -> Path | None:
        """Checkpoint a run an exception ended between rollouts; None without ``out_dir`` or mid-learning."""
        if self.out_dir is None:
            return None
        if not loop.between_rollouts:
            log.error("no checkpoint written: the run stopped while learning on a rollout")
            return None
        return parts.session.stop_checkpoint(parts.learner.state_dict(), parts.rollout_state(), loop.snapshot())
