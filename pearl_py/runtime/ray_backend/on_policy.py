"""``OnPolicyRayExecutor``: a synchronous on-policy run (PPO, A2C) with Ray actor workers and a Ray learner.

The local parallel on-policy runtime's schedule (:class:`RolloutSchedule`, docs/runtime.md "On-policy")
on a Ray cluster: the plan's ``env_step`` replicas are actor workers, each stepping its share of the
run's envs (``env_split``: same global indices, seeds and noise streams); for every rollout the
driver asks each for its columns, acting on the newest parameters, and hands the object references
to the learner worker (on the plan's device, variant and threads), which assembles the rollout, scans
the advantages and learns; the parameters it returns go with the next rollout's requests. The data
goes actor → object store → learner, never through the driver. Collection and learning alternate,
so a seeded run performs the local parallel run's updates on the same rollouts (with the ``fused``
inference, or one actor: the serial run's, bit for bit; tests/runtime/test_ray_on_policy.py).

Periodic checkpoints (between rollouts), ``resume_from`` and actor restarts are :class:`RayRun`'s.

Example::

    >>> algo = pearl.PPO("CartPole-v1", n_envs=8, n_steps=32)
    >>> result = OnPolicyRayExecutor(algo, plan, seed=0, address="127.0.0.1:6379").run(100_000)
    >>> result.backend, result.layout["actors"]
    ('ray', 2)
"""
from __future__ import annotations

import dataclasses
import time
from types import ModuleType
from typing import Any

from pearl_py.algorithms.networks import Networks
from pearl_py.algorithms.on_policy.base import OnPolicyAlgorithm
from pearl_py.plan import Plan
from pearl_py.protocol.kernel import ENV_STEP
from pearl_py.protocol.schedule import RolloutSchedule
from pearl_py.runtime.checkpoints import session_log_dir, session_seed
from pearl_py.runtime.evaluation import EVAL_SEED_OFFSET, eval_point, evaluation_points
from pearl_py.runtime.on_policy_layout import OnPolicyLayout
from pearl_py.runtime.parallel.checkpoint import Checkpoint, Progress
from pearl_py.runtime.parallel.on_policy import ROLLOUT_STATE
from pearl_py.runtime.ray_backend.ray_run import RayRun
from pearl_py.runtime.ray_backend.resources import needs, on_policy_resources
from pearl_py.runtime.result import RunResult
from pearl_py.runtime.run_log import RunLog
from pearl_py.runtime.timing import merge_kernel_times


class OnPolicyRayExecutor(RayRun):
    """Runs an on-policy ``algorithm`` under ``plan`` on a Ray cluster; see the module docstring."""

    def __init__(self, algorithm: OnPolicyAlgorithm, plan: Plan, seed: int = 0, **options: Any) -> None:
        super().__init__(algorithm, plan, seed, **options)
        self.layout = OnPolicyLayout.from_plan(plan, algorithm)
        self.resources = on_policy_resources(plan)
        self.trained_networks: Networks | None = None
        """After ``run``: the learner's networks, fetched to this process (the trained policy)."""

    def needs(self) -> dict[str, float]:
        return needs(self.resources, self.layout.actors)

    def _start(self, ray: ModuleType, schedule: RolloutSchedule, resumed: Checkpoint | None, sessions: int
               ) -> tuple[Any, list[Any]]:
        from pearl_py.runtime.ray_backend.on_policy_workers import OnPolicyActorWorker, OnPolicyLearnerWorker

        algo, layout, res = self.algorithm, self.layout, self.resources
        learner = ray.remote(OnPolicyLearnerWorker).options(**res["learner"]).remote(
            algo, self.seed, "cuda" if layout.learner_device.type == "cuda" else "cpu", layout.learner_variant,
            layout.learner_threads)
        if resumed is not None:
            ray.get([learner.restore.remote(resumed.learner, resumed.torch_rng, resumed.cuda_rng,
                                            str(self.resume_from)),
                     learner.set_rollout_rng.remote(resumed.replay[ROLLOUT_STATE])])
        actor_cls = ray.remote(OnPolicyActorWorker).options(**res["actor"], max_restarts=self.max_restarts,
                                                            max_task_retries=-1)
        actors = [actor_cls.remote(algo, envs, self.seed, session_seed(self.seed, sessions), layout.inference_variant,
                                   self.plan.variant(ENV_STEP))
                  for envs in schedule.env_split(layout.actors)]
        pids = ray.get([learner.pid.remote()] + [a.pid.remote() for a in actors])
        self.components = {
            "learner": {"pid": pids[0], "actor_id": learner._actor_id.hex(), "resources": res["learner"]},
            "actors": [{"pid": pid, "actor_id": a._actor_id.hex(), "resources": res["actor"]}
                       for pid, a in zip(pids[1:], actors)]}
        return learner, actors

    def _run(self, ray: ModuleType, total_steps: int) -> RunResult:
        algo = self.algorithm
        schedule = RolloutSchedule.from_config(algo.config, total_steps)
        resumed = self._resume(total_steps)
        progress = resumed.progress if resumed is not None else Progress()
        learner, actors = self._start(ray, schedule, resumed, progress.sessions)
        log = RunLog(session_log_dir(self.out_dir, progress.sessions), total_steps, self.progress, algorithm=algo)
        loop = _RolloutLoop(ray, schedule, learner, actors, log, self, progress)
        try:
            try:
                loop.run()
            except ray.exceptions.RayError as exc:
                raise self._failure(exc, progress.transitions) from None
            eval_returns = ray.get(learner.evaluate.remote(self.eval_episodes, self.seed + EVAL_SEED_OFFSET))
            times = merge_kernel_times([progress.kernel_times, *loop.timings()], self.layout.simulated)
            gradient_steps = ray.get(learner.gradient_steps.remote())
            self.restarted = self._restarted(ray, actors)
            self.trained_networks = algo.fresh_networks()
            self.trained_networks.load_state_dict(ray.get(learner.networks_state.remote()))
        finally:
            log.close()
            for handle in (*actors, learner):
                ray.kill(handle)
        return RunResult(algorithm=algo.name, env=algo.env_id, seed=self.seed, env_steps=progress.transitions,
                         gradient_steps=gradient_steps, wall_seconds=loop.wall_seconds, eval_returns=eval_returns,
                         plan=self.plan.to_dict(), kernel_times=times, episodes=progress.episodes,
                         eval_history=progress.eval_history, backend="ray",
                         layout={**self.layout.describe(), "rollout": "object store, each actor sending its envs' "
                                                                      "columns to the learner"})


