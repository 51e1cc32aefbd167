"""The on-policy collection loop, written once: the serial executor and every actor of the parallel runtime step it.

A :class:`RolloutCollector` steps a range of the run's envs one vector step at a time: ``inference`` from each
env's own uniforms (:mod:`pearl_py.algorithms.on_policy.noise`), ``env_step``, and SB3's truncation bootstrap. Env
``i`` resets with seed ``seed + i`` wherever it runs, and a row-invariant acting kernel (``fused``) makes env ``i``'s
step independent of its neighbours, so actors that split the envs collect the serial executor's rollout exactly.

Example (the serial executor's rollout)::

    >>> collector = RolloutCollector(algo, seed=0, acting=acting, record=timer.add)
    >>> for t in range(cfg.n_steps):
    ...     step = collector.step(rollout_index * cfg.n_steps + t)        # the run's vector step number
    ...     rollout.add(step.obs, step.actions, step.rewards, step.episode_starts, step.values, step.log_probs)
    >>> last_values, last_dones = collector.last_values()
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from pearl_py.algorithms.on_policy.base import OnPolicyAlgorithm
from pearl_py.algorithms.on_policy.noise import EnvStreams
from pearl_py.kernels.on_policy_inference import Acted, ActingKernel
from pearl_py.protocol.kernel import INFERENCE
from pearl_py.replay.gae import bootstrap_truncated
from pearl_py.runtime.collect import Collected, Collector, Record


@dataclass(frozen=True)
class RolloutStep:
    """One vector step of a rollout: what the rollout stores, and the step itself (episodes that ended)."""

    step: Collected
    rewards: np.ndarray
    """The env's rewards plus ``gamma * V(final obs)`` where a time limit cut an episode."""
    values: np.ndarray
    log_probs: np.ndarray
    episode_starts: np.ndarray
    """1 where the step's observation is the first of an episode."""

    @property
    def obs(self) -> np.ndarray:
        return self.step.obs

    @property
    def actions(self) -> np.ndarray:
        return self.step.actions


class RolloutCollector:
    """Envs ``envs`` of the run (default all), seeded ``env_seed + i`` (default ``seed``), acting with ``acting``.

    ``seed`` keys the per-env noise streams (the run's seed: a restarted actor, whose envs get a new seed, keeps
    drawing from its envs' streams). ``env_variant``: the plan's ``env_step`` variant (:class:`Collector`).
    """

    def __init__(self, algorithm: OnPolicyAlgorithm, seed: int, acting: ActingKernel, record: Record,
                 envs: range | None = None, env_seed: int | None = None, env_variant: str = "reference") -> None:
        self.algorithm, self.seed, self.acting, self.record = algorithm, seed, acting, record
        self.envs = envs if envs is not None else range(algorithm.config.n_envs)
        self.streams = EnvStreams(seed, self.envs)
        self.collector = Collector(algorithm, seed if env_seed is None else env_seed, record, envs=self.envs,
                                   env_variant=env_variant)
        self.episode_starts = np.ones(len(self.envs), dtype=np.float32)   # every env starts an episode

    def step(self, vector_step: int) -> RolloutStep:
        """The run's vector step number ``vector_step`` (it picks the envs' uniforms)."""
        acted: list[Acted] = []

        def policy(obs: np.ndarray) -> np.ndarray:
            noise_step = self.algorithm.noise_step(vector_step)
            out = self.acting(obs, self.streams.uniforms(noise_step, self.acting.noise_width))
            acted.append(out)
            return out.actions

        step = self.collector.step(policy)
        out, = acted
        starts = self.episode_starts
        self.episode_starts = step.done.astype(np.float32)
        return RolloutStep(step, self._bootstrapped(step), out.values, out.log_probs, starts)

    def last_values(self) -> tuple[np.ndarray, np.ndarray]:
        """V of the observations after the rollout's last step (an ``inference`` call), and whether that step
        ended each env's episode."""
        start = time.perf_counter()
        values = self.acting.values(self.collector.obs)
        self.record(INFERENCE, time.perf_counter() - start)
        return values, self.episode_starts

    def _bootstrapped(self, step: Collected) -> np.ndarray:
        """Rewards plus ``gamma * V(final obs)`` for episodes a time limit cut (none on most steps)."""
        cut = step.truncated & ~step.terminated
        final_values = np.zeros(len(step.rewards), dtype=np.float32)
        if cut.any():
            start = time.perf_counter()
            final_values[cut] = self.acting.values(step.next_obs[cut])
            self.record(INFERENCE, time.perf_counter() - start)
        return bootstrap_truncated(step.rewards, step.terminated, step.truncated, final_values,
                                   self.algorithm.config.gamma)

    @property
    def episodes(self) -> int:
        return self.collector.episodes

    def close(self) -> None:
        self.collector.close()
