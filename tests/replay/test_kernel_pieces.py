"""The compiled pieces the replay kernels are built from: PCG64 stream, vectorized pow, 16-wide group operations."""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from pearl_py.replay import ReplayBuffer
from pearl_py.replay.fastmath import pow_into
from pearl_py.replay.pcg64 import Stream, fill_uniforms
from pearl_py.replay.simd import count_le16, min16

from .helpers import transitions


@pytest.mark.parametrize("seed", [0, 7, 2**40 + 3])
def test_the_stream_draws_numpys_default_rng_numbers_for_any_batch_size(seed):
    stream, reference = Stream(seed), np.random.default_rng(seed)
    for n in (1, 2, 3, 4, 5, 8, 13, 256, 0, 1000, 7):
        out = np.empty(n)
        fill_uniforms(stream.array, out)
        np.testing.assert_array_equal(out, reference.random(n))
        assert stream.state == reference.bit_generator.state


def test_the_stream_state_round_trips_through_numpys_format():
    stream = Stream(3)
    fill_uniforms(stream.array, np.empty(10))
    other = Stream(99)
    other.state = stream.state
    a, b = np.empty(5), np.empty(5)
    fill_uniforms(stream.array, a)
    fill_uniforms(other.array, b)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="PCG64"):
        other.state = np.random.Generator(np.random.MT19937(0)).bit_generator.state


def test_uniform_sampling_uses_exactly_default_rng_of_the_seed():
    """floor(u * N) with u = numpy.random.default_rng(seed).random(B): runs match numpy-based code bit for bit."""
    with ReplayBuffer(100, (4,), seed=11) as buf:
        buf.add(*transitions(60))
        first, second = buf.sample(32).indices, buf.sample(5).indices
    u = np.random.default_rng(11).random(37)
    np.testing.assert_array_equal(np.concatenate([first, second]), np.floor(u * 60).astype(np.int64))


@pytest.mark.parametrize("y", [0.0, 0.4, 0.6, 1.0, 2.5])
def test_pow_matches_numpy_to_a_few_ulps_of_the_exponent(y):
    """Relative error below 2**-52 * (|y ln x| + 2): the ulp-level errors of log and exp, scaled by the exponent."""
    rng = np.random.default_rng(0)
    x = 10.0 ** rng.uniform(-300, 300, 100_000)
    out = np.empty_like(x)
    pow_into(x, y, out)
    with np.errstate(over="ignore"):
        expected = x**y
    finite = np.isfinite(expected) & (expected > 0)
    bound = 2.0**-52 * (np.abs(y * np.log(x[finite])) + 2)
    assert np.all(np.abs(out[finite] / expected[finite] - 1) <= bound)
    np.testing.assert_array_equal(out[~finite], expected[~finite])


@pytest.mark.parametrize("y", [0.0, 0.5, 3.0, 100.0])
def test_pow_special_inputs_are_numpys(y):
    x = np.array([0.0, 5e-324, 1e-310, np.inf, np.nan, 1.0, 1e308, 1e-300])
    out, out32 = np.empty_like(x), np.empty(x.shape, np.float32)
    pow_into(x, y, out)
    pow_into(x, y, out32)
    with np.errstate(over="ignore", under="ignore"):
        expected = x**y
        expected32 = expected.astype(np.float32)
    np.testing.assert_allclose(out, expected, rtol=1e-13)
    np.testing.assert_allclose(out32, expected32, rtol=1e-6)


@njit
def _group_ops(a, start, u):
    return count_le16(a, np.uint64(start), u), min16(a, np.uint64(start))


def test_group_operations_agree_with_numpy():
    rng = np.random.default_rng(1)
    for _ in range(200):
        a = np.round(rng.exponential(1.0, 40), 1)           # ties on purpose
        a[rng.integers(0, 40, 3)] = np.inf
        start, u = int(rng.integers(0, 24)), float(rng.choice(a))
        count, low = _group_ops(a, start, u)
        group = a[start:start + 16]
        assert count == np.sum(group <= u) and low == group.min()
