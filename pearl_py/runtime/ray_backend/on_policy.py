"""``OnPolicyRayExecutor``: a synchronous on-policy run (PPO, A2C) with Ray actor workers and a Ray learner.

For every rollout the driver asks each actor worker for its envs' columns on the newest parameters and hands them to
the learner worker, which assembles the rollout and learns: a seeded run performs the local parallel run's updates
(docs/ray.md, "Schedule"). Checkpoints, ``resume_from`` and actor restarts are :class:`RayRun`'s.

Example::

    >>> algo = pearl.PPO("CartPole-v1", n_envs=8, n_steps=32)
    >>> result = OnPolicyRayExecutor(algo, plan, seed=0, address="127.0.0.1:6379").run(100_000)
    >>> result.backend, result.layout["actors"]
    ('ray', 2)
"""
from __future__ import annotations

from types import ModuleType
from typing import Any

from pearl_py.algorithms.on_policy.base import OnPolicyAlgorithm
from pearl_py.plan import Plan
from pearl_py.protocol.kernel import ENV_STEP, LEARNER_UPDATE
from pearl_py.protocol.schedule import RolloutSchedule
from pearl_py.runtime.evaluation import EVAL_SEED_OFFSET, eval_point, evaluation_points
from pearl_py.runtime.on_policy_layout import OnPolicyLayout
from pearl_py.runtime.parallel.checkpoint import Checkpoint
from pearl_py.runtime.parallel.on_policy import ROLLOUT_STATE
from pearl_py.runtime.ray_backend.ray_run import RayRun
from pearl_py.runtime.ray_backend.resources import on_policy_resources
from pearl_py.runtime.result import RunResult
from pearl_py.runtime.session import RunSession
from pearl_py.runtime.timing import merge_kernel_times


class OnPolicyRayExecutor(RayRun):
    """Runs an on-policy ``algorithm`` under ``plan`` on a Ray cluster; see the module docstring."""

    def __init__(self, algorithm: OnPolicyAlgorithm, plan: Plan, seed: int = 0, **options: Any) -> None:
        super().__init__(algorithm, plan, seed, **options)
        self.layout = OnPolicyLayout.from_plan(plan, algorithm)
        self.resources, self.actors = on_policy_resources(plan), self.layout.actors

    def _start(self, ray: ModuleType, schedule: RolloutSchedule, resumed: Checkpoint | None, env_seed: int
               ) -> tuple[Any, list[Any]]:
        from pearl_py.runtime.ray_backend.on_policy_workers import OnPolicyActorWorker, OnPolicyLearnerWorker

        algo, layout, res, where = self.algorithm, self.layout, self.resources, self.where
        places = self.plan.placements
        actor_options = [where.pin(res["actor"], places[ENV_STEP].device, replica=i) for i in range(layout.actors)]
        learner_options = dict(res["learner"])
        if learner_options.get("num_cpus"):  # on its actors' node it takes the cores they leave: the two alternate
            learner_options["num_cpus"] = max(min(learner_options["num_cpus"],
                                                  where.spare_cpus(places[LEARNER_UPDATE].device)), 0.0)
        pinned = where.pin(learner_options, places[LEARNER_UPDATE].device)
        learner = ray.remote(OnPolicyLearnerWorker).options(**pinned).remote(
            algo, self.seed, layout.learner_device.type, layout.learner_variant, layout.learner_threads)
        if resumed is not None:
            ray.get([learner.restore.remote(resumed.learner, resumed.torch_rng, resumed.cuda_rng,
                                            str(self.resume_from)),
                     learner.set_rollout_rng.remote(resumed.replay[ROLLOUT_STATE])])
        actor_cls = ray.remote(OnPolicyActorWorker)
        actors = [actor_cls.options(**options, max_restarts=self.max_restarts, max_task_retries=-1).remote(
                      algo, envs, self.seed, env_seed, layout.inference_variant, self.plan.variant(ENV_STEP))
                  for options, envs in zip(actor_options, schedule.env_split(layout.actors))]
        self._register(ray, {"learner": learner}, actors, {"learner": learner_options}, res["actor"])
        return learner, actors

    def _run(self, ray: ModuleType, total_steps: int) -> RunResult:
        algo = self.algorithm
        schedule = RolloutSchedule.from_config(algo.config, total_steps)
        session = self.session(total_steps)
        resumed = session.resume()
        progress = session.progress
        learner, actors = self._start(ray, schedule, resumed, session.env_seed)
        log = session.open_log()
        session.watch_remote(self.plan.variant(LEARNER_UPDATE))
        loop = _RolloutLoop(ray, schedule, learner, actors, session, self)
        try:
            try:
                loop.run()
            except ray.exceptions.RayError as exc:
                raise self._failure(exc, progress.transitions) from None
            eval_returns, gradient_steps = self._finish(ray, session, learner, actors)
            times = merge_kernel_times([progress.kernel_times, *loop.timings()], self.layout.simulated)
        finally:
            log.close()
            for handle in (*actors, learner):
                ray.kill(handle)
        return session.result(env_steps=progress.transitions, gradient_steps=gradient_steps, eval_returns=eval_returns,
                              kernel_times=times, episodes=progress.episodes, backend="ray",
                              layout={**self.layout.describe(), "rollout": "object store, each actor sending its "
                                                                           "envs' columns to the learner",
                                      "nodes": self.ran_on()})


