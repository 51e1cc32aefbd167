"""numpy's default bit generator, PCG64, stepped inside the compiled kernels: the same numbers, no Python call.

``numpy.random.default_rng(seed).random(n)`` draws from PCG64 (O'Neill, "PCG: A Family of
Simple Fast Space-Efficient Statistically Good Algorithms for Random Number Generation",
2014; the XSL-RR 128/64 member, as numpy implements it): a 128-bit LCG
``s <- s * M + inc (mod 2**128)``, each step outputs ``rotr64(hi(s) ^ lo(s), hi(s) >> 58)``,
and a double is ``(output >> 11) * 2**-53``. :func:`fill_uniforms` draws the same
numbers inside a kernel, without ``Generator.random``'s call and new array (docs/replay.md has the
timings). It runs four interleaved chains (draws ``k``, ``k + 4``, ... of
the stream, each stepped by ``s <- s * M**4 + inc * (1 + M + M**2 + M**3)``), so the 128-bit
multiplies of different draws overlap instead of waiting on each other.

:class:`Stream` holds the state in a small uint64 array the kernels update in place, and
reads and writes it in numpy's ``bit_generator.state`` format, so a stream and
``default_rng(seed)`` stay interchangeable (checkpoints, tests).

Example::

    >>> stream, reference = Stream(seed=5), np.random.default_rng(5)
    >>> out = np.empty(6)
    >>> fill_uniforms(stream.array, out)
    >>> bool(np.array_equal(out, reference.random(6))), stream.state == reference.bit_generator.state
    (True, True)
"""
from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core.extending import intrinsic

_MASK64, _MASK128 = (1 << 64) - 1, (1 << 128) - 1
_MULTIPLIER = 0x2360ED051FC65DA44385DF649FCCF645
"""PCG64's LCG multiplier (numpy's ``PCG_DEFAULT_MULTIPLIER_128``)."""
_MULTIPLIER_4 = pow(_MULTIPLIER, 4, 1 << 128)
_M_HI, _M_LO = np.uint64(_MULTIPLIER >> 64), np.uint64(_MULTIPLIER & _MASK64)
_M4_HI, _M4_LO = np.uint64(_MULTIPLIER_4 >> 64), np.uint64(_MULTIPLIER_4 & _MASK64)
_STATE, _INC, _JUMP = 0, 2, 4
"""Where ``s``, ``inc`` and the four-step increment sit in a stream's array (each as high, low uint64)."""


class Stream:
    """A PCG64 stream (numpy's ``default_rng(seed)``) whose state lives in ``array`` (uint64, 6 entries)."""

    def __init__(self, seed: Any = 0) -> None:
        self.array = np.zeros(6, dtype=np.uint64)
        self.state = np.random.default_rng(seed).bit_generator.state

    @property
    def state(self) -> dict[str, Any]:
        """The stream's position in numpy's ``PCG64().state`` format."""
        a = self.array
        return {"bit_generator": "PCG64",
                "state": {"state": int(a[_STATE]) << 64 | int(a[_STATE + 1]),
                          "inc": int(a[_INC]) << 64 | int(a[_INC + 1])},
                "has_uint32": 0, "uinteger": 0}

    @state.setter
    def state(self, value: dict[str, Any]) -> None:
        if value.get("bit_generator") != "PCG64":
            raise ValueError(f"state: expected a PCG64 state, got {value.get('bit_generator')!r}")
        s, inc = int(value["state"]["state"]), int(value["state"]["inc"])
        jump = inc * (1 + _MULTIPLIER + _MULTIPLIER**2 + _MULTIPLIER**3) & _MASK128
        for at, number in ((_STATE, s), (_INC, inc), (_JUMP, jump)):
            self.array[at], self.array[at + 1] = number >> 64, number & _MASK64


@intrinsic
def _mul_add(typingctx, a_hi, a_lo, b_hi, b_lo, c_hi, c_lo):
    """``a * b + c (mod 2**128)`` on 128-bit numbers given as (high, low) uint64 halves; returns (high, low)."""
    def codegen(context, builder, signature, args):
        i128 = ir.IntType(128)

        def join(high, low):
            return builder.or_(builder.shl(builder.zext(high, i128), ir.Constant(i128, 64)), builder.zext(low, i128))

        a, b, c = join(*args[0:2]), join(*args[2:4]), join(*args[4:6])
        r = builder.add(builder.mul(a, b), c)
        i64 = ir.IntType(64)
        high = builder.trunc(builder.lshr(r, ir.Constant(i128, 64)), i64)
        return context.make_tuple(builder, signature.return_type, [high, builder.trunc(r, i64)])
    u64 = types.uint64
    if not all(arg == u64 for arg in (a_hi, a_lo, b_hi, b_lo, c_hi, c_lo)):
        return None
    return types.UniTuple(u64, 2)(u64, u64, u64, u64, u64, u64), codegen


@njit(inline="always", cache=True, nogil=True)
def _double(high, low):
    """PCG64's XSL-RR output of state (high, low), as numpy turns it into a double in [0, 1)."""
    x = high ^ low
    r = high >> np.uint64(58)
    x = (x >> r) | (x << ((np.uint64(64) - r) & np.uint64(63)))
    return np.float64(x >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True, nogil=True)
def fill_uniforms(state, out):
    """``out[:] =`` the stream's next ``out.size`` doubles in [0, 1) (numpy's ``random()``); advances ``state``."""
    n = out.size
    if n == 0:
        return
    inc_hi, inc_lo, jump_hi, jump_lo = state[_INC], state[_INC + 1], state[_JUMP], state[_JUMP + 1]
    h0, l0 = _mul_add(state[_STATE], state[_STATE + 1], _M_HI, _M_LO, inc_hi, inc_lo)
    h1, l1 = _mul_add(h0, l0, _M_HI, _M_LO, inc_hi, inc_lo)
    h2, l2 = _mul_add(h1, l1, _M_HI, _M_LO, inc_hi, inc_lo)
    h3, l3 = _mul_add(h2, l2, _M_HI, _M_LO, inc_hi, inc_lo)
    j = 0
    while True:                                       # chain c holds the state of draw j + c
        out[j] = _double(h0, l0)
        last_hi, last_lo = h0, l0
        if j + 1 < n:
            out[j + 1] = _double(h1, l1)
            last_hi, last_lo = h1, l1
        if j + 2 < n:
            out[j + 2] = _double(h2, l2)
            last_hi, last_lo = h2, l2
        if j + 3 < n:
            out[j + 3] = _double(h3, l3)
            last_hi, last_lo = h3, l3
        j += 4
        if j >= n:
            break
        h0, l0 = _mul_add(h0, l0, _M4_HI, _M4_LO, jump_hi, jump_lo)
        h1, l1 = _mul_add(h1, l1, _M4_HI, _M4_LO, jump_hi, jump_lo)
        h2, l2 = _mul_add(h2, l2, _M4_HI, _M4_LO, jump_hi, jump_lo)
        h3, l3 = _mul_add(h3, l3, _M4_HI, _M4_LO, jump_hi, jump_lo)
    state[_STATE], state[_STATE + 1] = last_hi, last_lo
