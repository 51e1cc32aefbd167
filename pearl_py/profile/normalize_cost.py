"""The cost of ``normalize`` (SB3's VecNormalize, :mod:`pearl_py.envs.normalize`): ``pearl profile`` times it.

The collector's step (``observe`` then ``reward``) and the learner's sample (``sample``) are each timed on this CPU
(process CPU time) at the ends of :data:`STEP_SHAPES` and :data:`SAMPLE_SHAPES`, each pair giving the line
``seconds = a + b * values`` kept as ``calibration.meta["normalize_s"]`` (docs/cost-models.md §8, "normalize").

Example::

    >>> lines = time_normalize()
    >>> lines["step"]["per_call"] > 0 and lines["sample"]["per_value"] >= 0
    True
"""
from __future__ import annotations

import numpy as np

from pearl_py.envs.normalize import Normalize, ObsRewardNormalizer
from pearl_py.profile.microbench import time_call
from pearl_py.replay.buffer import SampleBatch

STEP_SHAPES = ((1, 4), (16, 64))
"""``(envs, observation size)`` of the collector's step timed: CartPole's one env, a MuJoCo-sized vector."""
SAMPLE_SHAPES = ((32, 4), (256, 64))
"""``(batch, observation size)`` of the learner's sample timed."""


def _step_call(rows: int, obs_dim: int):
    rng = np.random.default_rng(0)
    transform = ObsRewardNormalizer(Normalize(), (obs_dim,), gamma=0.99)
    obs = rng.standard_normal((rows, obs_dim)).astype(np.float32)
    rewards, done = rng.standard_normal(rows).astype(np.float32), np.zeros(rows, bool)
    transform.begin(obs)

    def call() -> None:
        transform.observe(obs)
        transform.reward(rewards, done)
    return call


def _sample_call(rows: int, obs_dim: int):
    rng = np.random.default_rng(0)
    transform = ObsRewardNormalizer(Normalize(), (obs_dim,), gamma=0.99)
    transform.begin(rng.standard_normal((rows, obs_dim)).astype(np.float32))
    obs, next_obs = (rng.standard_normal((rows, obs_dim)).astype(np.float32) for _ in range(2))
    batch = SampleBatch(obs, np.zeros(rows, np.int64), rng.standard_normal(rows).astype(np.float32), next_obs,
                        np.zeros(rows, np.float32), np.arange(rows), np.ones(rows, np.float32))
    return lambda: transform.sample(batch)


def _line(make, shapes: tuple[tuple[int, int], ...]) -> dict[str, float]:
    """``{"per_call": a, "per_value": b}`` through the timed ends of ``shapes`` (b never below 0)."""
    (r0, d0), (r1, d1) = shapes[0], shapes[-1]
    t0, t1 = time_call(make(r0, d0)), time_call(make(r1, d1))
    per_value = max((t1 - t0) / (r1 * d1 - r0 * d0), 0.0)
    return {"per_call": round(max(t0 - per_value * r0 * d0, 0.0), 9), "per_value": round(per_value, 12)}


def time_normalize() -> dict[str, dict[str, float]]:
    """The collector's step (``step``) and the learner's sample (``sample``) as lines of the values they touch."""
    return {"step": _line(_step_call, STEP_SHAPES), "sample": _line(_sample_call, SAMPLE_SHAPES)}
