"""The pieces of the fused CPU kernels: MLP layers forward and backward, clip norm, Adam, RMSprop, Polyak update.

Shared by the ``fused`` learner update (``pearl_py.kernels.fused_cpu``: networks as rows
of a layer table over flat parameter buffers) and the ``fused`` inference
(``pearl_py.kernels.inference``: tuples of weight and bias arrays). Activations are
float32 row-major ``(rows, width)``; weights are torch's ``Linear`` layout ``(out, in)``, so
every GEMM is one :func:`pearl_py.kernels.numba_blas.gemm` call on the arrays as they are:

* forward ``z = h @ W.T`` (then bias and activation in one pass over ``z``);
* weight gradient ``gW = dz.T @ h``, input gradient ``dh = dz @ W``; the hidden activation's
  backward (ReLU mask, or tanh's ``1 - a^2`` for the on-policy MLPs: ``forward_hidden``,
  ``backward_hidden``) on the input gradient and the previous layer's bias gradient (its column
  sums) in one pass.

Layer table rows (``L``): ``(weight offset, bias offset, n_in, n_out)`` into the flat
buffers; a network is a run of rows. Activations of a forward are stored back to back in
a scratch buffer ``S`` (the input first, then every layer's output), carved in a fixed order.

numba's disk cache does not see edits here from the kernels that call these functions
(``fused_cpu``, ``inference``): after changing this file, delete
``pearl_py/kernels/__pycache__/*.nb[ic]``.

Example (inside ``@njit`` code)::

    off = forward(P, L, 0, n, x, S, 0, False)         # activations in S[0:off]
    q = output(S, L, 0, n, rows, 0)                    # the last layer's (rows, n_out)
    backward(P, G, L, 0, n, S, 0, rows, dq, off, True, False)  # weight/bias gradients into G
"""
from __future__ import annotations

import math

import numpy as np

from pearl_py.kernels.numba_blas import JIT, numba

ACT_NONE, ACT_RELU, ACT_TANH = 0, 1, 2
_TINY = np.float32(np.finfo(np.float32).tiny)

