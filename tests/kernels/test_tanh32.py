"""The fused kernels' tanh: correctly rounded float32 (as ``np.tanh`` in float64 rounded), sign and NaN kept."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from pearl_py.kernels.mlp_numba import ACT_TANH, bias_act, tanh32  # noqa: E402


def rounded_tanh(x: np.ndarray) -> np.ndarray:
    return np.tanh(x.astype(np.float64)).astype(np.float32)


def test_a_million_points_are_correctly_rounded():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0.0, 3.0, 500_000), rng.uniform(-10.5, 10.5, 400_000),
                        np.sign(rng.normal(size=100_000)) * 10.0 ** rng.uniform(-38, 1, 100_000)]).astype(np.float32)
    z = x.reshape(1000, 1000).copy()
    bias_act(z, np.zeros(1000, np.float32), ACT_TANH)       # the loop the fused kernels run
    np.testing.assert_array_equal(z.ravel(), rounded_tanh(x))


@pytest.mark.parametrize("x, expected", [(0.0, 0.0), (1e-45, 1e-45), (-1e-30, -1e-30), (0.5, np.tanh(0.5)),
                                         (9.0, np.tanh(9.0)), (10.0, 1.0), (-40.0, -1.0), (3.4e38, 1.0),
                                         (np.inf, 1.0), (-np.inf, -1.0)])
def test_edge_values(x, expected):
    assert tanh32(np.float32(x)) == np.float32(expected)


def test_negative_zero_keeps_its_sign_and_nan_stays_nan():
    assert np.signbit(tanh32(np.float32(-0.0)))
    assert np.isnan(tanh32(np.float32(np.nan)))
