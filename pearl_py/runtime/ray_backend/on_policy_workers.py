"""The Ray actors of an on-policy run (PPO, A2C), as plain classes (``ray.remote`` wraps them at start).

Imported only once :func:`import_ray` succeeded (its base module imports ``ray``). :class:`OnPolicyActorWorker`
steps its share of the envs with the local actors' loop and returns its envs' columns (with its ``normalize`` share,
``SHARE``); :class:`OnPolicyLearnerWorker` puts the columns in place, merges the shares in actor order and learns on
the rollout, as the local learner does (docs/runtime.md).

Example (what :class:`~pearl_py.runtime.ray_backend.on_policy.OnPolicyRayExecutor` does)::

    >>> parts = [actor.collect.remote(first_step, params) for actor in actors]
    >>> stats, ended = ray.get(learner.learn.remote(progress_remaining, splits, *parts))
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from pearl_py.algorithms.networks import Networks
from pearl_py.algorithms.on_policy.base import OnPolicyAlgorithm
from pearl_py.algorithms.on_policy.learner import OnPolicyLearner
from pearl_py.kernels.affinity import LearnerThreads
from pearl_py.kernels.on_policy import build_acting, install_update, switched_update, warm_up
from pearl_py.protocol.kernel import ADVANTAGE, PARAM_SYNC
from pearl_py.runtime.monitor import LearnerOption, VariantSwitch
from pearl_py.runtime.on_policy_collect import RolloutCollector
from pearl_py.runtime.parallel.on_policy_actor import collect_rollout
from pearl_py.runtime.parallel.on_policy_loop import ROLLOUT_HANDOFF
from pearl_py.runtime.parallel.shared_rollout import SharedRollout
from pearl_py.runtime.ray_backend.workers import Acting, LearnerState, Params
from pearl_py.runtime.timing import KernelTimer

Columns = dict[str, np.ndarray]
"""One actor's envs' columns of a rollout (:meth:`SharedRollout.columns`)."""
SHARE = "normalize_share"
"""The key of an actor's ``normalize`` share (:meth:`~pearl_py.envs.normalize.ObsRewardNormalizer.take_share`)
among its columns."""


class OnPolicyActorWorker(Acting):
    """The run's envs ``envs`` (seeded ``env_seed + i``, noise streams keyed by ``seed``), acting with the plan's
    ``inference`` variant on one thread; its envs made by the plan's ``env_step`` variant."""

    def __init__(self, algorithm: OnPolicyAlgorithm, envs: range, seed: int, env_seed: int, inference: str,
                 env_step: str = "reference") -> None:
        torch.set_num_threads(1)
        self.algo, self.envs = algorithm, envs
        nets = Networks(algorithm.build_networks())
        self.acting = nets.acting_state(algorithm.acting_networks)
        acting = build_acting(inference, algorithm, nets)
        warm_up(algorithm, acting=acting)
        self.timer = KernelTimer()
        if algorithm.obs_transform is not None:  # before the collector: its envs' reset observations count
            algorithm.obs_transform.track()
        self.collector = RolloutCollector(algorithm, seed, acting, self.timer.add, envs=envs, env_seed=env_seed,
                                          env_variant=env_step)
        self.rollout = SharedRollout.create(algorithm, shared=False)

    def collect(self, first_step: int, params: Params, statistics: np.ndarray | None = None) -> Columns:
        """The rollout whose first vector step is the run's ``first_step``, acting on ``params`` and the published
        ``normalize`` ``statistics`` (with its share among the columns)."""
        self.load(params, PARAM_SYNC)
        transform = self.algo.obs_transform
        if transform is not None:
            transform.take_published(statistics)
        collect_rollout(self.collector, self.rollout, self.envs, first_step, self.algo.config.n_steps, self.timer.add)
        columns = self.rollout.columns(self.envs)
        if transform is not None:
            columns[SHARE] = transform.take_share()
        return columns


class OnPolicyLearnerWorker(LearnerState):
    """The learner on ``device`` (``learner_update`` ``variant``, switched to another by the driver's schedule: the
    ``fused`` and reference steps share its memory; ``threads`` torch threads) and its rollout, whose minibatch
    generator is seeded ``seed``."""

    def __init__(self, algorithm: OnPolicyAlgorithm, seed: int, device: str, variant: str, threads: int) -> None:
        torch.set_num_threads(threads)
        torch.manual_seed(seed)   # the initial weights (a resumed run restores its own)
        self.algo = algorithm
        self.learner = OnPolicyLearner(algorithm, device)
        self.rollout = algorithm.make_rollout(seed=seed)
        self.shared = SharedRollout.create(algorithm, shared=False)
        install_update(variant, self.learner)
        warm_up(algorithm, variant)
        self.timer = KernelTimer()
        self.threads = LearnerThreads(threads, pin=False)
        self.switch = VariantSwitch(self.threads, variant, self.learner.update,
                                    lambda other: switched_update(other, self.learner))

    def learn(self, progress_remaining: float, splits: list[range], *parts: Columns,
              options: list[int | LearnerOption] | None = None
              ) -> tuple[dict[str, float], list[tuple[int, float, int]], int, list[float]]:
        """Learn on the rollout the actors' ``parts`` (of envs ``splits``) make, its updates at ``options``
        (:meth:`scheduled`); the update's statistics, the episodes that ended in it (``SharedRollout.copy_into``), the
        learner's gradient steps since the run began and the updates' seconds (empty without ``options``)."""
        cfg = self.algo.config
        with self.timer(ROLLOUT_HANDOFF):
            for envs, part in zip(splits, parts):
                self.shared.put_columns(envs, part)
                if SHARE in part:
                    self.algo.obs_transform.merge_share(part[SHARE])
            last_values, last_dones, ended = self.shared.copy_into(self.rollout)
        with self.timer(ADVANTAGE):
            self.rollout.compute_advantages(last_values, last_dones, cfg.gamma, cfg.gae_lambda)
        seconds: list[float] = []
        self.learner.update = self.scheduled(self.switch, options, seconds)
        stats = self.learner.learn(self.rollout, progress_remaining, self.timer)
        return stats.as_log(), ended, self.learner.gradient_steps, seconds

    def rollout_rng(self) -> dict[str, Any]:
        """The minibatch generator's state (a checkpoint's rollout part)."""
        return self.rollout.rng.bit_generator.state

    def set_rollout_rng(self, state: dict[str, Any]) -> None:
        self.rollout.rng.bit_generator.state = state
