"""Micro-benchmarks of the on-policy kernels: the real code of the on-policy executors, timed one call at a time.

Registered with :func:`pearl_py.profile.microbench.register_runner` (``pearl profile`` calibrates them):
``rollout_insert`` (:meth:`RolloutBuffer.add`), ``advantage`` (:meth:`RolloutBuffer.compute_advantages`), and the
on-policy ``inference`` and ``learner_update`` (``reference``, ``fused``) as the executors time them
(docs/cost-models.md §4b).

Example::

    >>> workload, call = build(ADVANTAGE, "reference", BenchPoint(ADVANTAGE, capacity=32, batch=8), FAMILY)
    >>> time_call(call)
"""
from __future__ import annotations

import itertools

import numpy as np
import torch

from pearl_py.profile.microbench import BenchPoint, _algorithm, register_runner
from pearl_py.protocol.kernel import (
    ADVANTAGE,
    INFERENCE,
    LEARNER_UPDATE,
    ROLLOUT_INSERT,
)
from pearl_py.protocol.workload import AdvantageWorkload, RolloutWorkload

FAMILY = "on_policy"
BENCH_ENV = "CartPole-v1"
"""The rollout kernels' env (their cost depends on the observation size only through bytes)."""


def _filled_rollout(n_steps: int, n_envs: int):
    from pearl_py.algorithms.on_policy.derive import item_bytes
    from pearl_py.algorithms.ppo import PPO
    from pearl_py.replay.rollout import RolloutBuffer

    algo = PPO(BENCH_ENV, n_envs=1, n_steps=2)
    spec = algo.spec
    rollout = RolloutBuffer(n_steps, n_envs, (spec.obs_dim,), spec.action_shape, spec.action_dtype, seed=0)
    rng = np.random.default_rng(0)
    rows = [(rng.standard_normal((n_envs, spec.obs_dim), dtype=np.float32), rng.integers(0, 2, n_envs),
             rng.standard_normal(n_envs, dtype=np.float32), (rng.random(n_envs) < 0.05).astype(np.float32),
             rng.standard_normal(n_envs, dtype=np.float32), rng.standard_normal(n_envs, dtype=np.float32))
            for _ in range(min(n_steps, 8))]
    for t in range(n_steps):
        rollout.add(*rows[t % len(rows)])
    return rollout, rows, item_bytes(algo)


def rollout_insert_reference(point: BenchPoint):
    """One ``add`` of ``batch`` envs; the rollout restarts when full (``reset`` is two assignments)."""
    rollout, rows, item = _filled_rollout(point.capacity, point.batch)
    row = rows[0]

    def call() -> None:
        if rollout.full:
            rollout.reset()
        rollout.add(*row)

    return RolloutWorkload(point.capacity, point.batch, item, point.batch), call


def advantage_reference(point: BenchPoint):
    """GAE over a full rollout of ``capacity`` steps x ``batch`` envs."""
    rollout, _, _ = _filled_rollout(point.capacity, point.batch)
    last_values = np.zeros(point.batch, np.float32)
    last_dones = np.zeros(point.batch, np.float32)
    return AdvantageWorkload(point.capacity, point.batch), \
        lambda: rollout.compute_advantages(last_values, last_dones, 0.98, 0.8)


def _acting(point: BenchPoint, variant: str):
    from pearl_py.algorithms.on_policy.learner import OnPolicyLearner
    from pearl_py.algorithms.on_policy.noise import EnvStreams
    from pearl_py.kernels.on_policy import build_acting

    algo = _algorithm(point, n_envs=point.batch)
    workload = algo.protocol().kernel(INFERENCE).workload
    acting = build_acting(variant, algo, OnPolicyLearner(algo).nets)
    obs = np.random.default_rng(0).standard_normal((point.batch, algo.spec.obs_dim), dtype=np.float32)
    streams, steps = EnvStreams(0, range(point.batch)), itertools.count()   # the uniforms as a collector draws them
    return workload, lambda: acting(obs, streams.uniforms(next(steps), acting.noise_width))


def _learning(point: BenchPoint, variant: str):
    """One ``learner_update`` call as the executors time it: the minibatch gathered from a filled rollout (a
    shuffled order), then the step."""
    from pearl_py.algorithms.on_policy.learner import OnPolicyLearner
    from pearl_py.kernels.on_policy import install_update
    from pearl_py.replay.rollout import RolloutBuffer

    hyper = {"n_envs": 1, "n_steps": max(point.batch, 2)}
    if point.algo == "ppo":
        hyper.update(batch_size=point.batch, n_epochs=1)
    algo = _algorithm(point, **hyper)
    workload = algo.protocol().kernel(LEARNER_UPDATE).workload
    with torch.random.fork_rng():
        torch.manual_seed(0)
        learner = OnPolicyLearner(algo)
    install_update(variant, learner)
    rng = np.random.default_rng(0)
    rows, spec = workload.batch, algo.spec
    obs = rng.standard_normal((rows, 1, spec.obs_dim), dtype=np.float32)
    actions = rng.integers(0, spec.action_dim, (rows, 1)) if spec.discrete \
        else rng.uniform(-1, 1, (rows, 1, spec.action_dim)).astype(np.float32)
    with torch.no_grad():
        _, log_probs, _ = learner.nets.online.policy.evaluate(torch.from_numpy(obs[:, 0]), torch.as_tensor(actions[:, 0]))
    rollout = RolloutBuffer(rows, 1, (spec.obs_dim,), spec.action_shape, spec.action_dtype, seed=0)
    noise = rng.standard_normal((3, rows, 1), dtype=np.float32)
    rollout.fill(obs, actions, noise[0], np.zeros((rows, 1), np.float32), noise[1], log_probs.numpy()[:, None])
    rollout.compute_advantages(np.zeros(1, np.float32), np.zeros(1, np.float32), 0.99, 0.95)
    orders = itertools.cycle([np.random.default_rng(i).permutation(rows) for i in range(4)])
    return workload, lambda: learner.update(rollout.sample(next(orders)), 1.0)


register_runner(ROLLOUT_INSERT, "reference", rollout_insert_reference, family=FAMILY)
register_runner(ADVANTAGE, "reference", advantage_reference, family=FAMILY)
for _variant in ("reference", "fused"):
    register_runner(INFERENCE, _variant, lambda point, v=_variant: _acting(point, v), family=FAMILY)
    register_runner(LEARNER_UPDATE, _variant, lambda point, v=_variant: _learning(point, v), family=FAMILY)
