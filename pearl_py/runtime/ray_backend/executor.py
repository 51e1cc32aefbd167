"""``RayExecutor``: a plan executed by Ray actors — actor workers, a replay server, a learner.

The driver replays the serial schedule on virtual vector steps: actor workers collect the next round
(``lookahead_rounds``) while the learner trains, each chunk goes to the replay server in order (never through the
driver), and the learner runs exactly the serial loop's updates (docs/ray.md).

Example::

    >>> result = RayExecutor(pearl.DQN("CartPole-v1"), plan, seed=0, address="auto").run(50_000)
    >>> result.backend, result.env_steps
    ('ray', 50000)
    >>> executor.components["replay"]["pid"] != executor.components["learner"]["pid"]
    True
"""
from __future__ import annotations

from collections import deque
from types import ModuleType
from typing import Any

from pearl_py.algorithms.off_policy.base import Algorithm
from pearl_py.plan import Plan
from pearl_py.protocol.kernel import ENV_STEP, INFERENCE, LEARNER_UPDATE, REPLAY_INSERT
from pearl_py.protocol.schedule import TrainSchedule
from pearl_py.runtime.collect import round_beta, round_progress_remaining
from pearl_py.runtime.evaluation import EVAL_SEED_OFFSET
from pearl_py.runtime.kernel_devices import simulated_kernels
from pearl_py.runtime.parallel.placement import runtime_of
from pearl_py.runtime.parallel.checkpoint import Checkpoint
from pearl_py.runtime.ray_backend.ray_run import RayRun
from pearl_py.runtime.ray_backend.resources import component_resources
from pearl_py.runtime.result import RunResult
from pearl_py.runtime.session import RunSession
from pearl_py.runtime.timing import merge_kernel_times


class RayExecutor(RayRun):
    """Runs an off-policy ``algorithm`` under ``plan`` on a Ray cluster; see the module docstring and RayRun."""

    def __init__(self, algorithm: Algorithm, plan: Plan, seed: int = 0, *, lookahead_rounds: int = 1,
                 **options: Any) -> None:
        super().__init__(algorithm, plan, seed, **options)
        self.lookahead_rounds = lookahead_rounds
        self.resources = component_resources(plan)
        self.actors = max(plan.placements[ENV_STEP].replicas, 1)

    def _start(self, ray: ModuleType, total_steps: int, resumed: Checkpoint | None, env_seed: int
               ) -> tuple[Any, Any, list[Any]]:
        from pearl_py.runtime.ray_backend import workers

        algo, places, res, where = self.algorithm, self.plan.placements, self.resources, self.where
        replay_options = where.pin(res["replay"], places[REPLAY_INSERT].device)
        replay = ray.remote(workers.ReplayServer).options(**replay_options).remote(
            algo, self.seed, self._torch_device(REPLAY_INSERT), resumed.replay if resumed else None)
        learner_options = where.pin(res["learner"], places[LEARNER_UPDATE].device)
        learner = ray.remote(workers.LearnerWorker).options(**learner_options).remote(
            algo, self.seed, self._torch_device(LEARNER_UPDATE), places[LEARNER_UPDATE].variant, replay)
        if resumed is not None:
            ray.get(learner.restore.remote(resumed.learner, resumed.torch_rng, resumed.cuda_rng,
                                           str(self.resume_from)))
        actor_cls = ray.remote(workers.ActorWorker)
        actors = [actor_cls.options(**where.pin(res["actor"], places[ENV_STEP].device, replica=i),
                                    max_restarts=self.max_restarts, max_task_retries=-1)
                  .remote(algo, i, env_seed, total_steps, places[INFERENCE].variant,
                          self._torch_device(INFERENCE), places[ENV_STEP].variant) for i in range(self.actors)]
        self._register(ray, {"replay": replay, "learner": learner}, actors, res, res["actor"])
        return replay, learner, actors

    def _torch_device(self, kernel: str) -> str:
        """Where a component runs ``kernel`` in its Ray worker: its device's torch type, ``"cuda"`` (the GPU Ray
        assigned it, which its ``num_gpus`` asks for) when the plan puts the kernel on a GPU, else ``"cpu"``."""
        return runtime_of(self.plan, self.plan.placements[kernel].device).device_runtime.torch_type

    def _run(self, ray: ModuleType, total_steps: int) -> RunResult:
        algo = self.algorithm
        n = algo.config.n_envs
        schedule = TrainSchedule.from_config(algo.config, total_steps, lookahead_rounds=self.lookahead_rounds)
        session = self.session(total_steps)
        resumed = session.resume()
        replay, learner, actors = self._start(ray, total_steps, resumed, session.env_seed)
        log = session.open_log()
        session.watch_remote(self.plan.variant(LEARNER_UPDATE))
        try:
            loop = _Driver(ray, schedule, replay, learner, actors, session, self)
            try:
                loop.run()
            except ray.exceptions.RayError as exc:
                raise self._failure(exc, loop.step * n) from None
            eval_returns, gradient_steps = self._finish(ray, session, learner, actors)
            timings = ray.get([w.timings.remote() for w in (replay, learner, *actors)])
        finally:
            log.close()
            for handle in (*actors, learner, replay):
                ray.kill(handle)
        return session.result(env_steps=schedule.vector_steps * n, gradient_steps=gradient_steps,
                              eval_returns=eval_returns, episodes=loop.episodes, backend="ray",
                              kernel_times=merge_kernel_times([session.progress.kernel_times, *timings],
                                                              simulated_kernels(self.plan)),
                              # actors collect the next rounds on the parameters of the round before: not measured
                              policy_lag={"bound": schedule.gradient_steps * self.lookahead_rounds,
                                          "max_observed": None},
                              layout={"nodes": self.ran_on()})


