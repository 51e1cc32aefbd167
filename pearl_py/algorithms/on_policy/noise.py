"""Per-env random streams for on-policy exploration: the uniforms env ``i`` draws at vector step ``t``.

A sampled action is a deterministic function of the policy's output and these uniforms
(:meth:`~.distributions.Categorical.sample`, :meth:`~.distributions.DiagGaussian.sample`). The
uniforms of env ``i`` at step ``t`` depend only on ``(seed, i, t)``: a counter-based generator
(the splitmix64 finaliser of Steele, Lea & Flood, OOPSLA 2014, over a per-env key), so an
executor that steps all ``n_envs`` envs and actors that step a share each draw the same numbers
for the same env, and a seeded parallel run samples the serial run's actions.

``u = ((h >> 40) + 0.5) * 2**-24`` with ``h`` the 64-bit hash, rounded to float32: never 0 (a
logarithm never sees 0); from 0.5 up float32 rounds it to its spacing, and the largest draws round
to 1.0, which the samplers take (the categorical inverse CDF clamps to the last action; Box-Muller's
``ln 1 = 0``).

Example::

    >>> u = env_uniforms(seed=0, envs=range(8), step=5, width=1)
    >>> u.shape, u.dtype
    ((8, 1), dtype('float32'))
    >>> np.array_equal(env_uniforms(0, range(4, 8), 5, 1), u[4:])    # an actor's share: the same numbers
    True
"""
from __future__ import annotations

import numpy as np

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
"""splitmix64's increment (2^64 / golden ratio)."""
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S40 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(40)
_SCALE = np.float64(2.0 ** -24)


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on uint64 values (wrapping arithmetic)."""
    x = (x ^ (x >> _S30)) * _M1
    x = (x ^ (x >> _S27)) * _M2
    return x ^ (x >> _S31)


def env_keys(seed: int, envs: range) -> np.ndarray:
    """The key of each env's stream: ``mix64(mix64(seed) + (env + 1) * GOLDEN)``."""
    base = mix64(np.array([seed & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64))
    index = np.arange(envs.start, envs.stop, dtype=np.uint64) + np.uint64(1)
    with np.errstate(over="ignore"):
        return mix64(base + index * GOLDEN)


class EnvStreams:
    """The streams of a fixed set of envs: their keys worked out once, then one vector step's uniforms per call
    (what a collector draws every step; :func:`env_uniforms` in one go).

    Example::

        >>> streams = EnvStreams(seed=0, envs=range(8))
        >>> np.array_equal(streams.uniforms(step=5, width=1), env_uniforms(0, range(8), 5, 1))
        True
    """

    def __init__(self, seed: int, envs: range) -> None:
        self.keys = env_keys(seed, envs)[:, None]
        self._draws: dict[int, np.ndarray] = {}

    def uniforms(self, step: int, width: int) -> np.ndarray:
        """``(envs, width)`` float32 uniforms in (0, 1]: draw ``k`` of env ``i`` at vector step ``step`` is
        ``mix64(key_i + (step * width + k + 1) * GOLDEN)`` scaled (uint64 arithmetic wraps)."""
        draws = self._draws.get(width)
        if draws is None:
            draws = self._draws[width] = np.arange(1, width + 1, dtype=np.uint64)[None, :]
        counters = (np.full((1, 1), step, dtype=np.uint64) * np.uint64(width) + draws) * GOLDEN   # arrays: wrap
        h = mix64(self.keys + counters)
        return (((h >> _S40).astype(np.float64) + 0.5) * _SCALE).astype(np.float32)


def env_uniforms(seed: int, envs: range, step: int, width: int) -> np.ndarray:
    """``(len(envs), width)`` float32 uniforms in (0, 1]: env ``i``'s ``width`` draws at vector step ``step``
    (:meth:`EnvStreams.uniforms`)."""
    return EnvStreams(seed, envs).uniforms(step, width)
