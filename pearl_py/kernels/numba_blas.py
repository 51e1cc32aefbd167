"""BLAS for the numba kernels: ``gemm``, a row-major sgemm callable inside ``@njit`` code.

``gemm(A, ta, B, tb, C)`` computes ``C = op(A) @ op(B)`` (``op(X) = X.T`` when its flag is
set) for float32 arrays with contiguous rows, as one Fortran ``sgemm`` call on the
arrays as they are: no copy, no transposed temporary. Two libraries are bound, and the
shape picks one (the faster there, measured in docs/kernels.md, "Two BLAS libraries"):

* ``min(m, n, k) >= 16``: the ``sgemm_`` torch's own library exports (MKL in the x86 wheels);
* smaller (a 4-input first layer, a 2-output last layer, one row): scipy's OpenBLAS, the
  library numba's ``np.dot`` calls.

Without a torch ``sgemm_`` both are scipy's. The functions are bound by symbol name
(``llvmlite.binding.add_symbol``) when this module is imported, so numba's on-disk cache
of the kernels stays valid across processes.

Example::

    >>> C = np.empty((64, 256), np.float32)
    >>> gemm(h, False, W, True, C)          # C = h @ W.T, as torch's Linear
    >>> BLAS_SOURCES                         # which library serves which shapes here
    {'large': 'torch (.../libtorch_cpu.so)', 'small': 'scipy OpenBLAS'}
"""
from __future__ import annotations

import ctypes
import glob
import os
import sys

import numpy as np
import torch

try:  # numba is optional: without it the fused variants are unavailable
    import numba
except ImportError:  # pragma: no cover - numba ships with the project's constraints
    numba = None

JIT = dict(cache=True, nogil=True, fastmath=False, error_model="numpy")
"""Exact IEEE float32 arithmetic (no fastmath); ``error_model="numpy"``: a float division is a plain
division (inf/nan as in torch), not a ZeroDivisionError check, which kept numba from vectorizing Adam."""

LARGE = 16
"""``gemm`` calls torch's sgemm when all of m, n, k are at least this, else scipy's."""


def numba_available() -> tuple[bool, str]:
    """Whether numba and the BLAS it calls through (scipy's) can run here."""
    if numba is None:
        return False, "numba is not installed"
    try:
        import scipy.linalg.cython_blas  # noqa: F401  the small GEMMs and the fallback
    except ImportError:
        return False, "numba's BLAS calls need scipy's BLAS (scipy is not installed)"
    return True, ""


def set_blas_threads(n: int) -> bool:
    """Set the thread count of scipy's OpenBLAS to ``n`` (its default, one thread per core, spins against the
    other processes); False if not found (torch's follows ``torch.set_num_threads``)."""
    import scipy
    import scipy.linalg.cython_blas  # noqa: F401  loads the library

    libs = os.path.join(os.path.dirname(os.path.dirname(scipy.__file__)), "scipy.libs")
    for path in sorted(glob.glob(os.path.join(libs, "*openblas*"))):
        lib = ctypes.CDLL(path)
        for symbol in ("scipy_openblas_set_num_threads", "openblas_set_num_threads"):
            fn = getattr(lib, symbol, None)
            if fn is not None:
                fn(int(n))
                return True
    return False


# Integer arguments sit in 8-byte slots: read correctly as LP64 (int32) and ILP64 (int64) on
# little-endian machines; on big-endian ones only scipy's (LP64) is bound, with 4-byte slots.
_SLOT = np.int64 if sys.byteorder == "little" else np.int32
_SGEMM = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 13))


def _scipy_sgemm() -> int:
    from scipy.linalg import cython_blas

    capsule = cython_blas.__pyx_capi__["sgemm"]
    api = ctypes.pythonapi
    api.PyCapsule_GetName.restype, api.PyCapsule_GetName.argtypes = ctypes.c_char_p, [ctypes.py_object]
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return api.PyCapsule_GetPointer(capsule, api.PyCapsule_GetName(capsule))


def _works(address: int) -> bool:
    """A 2x3 @ 3x2 product through ``address`` with this module's argument convention."""
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(6, dtype=np.float32).reshape(3, 2) - 2
    c = np.full((2, 2), np.nan, np.float32)
    # row-major C = A @ B is column-major C^T = B^T A^T: sgemm("N", "N", n, m, k, B, n, A, k, C, n)
    ints = np.array([ord("N"), ord("N"), 2, 2, 3, 2, 3, 2], _SLOT)
    scal = np.array([1.0, 0.0], np.float32)
    p = [ints[i:].ctypes.data for i in range(8)]
    _SGEMM(address)(p[0], p[1], p[2], p[3], p[4], scal.ctypes.data, b.ctypes.data, p[5], a.ctypes.data, p[6],
                    scal[1:].ctypes.data, c.ctypes.data, p[7])
    return bool(np.array_equal(c, a @ b))