class _Driver:
    """The schedule loop on the driver: dispatch collection, feed the replay in order, train, sync."""

    def __init__(self, ray: ModuleType, schedule: TrainSchedule, replay: Any, learner: Any, actors: list[Any],
                 session: RunSession, executor: RayExecutor) -> None:
        self.ray, self.s, self.replay, self.learner, self.actors = ray, schedule, replay, learner, actors
        self.session, self.log, self.x, self.progress = session, session.log, executor, session.progress
        self.queue: deque[tuple[Any, Any, Any, int]] = deque()
        # a resumed run continues at its checkpoint's vector step, whose round's updates are done
        self.dispatched = self.step = self.progress.transitions // schedule.n_envs
        self.updates = schedule.updates_until(self.step)
        self.episodes = self.progress.episodes
        self.adds: list[Any] = []
        self.eval_history = self.progress.eval_history
        self.params: Any = None
        self.statistics: Any = None
        """The learner's ``normalize`` statistics every collection dispatched from now on starts from (a reference)."""

    def run(self) -> None:
        ray, s = self.ray, self.s
        self._sync()
        self.session.clock.start()
        while True:
            due = s.updates_until(self.step)
            if self.updates < due:
                ray.get(self.adds)
                self.adds = []
                beta = round_beta(self.x.algorithm, s, self.step)
                losses, seconds = ray.get(self.learner.train.remote(
                    due - self.updates, beta, round_progress_remaining(s, self.step),
                    self.session.remote_options(due - self.updates)))
                self.updates = due
                self.session.round_ended(self.step * s.n_envs, due, seconds=seconds)
                self.log.train(self.step * s.n_envs, losses,
                               self.step * s.n_envs / max(self.session.clock.seconds, 1e-9))
                self._sync()
                self._maybe_evaluate(self.step)
                if self.session.due(self.step * s.n_envs):
                    self._checkpoint()
                continue
            if self.step >= s.vector_steps:
                return
            target = s.next_round(self.step)
            self._dispatch(min(target + s.train_freq * s.lookahead_rounds, s.vector_steps))
            while self.step < target:
                self._consume()

    def _dispatch(self, upto: int) -> None:
        """Ask the actors for vector steps up to ``upto``, one round at a time, split evenly."""
        s, count = self.s, len(self.actors)
        while self.dispatched < upto:
            end = min((self.dispatched // s.train_freq + 1) * s.train_freq, upto)
            steps = end - self.dispatched
            offset = self.dispatched
            for i, actor in enumerate(self.actors):
                chunk = steps // count + (i < steps % count)
                if chunk:
                    rows, episodes, share = actor.collect.options(num_returns=3).remote(
                        chunk, offset * s.n_envs, self.params, self.statistics)
                    self.queue.append((rows, episodes, share, chunk))
                    offset += chunk
            self.dispatched = end

    def _consume(self) -> None:
        """Insert the next chunk (in dispatch order) and run the learner's per-step hooks."""
        rows, episodes, share, chunk = self.queue.popleft()
        n = self.s.n_envs
        self.adds.append(self.replay.add.remote(rows))
        if self.x.algorithm.obs_transform is not None:  # in chunk order, before the round that trains on it
            self.learner.merge_share.remote(share)
        for offset, ret, length in self.ray.get(episodes):
            self.log.episode(self.step * n + offset + 1, ret, length)
            self.episodes += 1
        self.learner.after_env_steps.remote(self.step + 1, self.step + chunk)
        for j in range(self.step + 1, self.step + chunk + 1):
            if not self.s.is_round(j):
                self._maybe_evaluate(j)
        self.step += chunk

    def _sync(self) -> None:
        """The acting parameters every collection dispatched from now on acts on (an object reference)."""
        self.params = self.learner.acting_params.remote()
        self.statistics = self.learner.statistics.remote()

    def _checkpoint(self) -> None:
        """After a training round, every consumed chunk in the replay: the learner, the replay and the counters
        (chunks dispatched ahead are dropped and collected again on resume); not training time."""
        ray, n = self.ray, self.s.n_envs
        with self.session.clock.paused():
            learner_state, torch_rng, cuda_rng = ray.get(self.learner.checkpoint_state.remote())
            replay_state = ray.get(self.replay.state_dict.remote())
            timings = ray.get([w.timings.remote() for w in (self.replay, self.learner, *self.actors)])
            progress = self.session.snapshot(timings, transitions=self.step * n, episodes=self.episodes)
            self.x.fetch_statistics(ray, self.learner)   # of every consumed chunk
        self.session.checkpoint(learner_state, replay_state, progress, rng=(torch_rng, cuda_rng))

    def _maybe_evaluate(self, step: int) -> None:
        x, n = self.x, self.s.n_envs
        if not x.eval_freq or (step * n) % x.eval_freq >= n:
            return
        with self.session.clock.paused():
            returns = self.ray.get(self.learner.evaluate.remote(x.eval_episodes, x.seed + EVAL_SEED_OFFSET))
        self.eval_history.append({"step": step * n, "return_mean": sum(returns) / max(len(returns), 1)})
