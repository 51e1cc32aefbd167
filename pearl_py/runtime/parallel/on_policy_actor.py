"""The on-policy actor process: collects its share of every rollout into shared memory, then waits.

Actor ``i`` steps the envs ``spec.envs`` (seeded ``seed + env``, ``+ 10_007 * generation`` after a restart). For
rollout ``k`` it waits for the learner's ``limit``, copies the newest parameters (``param_sync``), collects its
columns of the :class:`SharedRollout`, reports ``k + 1`` and rings the learner. A restarted actor re-collects the
rollout it was in; exceptions propagate (the supervisor restarts it).

Example (what :class:`OnPolicyParallelExecutor` does)::

    >>> pool = ActorPool(specs, max_restarts=3, target=run_on_policy_actor)
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from pearl_py.algorithms.networks import Networks
from pearl_py.algorithms.on_policy.base import OnPolicyAlgorithm
from pearl_py.kernels.on_policy import build_acting, warm_up
from pearl_py.protocol.kernel import PARAM_SYNC, ROLLOUT_INSERT
from pearl_py.runtime.collect import Record
from pearl_py.runtime.on_policy_collect import RolloutCollector
from pearl_py.runtime.parallel.actor import RESTART_SEED_STRIDE, wait_until
from pearl_py.runtime.parallel.control import ControlBlock
from pearl_py.runtime.parallel.params import ParamBoard
from pearl_py.runtime.parallel.process import Doorbell, child_process
from pearl_py.runtime.parallel.shared_rollout import SharedRollout
from pearl_py.runtime.parallel.shared_statistics import SharedStatistics


@dataclass(frozen=True)
class OnPolicyActorSpec:
    """Everything an on-policy actor process needs (pickled once, at start)."""

    algorithm: OnPolicyAlgorithm
    index: int
    envs: range
    """The run's envs this actor steps (their global indices)."""
    seed: int
    """The run's seed: the envs' noise streams."""
    env_seed: int
    """Env ``i`` of this session resets with ``env_seed + i`` (the run's seed, plus an offset per resumed session)."""
    generation: int
    rollouts: int
    """Rollouts of this session."""
    rollouts_before: int
    """Rollouts of earlier sessions (the vector steps' numbers go on from there)."""
    rollout: str
    params: str
    control: str
    error_file: str
    inference: str = "reference"
    """Variant of the inference kernel (``pearl_py.kernels.on_policy``)."""
    env_step: str = "reference"
    """Variant of the env_step kernel (:mod:`pearl_py.kernels.env_step`)."""
    room_bell: Doorbell | None = None
    """Rung by the learner when it allows the next rollout."""
    done_bell: Doorbell | None = None
    """Rung by this actor after each rollout (the learner waits on it)."""
    statistics: str | None = None
    """The :class:`SharedStatistics` segment (``normalize``): the actor acts with the published statistics and
    reports its share after each rollout."""

    @property
    def generation_seed(self) -> int:
        """The envs' seed base of this generation (a restarted actor's envs start new episodes)."""
        return self.env_seed + RESTART_SEED_STRIDE * self.generation


def run_on_policy_actor(spec: OnPolicyActorSpec) -> None:
    """Process entry point: attach the shared segments, collect until done or stopped, detach."""
    with child_process(spec.error_file, threads=1):
        control, rollout = ControlBlock.attach(spec.control), SharedRollout.attach(spec.rollout)
        board = ParamBoard.attach(spec.params)
        statistics = SharedStatistics.attach(spec.statistics) if spec.statistics else None
        try:
            _collect(spec, control, rollout, board, statistics)
        finally:
            if statistics is not None:
                statistics.close()
            board.close()
            rollout.close()
            control.close()


def _collect(spec: OnPolicyActorSpec, control: ControlBlock, shared: SharedRollout, board: ParamBoard,
             statistics: SharedStatistics | None) -> None:
    algo, index = spec.algorithm, spec.index
    n_steps = algo.config.n_steps

    def record(kernel: str, seconds: float) -> None:
        control.add_time(index, kernel, seconds)

    nets = Networks(algo.build_networks())
    acting_state = nets.acting_state(algo.acting_networks)
    board.read_into(acting_state)
    acting = build_acting(spec.inference, algo, nets)
    warm_up(algo, acting=acting)
    if statistics is not None:  # before the collector: its envs' reset observations count in the share
        algo.obs_transform.track()
    collector = RolloutCollector(algo, spec.seed, acting, record, envs=spec.envs, env_seed=spec.generation_seed,
                                 env_variant=spec.env_step)
    try:
        control.set_ready(index)
        if spec.done_bell is not None:
            spec.done_bell.ring()
        k = control.produced_by(index)
        while k < spec.rollouts:
            if not wait_until(lambda: control.limit > k, control, spec.room_bell):  # noqa: B023
                return
            start = time.perf_counter()
            if board.read_into(acting_state):
                record(PARAM_SYNC, time.perf_counter() - start)
            if statistics is not None:  # every rollout starts from the published statistics (as on Ray)
                statistics.load_published(algo.obs_transform)
            collect_rollout(collector, shared, spec.envs, (spec.rollouts_before + k) * n_steps, n_steps, record)
            if statistics is not None:
                statistics.report(index, algo.obs_transform)
            k += 1
            control.set_produced(index, k)
            if spec.done_bell is not None:
                spec.done_bell.ring()
        control.finish(index)
    finally:
        collector.close()


def collect_rollout(collector: RolloutCollector, shared: SharedRollout, envs: range, first: int, n_steps: int,
                    record: Record) -> None:
    """One rollout of envs ``envs`` into their columns of ``shared``: the run's vector steps ``first`` to
    ``first + n_steps - 1``, then V of the observations after the last (the Ray backend's actors run it too)."""
    for t in range(n_steps):
        step = collector.step(first + t)
        start = time.perf_counter()
        shared.put(t, envs, step)
        record(ROLLOUT_INSERT, time.perf_counter() - start)
    shared.put_last(envs, *collector.last_values())
