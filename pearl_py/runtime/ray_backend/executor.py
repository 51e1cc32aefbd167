"""``RayExecutor``: a plan executed by Ray actors — actor workers, a replay server, a learner.

The driver replays the serial schedule on virtual vector steps, like the local parallel
runtime: it asks the actor workers for the next round's transitions while the learner
trains on the current one (``lookahead_rounds``), hands each chunk's object reference to
the replay server in order (the data goes actor → object store → replay, not through the
driver), and lets the learner run exactly the updates the serial loop would. Parameters
go to the actors after every round. Each component gets the Ray resources the plan gives
it (:mod:`resources`); without ``address`` a local Ray cluster is started (with an
``FPGA`` resource when the plan uses a simulated FPGA) and stopped at the end.

Example::

    >>> result = RayExecutor(pearl.DQN("CartPole-v1"), plan, seed=0, address="auto").run(50_000)
    >>> result.backend, result.env_steps
    ('ray', 50000)
    >>> executor.components["replay"]["pid"] != executor.components["learner"]["pid"]
    True
"""
from __future__ import annotations

import math
import time
from collections import deque
from pathlib import Path
from types import ModuleType
from typing import Any

from pearl_py.algorithms.networks import Networks
from pearl_py.algorithms.off_policy.base import Algorithm
from pearl_py.errors import UserError
from pearl_py.plan import Plan
from pearl_py.protocol.kernel import ENV_STEP, INFERENCE, LEARNER_UPDATE, REPLAY_INSERT
from pearl_py.protocol.schedule import TrainSchedule
from pearl_py.runtime.collect import round_beta
from pearl_py.runtime.evaluation import EVAL_SEED_OFFSET
from pearl_py.runtime.kernel_devices import simulated_kernels
from pearl_py.runtime.parallel.placement import runtime_of
from pearl_py.runtime.ray_backend.require import import_ray
from pearl_py.runtime.ray_backend.resources import component_resources, needs
from pearl_py.runtime.result import RunResult
from pearl_py.runtime.run_log import RunLog
from pearl_py.runtime.timing import merge_kernel_times


class RayExecutor:
    """Runs ``algorithm`` under ``plan`` on a Ray cluster; see the module docstring."""

    def __init__(self, algorithm: Algorithm, plan: Plan, seed: int = 0, *, address: str | None = None,
                 out_dir: Path | None = None, eval_episodes: int = 10, eval_freq: int = 0,
                 progress: bool | None = None, lookahead_rounds: int = 1) -> None:
        self.algorithm = algorithm
        self.plan = plan
        self.seed = seed
        self.address = address
        self.out_dir = Path(out_dir) if out_dir is not None else None
        self.eval_episodes = eval_episodes
        self.eval_freq = eval_freq
        self.progress = progress
        self.lookahead_rounds = lookahead_rounds
        self.resources = component_resources(plan)
        self.actors = max(plan.placements[ENV_STEP].replicas, 1)
        self.trained_networks: Networks | None = None
        """After ``run``: the learner's networks, fetched to this process (the trained policy)."""
        self.components: dict[str, Any] = {}
        """After ``run``: each component's process id, Ray actor id and resources."""

    def run(self, total_steps: int) -> RunResult:
        ray = import_ray()
        started_here = self._connect(ray)
        try:
            return self._run(ray, total_steps)
        finally:
            if started_here:
                ray.shutdown()

    def _connect(self, ray: ModuleType) -> bool:
        """Join ``address`` or the running Ray session, else start a local one; check the resources fit."""
        need = needs(self.resources, self.actors)
        started = False
        if not ray.is_initialized():
            if self.address is not None:
                ray.init(address=self.address, include_dashboard=False, log_to_driver=False)
            else:
                custom = {k: v for k, v in need.items() if k not in ("CPU", "GPU")}
                ray.init(num_cpus=max(math.ceil(need.get("CPU", 0.0)), 1), resources=custom or None,
                         include_dashboard=False, log_to_driver=False)
            started = True
        have = ray.cluster_resources()
        short = [f"{k} {v:g} (the cluster has {have.get(k, 0):g})" for k, v in need.items()
                 if have.get(k, 0.0) + 1e-9 < v]
        if short:
            if started:
                ray.shutdown()
            raise UserError(f"plan: the Ray cluster lacks resources for {self.actors} actors, the replay and the "
                            f"learner; needs {', '.join(short)}")
        return started

    def _start(self, ray: ModuleType, total_steps: int) -> tuple[Any, Any, list[Any]]:
        from pearl_py.runtime.ray_backend import workers

        algo, places, res = self.algorithm, self.plan.placements, self.resources
        replay = ray.remote(workers.ReplayServer).options(**res["replay"]).remote(
            algo, self.seed, self._torch_device(REPLAY_INSERT))
        learner = ray.remote(workers.LearnerWorker).options(**res["learner"]).remote(
            algo, self.seed, self._torch_device(LEARNER_UPDATE), places[LEARNER_UPDATE].variant, replay)
        actor_cls = ray.remote(workers.ActorWorker).options(**res["actor"])
        actors = [actor_cls.remote(algo, i, self.seed, total_steps, places[INFERENCE].variant,
                                   self._torch_device(INFERENCE)) for i in range(self.actors)]
        pids = ray.get([replay.pid.remote(), learner.pid.remote()] + [a.pid.remote() for a in actors])
        self.components = {
            "replay": {"pid": pids[0], "actor_id": replay._actor_id.hex(), "resources": res["replay"]},
            "learner": {"pid": pids[1], "actor_id": learner._actor_id.hex(), "resources": res["learner"]},
            "actors": [{"pid": pid, "actor_id": a._actor_id.hex(), "resources": res["actor"]}
                       for pid, a in zip(pids[2:], actors)]}
        return replay, learner, actors

    def _torch_device(self, kernel: str) -> str:
        """Where a component runs ``kernel`` in its Ray worker: ``"cuda"`` (the GPU Ray assigned it, which its
        ``num_gpus`` asks for) when the plan puts the kernel on a GPU, else ``"cpu"``."""
        return "cuda" if runtime_of(self.plan, self.plan.placements[kernel].device).runtime == "cuda" else "cpu"

    def _run(self, ray: ModuleType, total_steps: int) -> RunResult:
        algo = self.algorithm
        n = algo.config.n_envs
        schedule = TrainSchedule.from_config(algo.config, total_steps, lookahead_rounds=self.lookahead_rounds)
        replay, learner, actors = self._start(ray, total_steps)
        log = RunLog(self.out_dir, total_steps, self.progress, algorithm=algo)
        try:
            loop = _Driver(ray, schedule, replay, learner, actors, log, self)
            loop.run()
            eval_returns = ray.get(learner.evaluate.remote(self.eval_episodes, self.seed + EVAL_SEED_OFFSET))
            timings = ray.get([w.timings.remote() for w in (replay, learner, *actors)])
            gradient_steps = ray.get(learner.gradient_steps.remote())
            self.trained_networks = algo.fresh_networks()
            self.trained_networks.load_state_dict(ray.get(learner.networks_state.remote()))
        finally:
            log.close()
            for handle in (*actors, learner, replay):
                ray.kill(handle)
        return RunResult(algorithm=algo.name, env=algo.env_id, seed=self.seed, env_steps=schedule.vector_steps * n,
                         gradient_steps=gradient_steps, wall_seconds=loop.wall_seconds, eval_returns=eval_returns,
                         plan=self.plan.to_dict(), kernel_times=self._kernel_times(timings),
                         episodes=loop.episodes, eval_history=loop.eval_history, backend="ray",
                         # actors collect the next rounds on the parameters of the round before: not measured
                         policy_lag={"bound": schedule.gradient_steps * self.lookahead_rounds, "max_observed": None})

    def _kernel_times(self, timings: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, Any]]:
        """Summed over every worker; kernels planned on a simulated device charged their modelled time."""
        return merge_kernel_times(timings, simulated_kernels(self.plan))