if numba is not None:
    from numba import njit

    from pearl_py.kernels.numba_blas import LARGE, gemm

    @njit(**JIT)
    def tanh32(x):
        """tanh of a float32, correctly rounded (the float32 nearest the exact value; glibc's ``tanhf``, what
        ``np.tanh`` calls here, is within 2 ulp), branch-free so loops over it vectorize: ~0.5 ns an element
        against ~10 ns for ``tanhf`` and 3.2 ns for an ``exp``-based form (docs/kernels.md). ``t = tanh(x / 8)``
        by the [7/6] Pade approximant from Lambert's continued fraction, ``y (10395 + 1260 y^2 + 21 y^4) /
        (10395 + 4725 y^2 + 210 y^4 + y^6)``, then three doublings ``tanh(2y) = 2t / (1 + t^2)`` on the
        numerator and denominator kept apart (one division at the end), all in float64. ``|x|`` is clamped at 10
        (tanh(10) rounds to 1.0); the sign of ``x`` is kept (``-0.0`` stays ``-0.0``), a NaN stays NaN."""
        y = min(max(np.float64(x), -10.0), 10.0) * 0.125
        s = y * y
        n = y * (10395.0 + s * (1260.0 + s * 21.0))
        d = 10395.0 + s * (4725.0 + s * (210.0 + s))
        for _ in range(3):      # invariant: n / d = tanh(y * 2^k) after k doublings; |n|, |d| stay below 1e40
            n, d = 2.0 * n * d, d * d + n * n
        return np.float32(n / d)

    @njit(**JIT)
    def carve(S, off, rows, cols):
        """``S[off:off + rows * cols]`` as a (rows, cols) array, and the end offset."""
        end = off + rows * cols
        if end > S.size:
            raise ValueError("fused kernel: scratch workspace too small")
        return S[off:end].reshape((rows, cols)), end

    @njit(**JIT)
    def bias_act(z, b, act):
        """``z += b`` on every row, then ``act`` (ACT_NONE, ACT_RELU or ACT_TANH), in place."""
        for i in range(z.shape[0]):
            zi = z[i]
            if act == ACT_RELU:
                for j in range(zi.size):
                    v = zi[j] + b[j]
                    zi[j] = v if v > 0 else np.float32(0.0)
            elif act == ACT_TANH:
                for j in range(zi.size):
                    zi[j] = tanh32(zi[j] + b[j])
            else:
                for j in range(zi.size):
                    zi[j] = zi[j] + b[j]

    @njit(**JIT)
    def linear(h, W, b, z, act, wt):
        """``z = act(h @ W.T + b)`` for ``h`` (rows, n_in), ``W`` (n_out, n_in), ``z`` (rows, n_out).

        A layer with fewer than ``LARGE`` inputs (a first layer on a small observation) multiplies by a
        transposed copy of W made in ``wt`` (scratch of n_in * n_out floats): OpenBLAS runs ``h @ W^T``
        stored as ``(n_in, n_out)`` ~2x faster than with the transpose flag (docs/kernels.md, "Design")."""
        no, ni = W.shape
        if ni < LARGE:
            w = wt[:ni * no].reshape((ni, no))
            for j in range(no):
                for c in range(ni):
                    w[c, j] = W[j, c]
            gemm(h, False, w, False, z)
        else:
            gemm(h, False, W, True, z)
        bias_act(z, b, act)

    @njit(**JIT)
    def layer(P, L, r):
        """Weight (n_out, n_in) and bias of layer-table row ``r``, as views of ``P``."""
        wo, bo, ni, no = L[r, 0], L[r, 1], L[r, 2], L[r, 3]
        return P[wo:wo + no * ni].reshape((no, ni)), P[bo:bo + no]

    @njit(**JIT)
    def forward_hidden(P, L, first, n, x, S, off, out_tanh, hidden):
        """MLP forward (``hidden`` between layers: ACT_RELU or ACT_TANH; tanh after the last if ``out_tanh``) of
        the ``n`` layers from row ``first`` on ``x`` (rows, n_in); the input and every output stored in S from
        ``off``. Returns the end offset."""
        rows = x.shape[0]
        h, off = carve(S, off, rows, x.shape[1])
        h[:, :] = x
        for k in range(n):
            W, b = layer(P, L, first + k)
            z, off = carve(S, off, rows, W.shape[0])
            act = hidden if k < n - 1 else (ACT_TANH if out_tanh else ACT_NONE)
            wt, _ = carve(S, off, 1, W.size if W.shape[1] < LARGE else 0)   # scratch past the activations
            linear(h, W, b, z, act, wt[0])
            h = z
        return off

    @njit(**JIT)
    def forward(P, L, first, n, x, S, off, out_tanh):
        """:func:`forward_hidden` with ReLU between layers (pearl_py's off-policy MLPs)."""
        return forward_hidden(P, L, first, n, x, S, off, out_tanh, ACT_RELU)

    @njit(**JIT)
    def activation(S, L, first, k, stored, rows, off):
        """The first ``rows`` rows of activation ``k`` (0: the input, k: layer k-1's output) of a forward
        of ``stored`` rows stored at ``off``."""
        o = off
        width = L[first, 2]
        for j in range(k):
            o += stored * width
            width = L[first + j, 3]
        return S[o:o + rows * width].reshape((rows, width))

    @njit(**JIT)
    def output(S, L, first, n, rows, off):
        """The last layer's output of a forward of ``rows`` rows stored at ``off``."""
        return activation(S, L, first, n, rows, rows, off)

    @njit(**JIT)
    def column_sums(dz, gb):
        """``gb = dz.sum(0)``."""
        gb[:] = 0.0
        for i in range(dz.shape[0]):
            for j in range(gb.size):
                gb[j] += dz[i, j]

    @njit(**JIT)
    def relu_mask_sums(da, a, gb, sums):
        """``da *= (a > 0)`` (ReLU backward: ``a`` is the ReLU's output) and, if ``sums``, ``gb = da.sum(0)``."""
        if sums:
            gb[:] = 0.0
        for i in range(da.shape[0]):
            di, ai = da[i], a[i]
            for j in range(di.size):
                d = di[j] if ai[j] > 0 else np.float32(0.0)
                di[j] = d
                if sums:
                    gb[j] += d

    @njit(**JIT)
    def act_mask_sums(da, a, gb, sums, hidden):
        """The hidden activation's backward on ``da`` given its output ``a`` (ReLU: ``a > 0``; tanh: ``1 - a^2``)
        and, if ``sums``, ``gb = da.sum(0)``."""
        if hidden == ACT_RELU:
            relu_mask_sums(da, a, gb, sums)
            return
        if sums:
            gb[:] = 0.0
        for i in range(da.shape[0]):
            di, ai = da[i], a[i]
            for j in range(di.size):
                d = di[j] * (np.float32(1.0) - ai[j] * ai[j])
                di[j] = d
                if sums:
                    gb[j] += d

    @njit(**JIT)
    def backward(P, G, L, first, n, S, act_off, stored, dz, off, param_grads, input_grad):
        """:func:`backward_hidden` of a forward with ReLU between layers."""
        return backward_hidden(P, G, L, first, n, S, act_off, stored, dz, off, param_grads, input_grad, ACT_RELU)

    @njit(**JIT)
    def backward_hidden(P, G, L, first, n, S, act_off, stored, dz, off, param_grads, input_grad, hidden):
        """Backward of the forward of ``stored`` rows at ``act_off`` (``n`` layers from row ``first``, ``hidden``
        between them) for its first rows, from ``dz`` (rows, n_out) of the last layer's pre-activation. Writes
        weight and bias gradients into G when ``param_grads``; returns the input gradient (rows, n_in) when
        ``input_grad`` (else ``dz`` of the first layer) and the end offset of the scratch it used from
        ``off``."""
        rows = dz.shape[0]
        bias_done = False
        for k in range(n - 1, -1, -1):
            wo, bo, ni, no = L[first + k, 0], L[first + k, 1], L[first + k, 2], L[first + k, 3]
            a_prev = activation(S, L, first, k, stored, rows, act_off)
            if param_grads:
                gemm(dz, True, a_prev, False, G[wo:wo + no * ni].reshape((no, ni)))
                if not bias_done:
                    column_sums(dz, G[bo:bo + no])
            if k > 0 or input_grad:
                da, off = carve(S, off, rows, ni)
                gemm(dz, False, P[wo:wo + no * ni].reshape((no, ni)), False, da)
                if k > 0:
                    pbo = L[first + k - 1, 1]
                    act_mask_sums(da, a_prev, G[pbo:pbo + ni], param_grads, hidden)
                    bias_done = param_grads
                dz = da
        return dz, off

    @njit(**JIT)
    def clip_coef(G, start, end, max_norm):
        """``clip_grad_norm_``'s factor for G[start:end]: ``min(max_norm / (norm + 1e-6), 1)``, float32 L2
        norm by a BLAS dot."""
        g = G[start:end]
        norm = np.float32(math.sqrt(np.dot(g, g)))
        coef = np.float32(max_norm) / (norm + np.float32(1e-6))
        return min(coef, np.float32(1.0))

    @njit(**JIT)
    def adam(P, G, M, V, steps, s0, s1, start, end, coef, lr, beta1, beta2, eps):
        """``torch.optim.Adam``'s single-tensor step over P[start:end] with gradient ``coef * G`` (the clip
        folded in); step counters steps[s0:s1]. Bias corrections in float64 as torch's Python floats; the
        second one as a multiplication by its float32 reciprocal (one division less per element).

        ``exp_avg``/``exp_avg_sq`` values below float32's smallest normal number are stored as 0: under
        torch's ``lerp`` a dead unit's ``exp_avg`` decays into the subnormal range and stays there (its
        rounding stops at the smallest subnormals), and every later step pays x86's subnormal penalty on
        it (docs/kernels.md, "Design"). The parameter changes it would still make are below ``lr * 1e-30``."""
        step = np.float64(steps[s0]) + 1.0
        for s in range(s0, s1):
            steps[s] = np.float32(step)
        neg_step_size = np.float32(-lr / (1.0 - beta1 ** step))
        inv_bc2_sqrt = np.float32(1.0 / math.sqrt(1.0 - beta2 ** step))
        c = np.float32(coef)
        w1 = np.float32(1.0 - beta1)
        b2 = np.float32(beta2)
        w2 = np.float32(1.0 - beta2)
        eps32 = np.float32(eps)
        p, gr, m_, v_ = P[start:end], G[start:end], M[start:end], V[start:end]
        for i in range(p.size):
            g = gr[i] * c
            m = m_[i] + w1 * (g - m_[i])
            v = v_[i] * b2 + w2 * g * g
            m = np.float32(0.0) if abs(m) < _TINY else m       # NaN stays NaN
            v = np.float32(0.0) if v < _TINY else v
            m_[i] = m
            v_[i] = v
            p[i] = p[i] + neg_step_size * (m / (np.sqrt(v) * inv_bc2_sqrt + eps32))

    @njit(**JIT)
    def rmsprop(P, G, SQ, steps, s0, s1, start, end, coef, lr, alpha, eps):
        """``torch.optim.RMSprop``'s single-tensor step (no momentum, not centered, no weight decay) over
        P[start:end] with gradient ``coef * G``: ``sq = alpha sq + (1 - alpha) g^2``, ``p -= lr g / (sqrt(sq) + eps)``;
        step counters steps[s0:s1]."""
        step = np.float64(steps[s0]) + 1.0
        for s in range(s0, s1):
            steps[s] = np.float32(step)
        c = np.float32(coef)
        a = np.float32(alpha)
        w = np.float32(1.0 - alpha)
        eps32 = np.float32(eps)
        neg_lr = np.float32(-lr)
        p, gr, sq = P[start:end], G[start:end], SQ[start:end]
        for i in range(p.size):
            g = gr[i] * c
            v = sq[i] * a + w * g * g
            sq[i] = v
            p[i] = p[i] + neg_lr * (g / (np.sqrt(v) + eps32))

    @njit(**JIT)
    def lerp(T, P, start, end, tau):
        """``torch._foreach_lerp_(target, online, tau)`` (tau = 1: copy)."""
        w = np.float32(tau)
        t, p = T[start:end], P[start:end]
        if tau == 1.0:
            t[:] = p
        elif tau < 0.5:
            for i in range(t.size):
                t[i] = t[i] + w * (p[i] - t[i])
        else:
            for i in range(t.size):
                t[i] = p[i] - (p[i] - t[i]) * (np.float32(1.0) - w)