class _RolloutLoop:
    """The driver's loop: request a rollout, evaluate where due, learn on it, checkpoint where due; again."""

    def __init__(self, ray: ModuleType, schedule: RolloutSchedule, learner: Any, actors: list[Any],
                 session: RunSession, executor: OnPolicyRayExecutor) -> None:
        self.ray, self.s, self.learner, self.actors, self.x = ray, schedule, learner, actors, executor
        self.session, self.log, self.clock = session, session.log, session.clock
        self.progress = session.progress
        """Updated after every rollout: transitions, episodes, evaluations (a resumed run starts from its own)."""
        self.splits = list(schedule.env_split(len(actors)))

    def run(self) -> None:
        ray, s, p, x = self.ray, self.s, self.progress, self.x
        self.clock.start()
        params, statistics = self.learner.acting_params.remote(), self.learner.statistics.remote()
        for k in range(p.transitions // s.rollout_size, s.rollouts):
            parts = [actor.collect.remote(k * s.n_steps, params, statistics) for actor in self.actors]
            before, p.transitions = p.transitions, p.transitions + s.rollout_size
            for at in evaluation_points(x.eval_freq, s.n_envs, before, p.transitions):  # on the collecting networks
                with self.clock.paused():
                    returns = ray.get(self.learner.evaluate.remote(x.eval_episodes, x.seed + EVAL_SEED_OFFSET))
                p.eval_history.append(eval_point(at, returns))
            stats, ended, updates, seconds = ray.get(self.learner.learn.remote(
                s.progress_remaining(k + 1), self.splits, *parts,
                options=self.session.remote_options(s.updates_per_rollout)))
            params, statistics = self.learner.acting_params.remote(), self.learner.statistics.remote()
            self.session.round_ended(p.transitions, updates, seconds=seconds)
            for offset, episode_return, length in ended:
                self.log.episode(before + offset, episode_return, length)
            p.episodes += len(ended)
            rate = p.transitions / max(self.clock.seconds, 1e-9)
            self.log.train(p.transitions, stats, rate)
            self.log.tick(p.transitions, lambda rate=rate: rate)
            if self.session.due(p.transitions):
                self._checkpoint()

    def timings(self) -> list[dict[str, dict[str, float]]]:
        """Every worker's kernel times (a restarted actor's since its restart)."""
        return self.ray.get([w.timings.remote() for w in (self.learner, *self.actors)])

    def _checkpoint(self) -> None:
        """Between rollouts: the learner, the minibatch generator and the counters; not training time."""
        with self.clock.paused():
            (learner_state, torch_rng, cuda_rng), rollout_rng = self.ray.get(
                [self.learner.checkpoint_state.remote(), self.learner.rollout_rng.remote()])
            snapshot = self.session.snapshot(self.timings())
            self.x.fetch_statistics(self.ray, self.learner)
        self.session.checkpoint(learner_state, {ROLLOUT_STATE: rollout_rng}, snapshot, rng=(torch_rng, cuda_rng))
