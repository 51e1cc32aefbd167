"""Whole-group operations on 16 consecutive float64 (a fanout-16 tree's siblings), as LLVM vector code.

numba compiles a loop over a group whose length is only known at run time (the
fanout is an argument) into a vector loop plus its bookkeeping, and a minimum loop
into a chain of scalar compares (``min`` must keep NaN semantics). These numba
intrinsics emit the group operation directly as one ``<16 x double>`` load and vector
instructions, which LLVM lowers to two AVX-512 registers here (four AVX2 or eight
SSE2 ones elsewhere): the descent's compare-and-count and the repair's minimum. The
kernels use them when ``fanout == 16`` and the generic loops otherwise.

Example::

    >>> import numpy as np
    >>> from numba import njit
    >>> @njit
    ... def both(a, start, u):
    ...     return count_le16(a, np.uint64(start), u), min16(a, np.uint64(start))
    >>> both(np.arange(20.0), 2, 5.5)              # elements 2..17: 2, 3, 4, 5 are <= 5.5
    (4, 2.0)
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core.extending import intrinsic

__all__ = ["count_le16", "min16"]

_LANES = 16


def _load_group(context, builder, array_type, array, start):
    """The ``<16 x double>`` at ``array[start:start + 16]`` (no bounds check; 8-byte alignment assumed)."""
    data = context.make_array(array_type)(context, builder, array).data
    vector = ir.VectorType(ir.DoubleType(), _LANES)
    return builder.load(builder.bitcast(builder.gep(data, [start]), vector.as_pointer()), align=8)


@intrinsic
def count_le16(typingctx, array, start, u):
    """How many of ``array[start:start + 16]`` (float64, ``start`` uint64) are ``<= u``: a compare and a popcount."""
    def codegen(context, builder, signature, args):
        group = _load_group(context, builder, signature.args[0], args[0], args[1])
        lane0 = builder.insert_element(ir.Constant(group.type, ir.Undefined), args[2], ir.Constant(ir.IntType(32), 0))
        zeros = ir.Constant(ir.VectorType(ir.IntType(32), _LANES), [0] * _LANES)
        splat = builder.shuffle_vector(lane0, ir.Constant(group.type, ir.Undefined), zeros)
        mask = builder.bitcast(builder.fcmp_ordered("<=", group, splat), ir.IntType(_LANES))
        return builder.zext(builder.ctpop(mask), ir.IntType(64))
    if not (isinstance(array, types.Array) and array.dtype == types.float64 and start == types.uint64
            and u == types.float64):
        return None
    return types.uint64(array, start, u), codegen


@intrinsic
def min16(typingctx, array, start):
    """The minimum of ``array[start:start + 16]`` (float64 without NaN, ``start`` uint64): halving steps of
    ``select(a < b, a, b)`` (``vminpd``; ``llvm.vector.reduce.fmin`` would add NaN handling to every step)."""
    def codegen(context, builder, signature, args):
        group = _load_group(context, builder, signature.args[0], args[0], args[1])
        lanes = _LANES
        while lanes > 1:
            lanes //= 2
            low = builder.shuffle_vector(group, group, ir.Constant(ir.VectorType(ir.IntType(32), lanes),
                                                                   list(range(lanes))))
            high = builder.shuffle_vector(group, group, ir.Constant(ir.VectorType(ir.IntType(32), lanes),
                                                                    list(range(lanes, 2 * lanes))))
            group = builder.select(builder.fcmp_ordered("<", low, high), low, high)
        return builder.extract_element(group, ir.Constant(ir.IntType(32), 0))
    if not (isinstance(array, types.Array) and array.dtype == types.float64 and start == types.uint64):
        return None
    return types.float64(array, start), codegen
