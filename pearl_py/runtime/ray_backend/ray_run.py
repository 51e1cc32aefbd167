"""What every Ray executor shares around its driver loop: the cluster, resuming, periodic checkpoints, failures.

A run joins ``address``, the running Ray session, or a local one it starts (and stops), once the cluster has the
resources the plan's components ask for. Periodic checkpoints are fetched from the workers and written by the
driver; Ray restarts failed actor workers (``max_restarts``). docs/ray.md, "Checkpoints and resume" and "Failures".

Example::

    >>> class MyRayExecutor(RayRun):
    ...     def _run(self, ray, total_steps): ...
    >>> MyRayExecutor(algo, plan, seed=0, address="127.0.0.1:6379", out_dir=Path("runs/x"),
    ...               checkpoints=CheckpointOptions(every=10_000)).run(50_000)
"""
from __future__ import annotations

import math
from types import ModuleType
from typing import Any

from pearl_py.algorithms.core import BaseAlgorithm
from pearl_py.algorithms.networks import Networks
from pearl_py.errors import UserError
from pearl_py.plan import Plan
from pearl_py.runtime.checkpoints import newest_checkpoint
from pearl_py.runtime.evaluation import EVAL_SEED_OFFSET
from pearl_py.runtime.ray_backend.cluster import NodePlacement, check_address
from pearl_py.runtime.ray_backend.require import import_ray
from pearl_py.runtime.ray_backend.resources import needs
from pearl_py.runtime.result import RunResult
from pearl_py.runtime.session import RunSession, SessionExecutor


class RayRun(SessionExecutor):
    """The part of a Ray executor around its schedule loop (see the module docstring); subclasses write ``_run``.
    ``options``: the :class:`~pearl_py.runtime.session.SessionExecutor`'s."""

    resources: dict[str, dict[str, object]]  # each component's Ray resources and the actor workers (the subclass's)
    actors: int

    def __init__(self, algorithm: BaseAlgorithm, plan: Plan, seed: int = 0, *, address: str | None = None,
                 max_restarts: int = 3, **options: Any) -> None:
        super().__init__(algorithm, plan, seed, **options)
        self.address = address
        self.max_restarts = max_restarts
        """Times Ray restarts each actor worker that dies (its pending collection call is sent again)."""
        self.components: dict[str, Any] = {}
        """After ``run``: each component's process id, Ray actor id, resources and Ray node (``node``)."""
        self.where: NodePlacement | None = None
        """Once connected: the Ray node of each component of a plan made on the cluster (none pinned otherwise)."""
        self.trained_networks: Networks | None = None
        """After ``run``: the learner's networks, fetched to this process (the trained policy)."""
        self.restarted: list[int] = []
        """After ``run``: the actor workers (indices) that Ray restarted during it."""

    def needs(self) -> dict[str, float]:
        """The Ray resources the run's components take (``{"CPU": 3.0, ...}``)."""
        return needs(self.resources, self.actors)

    def _run(self, ray: ModuleType, total_steps: int) -> RunResult:
        raise NotImplementedError

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
        need = self.needs()
        started = False
        if not ray.is_initialized():
            if self.address is not None:
                check_address(self.address)  # ray.init retries an address where nothing answers for minutes
                ray.init(address=self.address, include_dashboard=False, log_to_driver=False)
            else:
                custom = {k: v for k, v in need.items() if k not in ("CPU", "GPU")}
                ray.init(num_cpus=max(math.ceil(need.get("CPU", 0.0)), 1), resources=custom or None,
                         include_dashboard=False, log_to_driver=False)
            started = True
        have = ray.cluster_resources()
        short = [f"{k} {v:g} (the cluster has {have.get(k, 0):g})" for k, v in need.items()
                 if have.get(k, 0.0) + 1e-9 < v]
        try:
            if short:
                raise UserError(f"plan: the Ray cluster lacks resources for the run's actors and learner; needs "
                                f"{', '.join(short)}")
            self.where = NodePlacement(ray, self.plan)
        except UserError:
            if started:
                ray.shutdown()
            raise
        return started

    def ran_on(self) -> str:
        """Where each component ran (result.json ``layout["nodes"]``): ``"learner: node0.cpu 3f2a9c1b, actor 0: ..."``,
        the plan's device where the component was pinned to its node, else ``node`` and the Ray node id's start."""
        pinned = {nodes[0]: device for device, nodes in (self.where.nodes if self.where else {}).items()
                  if len(nodes) == 1}
        named = [(name, c) for name, c in self.components.items() if name != "actors"]
        named += [(f"actor {i}", c) for i, c in enumerate(self.components.get("actors", []))]
        return ", ".join(f"{name}: {pinned.get(c['node'], 'node')} {c['node'][:8]}" for name, c in named)

    def fetch_statistics(self, ray: ModuleType, learner: Any) -> None:
        """The learner worker's ``normalize`` statistics into this process's algorithm (what the saved policy and
        checkpoints hold); nothing without normalize."""
        if self.algorithm.obs_transform is not None:
            self.algorithm.obs_transform.load_vector(ray.get(learner.statistics.remote()))

    def _register(self, ray: ModuleType, named: dict[str, Any], actors: list[Any], resources: dict[str, Any],
                  actor_resources: dict[str, Any]) -> None:
        """Record in ``components`` each Ray actor's process id, actor id, node and resources: the ``named``
        workers' (``resources`` by name), then the actor workers' (``components["actors"]``)."""
        handles = [*named.values(), *actors]
        pids, nodes = ray.get([h.pid.remote() for h in handles]), ray.get([h.node_id.remote() for h in handles])
        found = [{"pid": pid, "actor_id": h._actor_id.hex(), "node": node, "resources": r} for h, pid, node, r in
                 zip(handles, pids, nodes, [*(resources[name] for name in named), *[actor_resources] * len(actors)])]
        self.components = {**dict(zip(named, found)), "actors": found[len(named):]}

    def _finish(self, ray: ModuleType, session: RunSession, learner: Any, actors: list[Any]
                ) -> tuple[list[float], int]:
        """After the loop: stop the clock, fetch the saved policy's statistics and networks, note the actor workers
        Ray restarted (their process is not the one they started in); the final evaluation's returns and the
        learner's gradient steps."""
        session.clock.stop()
        self.fetch_statistics(ray, learner)   # the saved policy's
        eval_returns = ray.get(learner.evaluate.remote(self.eval_episodes, self.seed + EVAL_SEED_OFFSET))
        gradient_steps = ray.get(learner.gradient_steps.remote())
        self.trained_networks = self.algorithm.fresh_networks()
        self.trained_networks.load_state_dict(ray.get(learner.networks_state.remote()))
        pids = ray.get([a.pid.remote() for a in actors])
        self.restarted = [i for i, (pid, seen) in enumerate(zip(pids, self.components["actors"])) if pid != seen["pid"]]
        return eval_returns, gradient_steps

    def _failure(self, exc: Exception, transitions: int) -> RuntimeError:
        """The error that ends a run whose learner (or an actor past its restarts) failed: what failed, where, and
        the checkpoint to resume from."""
        newest = newest_checkpoint(self.out_dir) if self.out_dir is not None else None
        resume = (f"resume from its newest checkpoint ({newest}) with --resume {self.out_dir}" if newest else
                  "no checkpoint was written (set checkpoint_freq and an output folder to be able to resume)")
        cause = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        return RuntimeError(f"the Ray run failed after {transitions} env steps: {cause}; {resume}")
