"""A power ``x ** y`` over an array that the compiler vectorizes (numba), for priorities and IS weights.

:func:`pow_into` computes ``exp(y * log(x))`` with fdlibm's polynomial ``log`` and ``exp`` (Sun Microsystems,
1993), branch-free so LLVM vectorizes it; its relative error is below ``2**-52 * (|y * ln x| + 2)``, and
``x`` zero, subnormal, infinite or NaN, or ``|y * ln x| > 700``, go through ``**`` (exactly numpy's).
docs/replay.md ("Powers") has the sources and the measurements.

Example::

    >>> out = np.empty(3)
    >>> pow_into(np.array([4.0, 0.0, 1e-3]), 0.5, out)
    >>> out.round(12).tolist()
    [2.0, 0.0, 0.031622776602]
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core.extending import intrinsic

_OPTIONS = {"cache": True, "nogil": True, "error_model": "numpy", "fastmath": {"contract"}}

_LN2_HI, _LN2_LO, _INV_LN2 = 6.93147180369123816490e-01, 1.90821492927058770002e-10, 1.44269504088896338700e+00
_LG1, _LG2, _LG3, _LG4 = 6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01, \
    2.222219843214978396e-01
_LG5, _LG6, _LG7 = 1.818357216161805012e-01, 1.531383769920937332e-01, 1.479819860511658591e-01
_P1, _P2, _P3 = 1.66666666666666019037e-01, -2.77777777770155933842e-03, 6.61375632143793436117e-05
_P4, _P5 = -1.65339022054652515390e-06, 4.13813679705723846039e-08
_MIN_NORMAL = 2.2250738585072014e-308
_MAX_EXPONENT = 700.0
"""``|y ln x|`` up to this keeps ``exp``'s result normal (``e**700`` is about ``2**1010``)."""


@intrinsic
def _bits(typingctx, x):
    """The IEEE-754 bits of a float64, as an int64."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.int64(types.float64), codegen


@intrinsic
def _float(typingctx, bits):
    """The float64 whose IEEE-754 bits are ``bits`` (an int64)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.int64), codegen


@njit(inline="always", **_OPTIONS)
def _log(x):
    """Natural log of a positive normal ``x``: ``x = 2**k * m``, ``m`` in ``[sqrt(2)/2, sqrt(2))``, then
    ``log(m) = 2 atanh(s)``, ``s = (m - 1) / (m + 1)``, by fdlibm's minimax polynomial in ``s**2``."""
    bits = _bits(x)
    high = (bits >> 32) + (0x3FF00000 - 0x3FE6A09E)
    k = (high >> 20) - 0x3FF
    high = (high & 0xFFFFF) + 0x3FE6A09E
    f = _float((high << 32) | (bits & 0xFFFFFFFF)) - 1.0
    half_f2 = 0.5 * f * f
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    r = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7))) + w * (_LG2 + w * (_LG4 + w * _LG6))
    dk = np.float64(k)
    return s * (half_f2 + r) + dk * _LN2_LO - half_f2 + f + dk * _LN2_HI


@njit(inline="always", **_OPTIONS)
def _exp(t):
    """``e**t`` for ``|t| <= 700``: ``t = k ln2 + r``, ``|r| <= ln2 / 2``, fdlibm's rational approximation of
    ``e**r``, then ``2**k`` added to the exponent bits."""
    k = np.floor(t * _INV_LN2 + 0.5)
    hi = t - k * _LN2_HI                     # exact: _LN2_HI has 32 trailing zero bits
    lo = k * _LN2_LO
    r = hi - lo
    r2 = r * r
    c = r - r2 * (_P1 + r2 * (_P2 + r2 * (_P3 + r2 * (_P4 + r2 * _P5))))
    y = 1.0 + (r * c / (2.0 - c) - lo + hi)
    return _float(_bits(y) + (np.int64(k) << 52))


@njit(**_OPTIONS)
def pow_into(x, y, out):
    """``out[i] = x[i] ** y`` for ``x >= 0`` and a finite ``y >= 0`` (``out`` may be float32; not ``x`` itself)."""
    n = x.size
    outside = False
    for i in range(n):
        xi = x[i]
        t = y * _log(xi)
        fast = (xi >= _MIN_NORMAL) & (xi < np.inf) & (np.abs(t) <= _MAX_EXPONENT)
        outside |= ~fast
        out[i] = _exp(t if fast else 0.0)
    if outside:
        for i in range(n):
            xi = x[i]
            if not ((xi >= _MIN_NORMAL) & (xi < np.inf) & (np.abs(y * _log(xi)) <= _MAX_EXPONENT)):
                out[i] = xi ** y