def _torch_sgemm() -> tuple[int, str] | None:
    if _SLOT is not np.int64:
        return None
    lib_dir = os.path.join(os.path.dirname(torch.__file__), "lib")
    for pattern in ("libtorch_cpu.*", "torch_cpu.dll"):
        for path in sorted(glob.glob(os.path.join(lib_dir, pattern))):
            try:
                address = ctypes.cast(ctypes.CDLL(path).sgemm_, ctypes.c_void_p).value
            except (OSError, AttributeError):
                continue
            if address and _works(address):
                return address, path
    return None


BLAS_SOURCES: dict[str, str] = {}
"""Which library ``gemm`` calls for "large" and "small" shapes in this process."""

if numba is not None and numba_available()[0]:
    import llvmlite.binding as llvm
    from llvmlite import ir
    from numba import njit, types
    from numba.extending import intrinsic

    _small = _scipy_sgemm()
    _large = _torch_sgemm()
    BLAS_SOURCES["small"] = "scipy OpenBLAS"
    BLAS_SOURCES["large"] = f"torch ({_large[1]})" if _large else "scipy OpenBLAS"
    llvm.add_symbol("pearl_sgemm_large", _large[0] if _large else _small)
    llvm.add_symbol("pearl_sgemm_small", _small)
    _signature = types.void(*([types.voidptr] * 13))
    _sgemm_large = types.ExternalFunction("pearl_sgemm_large", _signature)
    _sgemm_small = types.ExternalFunction("pearl_sgemm_small", _signature)

    @intrinsic
    def _ptr(typingctx, arr):
        """The data pointer of an array, as ``void*``."""
        def codegen(context, builder, sig, args):
            ary = context.make_array(sig.args[0])(context, builder, args[0])
            return builder.bitcast(ary.data, ir.IntType(8).as_pointer())
        return types.voidptr(arr), codegen

    @njit(**JIT)
    def _rows_contiguous(X):
        """Element (i, j) at ``i * shape[1] + j`` (a dimension of size 1 may have any stride)."""
        return (X.shape[1] <= 1 or X.strides[1] == X.itemsize) \
            and (X.shape[0] <= 1 or X.strides[0] == X.itemsize * X.shape[1])

    @njit(**JIT)
    def gemm(A, ta, B, tb, C):
        """``C = op(A) @ op(B)`` in place (``op(X) = X.T`` if its flag): one sgemm, no copies."""
        m, n = C.shape
        k = A.shape[0] if ta else A.shape[1]
        if (A.shape[1] if ta else A.shape[0]) != m or (B.shape[0] if tb else B.shape[1]) != n \
                or (B.shape[1] if tb else B.shape[0]) != k:
            raise ValueError("gemm: shapes do not match")
        if not (_rows_contiguous(A) and _rows_contiguous(B) and _rows_contiguous(C)):
            raise ValueError("gemm: arrays must have contiguous rows")
        # Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: sgemm(tb, ta, n, m, k, B, A).
        ints = np.empty(8, _SLOT)
        ints[0] = 84 if tb else 78      # 'T' / 'N'
        ints[1] = 84 if ta else 78
        ints[2] = n
        ints[3] = m
        ints[4] = k
        ints[5] = max(B.shape[1], 1)
        ints[6] = max(A.shape[1], 1)
        ints[7] = max(n, 1)
        scal = np.empty(2, np.float32)
        scal[0] = 1.0
        scal[1] = 0.0
        if min(m, n, k) >= LARGE:
            _sgemm_large(_ptr(ints), _ptr(ints[1:]), _ptr(ints[2:]), _ptr(ints[3:]), _ptr(ints[4:]), _ptr(scal),
                         _ptr(B), _ptr(ints[5:]), _ptr(A), _ptr(ints[6:]), _ptr(scal[1:]), _ptr(C), _ptr(ints[7:]))
        else:
            _sgemm_small(_ptr(ints), _ptr(ints[1:]), _ptr(ints[2:]), _ptr(ints[3:]), _ptr(ints[4:]), _ptr(scal),
                         _ptr(B), _ptr(ints[5:]), _ptr(A), _ptr(ints[6:]), _ptr(scal[1:]), _ptr(C), _ptr(ints[7:]))