class _Driver:
    """The schedule loop on the driver: dispatch collection, feed the replay in order, train, sync."""

    def __init__(self, ray: ModuleType, schedule: TrainSchedule, replay: Any, learner: Any, actors: list[Any],
                 log: RunLog, executor: RayExecutor) -> None:
        self.ray, self.s, self.replay, self.learner, self.actors = ray, schedule, replay, learner, actors
        self.log, self.x = log, executor
        self.queue: deque[tuple[Any, Any, int]] = deque()
        self.dispatched = self.step = self.updates = self.episodes = 0
        self.adds: list[Any] = []
        self.eval_history: list[dict[str, float]] = []
        self._start = time.perf_counter()
        self._eval_s = 0.0

    @property
    def wall_seconds(self) -> float:
        return time.perf_counter() - self._start - self._eval_s

    def run(self) -> None:
        ray, s = self.ray, self.s
        self._sync()
        self._start = time.perf_counter()
        while True:
            due = s.updates_until(self.step)
            if self.updates < due:
                ray.get(self.adds)
                self.adds = []
                beta = round_beta(self.x.algorithm, s, self.step)
                losses = ray.get(self.learner.train.remote(due - self.updates, beta))
                self.updates = due
                self.log.train(self.step * s.n_envs, losses, self.step * s.n_envs / max(self.wall_seconds, 1e-9))
                self._sync()
                self._maybe_evaluate(self.step)
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
                    rows, episodes = actor.collect.options(num_returns=2).remote(chunk, offset * s.n_envs)
                    self.queue.append((rows, episodes, chunk))
                    offset += chunk
            self.dispatched = end

    def _consume(self) -> None:
        """Insert the next chunk (in dispatch order) and run the learner's per-step hooks."""
        rows, episodes, chunk = self.queue.popleft()
        n = self.s.n_envs
        self.adds.append(self.replay.add.remote(rows))
        for offset, ret, length in self.ray.get(episodes):
            self.log.episode(self.step * n + offset + 1, ret, length)
            self.episodes += 1
        self.learner.after_env_steps.remote(self.step + 1, self.step + chunk)
        for j in range(self.step + 1, self.step + chunk + 1):
            if not self.s.is_round(j):
                self._maybe_evaluate(j)
        self.step += chunk

    def _sync(self) -> None:
        params = self.learner.acting_params.remote()
        for actor in self.actors:
            actor.load_params.remote(params)

    def _maybe_evaluate(self, step: int) -> None:
        x, n = self.x, self.s.n_envs
        if not x.eval_freq or (step * n) % x.eval_freq >= n:
            return
        started = time.perf_counter()
        returns = self.ray.get(self.learner.evaluate.remote(x.eval_episodes, x.seed + EVAL_SEED_OFFSET))
        self._eval_s += time.perf_counter() - started
        self.eval_history.append({"step": step * n, "return_mean": sum(returns) / max(len(returns), 1)})