class _RolloutLoop:
    """The driver's loop: request a rollout, evaluate where due, learn on it, checkpoint where due; again."""

    def __init__(self, ray: ModuleType, schedule: RolloutSchedule, learner: Any, actors: list[Any], log: RunLog,
                 executor: OnPolicyRayExecutor, progress: Progress) -> None:
        self.ray, self.s, self.learner, self.actors, self.log, self.x = ray, schedule, learner, actors, log, executor
        self.progress = progress
        """Updated after every rollout: transitions, episodes, evaluations (a resumed run starts from its own)."""
        self.periodic = executor._periodic(schedule.total_steps, progress)
        self.splits = list(schedule.env_split(len(actors)))
        self._start = time.perf_counter()
        self._eval_s = 0.0

    @property
    def wall_seconds(self) -> float:
        """Training seconds of this session (evaluations and checkpoints excluded) plus earlier sessions'."""
        return self.progress.wall_seconds + time.perf_counter() - self._start - self._eval_s

    def run(self) -> None:
        ray, s, p, x = self.ray, self.s, self.progress, self.x
        params = self.learner.acting_params.remote()
        for k in range(p.transitions // s.rollout_size, s.rollouts):
            parts = [actor.collect.remote(k * s.n_steps, params) for actor in self.actors]
            before, p.transitions = p.transitions, p.transitions + s.rollout_size
            for at in evaluation_points(x.eval_freq, s.n_envs, before, p.transitions):  # on the collecting networks
                started = time.perf_counter()
                returns = ray.get(self.learner.evaluate.remote(x.eval_episodes, x.seed + EVAL_SEED_OFFSET))
                self._eval_s += time.perf_counter() - started
                p.eval_history.append(eval_point(at, returns))
            stats, ended = ray.get(self.learner.learn.remote(s.progress_remaining(k + 1), self.splits, *parts))
            params = self.learner.acting_params.remote()
            for offset, episode_return, length in ended:
                self.log.episode(before + offset, episode_return, length)
            p.episodes += len(ended)
            rate = p.transitions / max(self.wall_seconds, 1e-9)
            self.log.train(p.transitions, stats, rate)
            self.log.tick(p.transitions, rate)
            if self.periodic is not None and self.periodic.due(p.transitions):
                self._checkpoint()

    def timings(self) -> list[dict[str, dict[str, float]]]:
        """Every worker's kernel times (a restarted actor's since its restart)."""
        return self.ray.get([w.timings.remote() for w in (self.learner, *self.actors)])

    def _checkpoint(self) -> None:
        """Between rollouts: the learner, the minibatch generator and the counters; not training time."""
        started, ray = time.perf_counter(), self.ray
        (learner_state, torch_rng, cuda_rng), rollout_rng = ray.get(
            [self.learner.checkpoint_state.remote(), self.learner.rollout_rng.remote()])
        times = merge_kernel_times([self.progress.kernel_times, *self.timings()], {})
        snapshot = dataclasses.replace(self.progress, wall_seconds=self.wall_seconds,
                                       eval_history=list(self.progress.eval_history), kernel_times=times)
        self.periodic.save(learner_state, {ROLLOUT_STATE: rollout_rng}, snapshot, rng=(torch_rng, cuda_rng))
        self._eval_s += time.perf_counter() - started
