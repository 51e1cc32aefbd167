"""``numba_blas.gemm`` (both bound libraries, every transpose) and the Adam step of the fused kernels."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from pearl_py.kernels.numba_blas import BLAS_SOURCES, LARGE, numba_available

pytestmark = pytest.mark.skipif(not numba_available()[0], reason=numba_available()[1])


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize("m, k, n", [(64, 256, 256), (LARGE, LARGE, LARGE), (64, 4, 256), (64, 256, 2), (1, 4, 8)],
                         ids=["large", "threshold", "small_k", "small_n", "one_row"])
def test_gemm_equals_numpy(m, k, n, ta, tb):
    from pearl_py.kernels.numba_blas import gemm

    rng = np.random.default_rng(m * k + n)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    A = np.ascontiguousarray(a.T) if ta else a          # stored transposed when its flag says so
    B = np.ascontiguousarray(b.T) if tb else b
    C = np.full((m, n), np.nan, np.float32)
    gemm(A, ta, B, tb, C)
    np.testing.assert_allclose(C, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-4 * np.sqrt(k))


def test_gemm_sources_are_named():
    assert BLAS_SOURCES["small"] == "scipy OpenBLAS"
    assert BLAS_SOURCES["large"].startswith(("torch (", "scipy OpenBLAS"))


def test_gemm_refuses_mismatched_shapes_and_strided_rows():
    from pearl_py.kernels.numba_blas import gemm

    a, b = np.ones((4, 3), np.float32), np.ones((5, 2), np.float32)
    with pytest.raises(ValueError, match="gemm: shapes do not match"):
        gemm(a, False, b, False, np.empty((4, 2), np.float32))
    wide = np.ones((4, 6), np.float32)
    with pytest.raises(ValueError, match="gemm: arrays must have contiguous rows"):
        gemm(wide[:, ::2], False, np.ones((3, 2), np.float32), False, np.empty((4, 2), np.float32))


def test_adam_matches_torch_and_stores_subnormal_state_as_zero():
    """One step equals ``torch.optim.Adam``'s (clip factor folded in); a dead unit's subnormal ``exp_avg``
    becomes 0 instead of staying subnormal; NaN gradients still reach the parameter."""
    from pearl_py.kernels.mlp_numba import adam

    rng = np.random.default_rng(0)
    n = 1000
    p0 = rng.standard_normal(n, dtype=np.float32)
    g = rng.standard_normal(n, dtype=np.float32)
    g[:10] = 0.0
    g[10] = np.nan
    m0 = rng.standard_normal(n, dtype=np.float32) * 1e-3
    m0[:10] = np.float32(1e-44)                      # subnormal: what torch's lerp leaves for a dead unit
    v0 = np.abs(rng.standard_normal(n, dtype=np.float32)) * 1e-6
    coef = 0.5
    param = torch.nn.Parameter(torch.from_numpy(p0.copy()))
    opt = torch.optim.Adam([param], lr=1e-3, eps=1e-8)
    opt.state[param] = {"step": torch.tensor(4.0), "exp_avg": torch.from_numpy(m0.copy()),
                        "exp_avg_sq": torch.from_numpy(v0.copy())}
    param.grad = torch.from_numpy(g * np.float32(coef))
    opt.step()
    P, M, V, steps = p0.copy(), m0.copy(), v0.copy(), np.full(1, 4.0, np.float32)
    adam(P, g.copy(), M, V, steps, 0, 1, 0, n, np.float32(coef), 1e-3, 0.9, 0.999, 1e-8)
    assert steps[0] == 5.0
    live = slice(11, None)
    np.testing.assert_allclose(P[live], param.detach().numpy()[live], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(M[live], opt.state[param]["exp_avg"].numpy()[live], rtol=1e-6)
    np.testing.assert_allclose(V[live], opt.state[param]["exp_avg_sq"].numpy()[live], rtol=1e-6)
    assert np.all(opt.state[param]["exp_avg"].numpy()[:10] != 0)      # torch keeps them subnormal
    assert np.all(M[:10] == 0)
    np.testing.assert_array_equal(P[:10], param.detach().numpy()[:10])
    assert np.isnan(P[10]) and np.isnan(M[10]) and np.isnan(V[10])
