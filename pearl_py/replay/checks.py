"""Input validation for the replay buffer: every check raises ``ValueError`` naming the argument.

Checks only read their inputs; they run before the buffer changes anything, so a
rejected call leaves the buffer exactly as it was. The value checks of a priority
update (indices written, priorities finite and non-negative) run in the update
kernel before it writes anything (a numpy pass over the batch would cost more than the
update itself); :func:`refused_update` turns its status into the error.

Example::

    >>> rows = as_rows("rewards", [1.0, 2.0], np.float32, ())
    >>> rows.dtype, rows.shape
    (dtype('float32'), (2,))
    >>> as_rows("rewards", [[1.0, 2.0]], np.float32, ())
    Traceback (most recent call last):
    ...
    ValueError: rewards: expected shape (N,), got (1, 2)
"""
from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from pearl_py.replay import kernels

_NUMERIC = "biuf"


def positive_int(name: str, value: Any) -> int:
    """``value`` as an int >= 1 (bools and floats are refused)."""
    if type(value) is int and value >= 1:
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name}: expected an integer >= 1, got {value!r}")
    return int(value)


def finite_float(name: str, value: Any, low: float, high: float = np.inf) -> float:
    """``value`` as a finite float in ``[low, high]``."""
    if type(value) is float and low <= value <= high and value - value == 0.0:     # NaN and inf fail here
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) \
            or not low <= value <= high:
        raise ValueError(f"{name}: expected a finite number in [{low}, {high}], got {value!r}")
    return float(value)


def shape_tuple(name: str, value: Any) -> tuple[int, ...]:
    """``value`` as a tuple of non-negative ints (a single int means a 1-D shape)."""
    dims = (value,) if isinstance(value, numbers.Integral) else value
    try:
        dims = tuple(dims)
    except TypeError:
        raise ValueError(f"{name}: expected a shape tuple, got {value!r}") from None
    if not all(isinstance(d, numbers.Integral) and not isinstance(d, bool) and d >= 0 for d in dims):
        raise ValueError(f"{name}: expected non-negative integer dimensions, got {value!r}")
    return tuple(int(d) for d in dims)


def _array(name: str, value: Any) -> np.ndarray:
    array = np.asarray(value)
    if array.dtype.kind not in _NUMERIC:
        raise ValueError(f"{name}: expected a numeric array, got dtype {array.dtype}")
    return array


def as_rows(name: str, value: Any, dtype: np.dtype | type, tail: tuple[int, ...]) -> np.ndarray:
    """``value`` as a ``(N, *tail)`` array of ``dtype``, refusing unsafe kinds and non-finite floats.

    Integers may become floats; floats never become integers; booleans are refused
    (use :func:`as_flags` for 0/1 data).
    """
    array = _array(name, value)
    target = np.dtype(dtype)
    if array.dtype.kind == "b" or not np.can_cast(array.dtype, target, casting="same_kind"):
        raise ValueError(f"{name}: dtype {array.dtype} cannot be stored as {target}")
    if array.ndim != 1 + len(tail) or array.shape[1:] != tail:
        expected = "(N" + "".join(f", {d}" for d in tail) + (",)" if not tail else ")")
        raise ValueError(f"{name}: expected shape {expected}, got {array.shape}")
    with np.errstate(over="ignore", invalid="ignore"):
        array = array.astype(target, copy=False)
    if target.kind == "f" and not np.isfinite(array).all():
        raise ValueError(f"{name}: contains NaN or infinite values (after conversion to {target})")
    return array


def as_flags(name: str, value: Any) -> np.ndarray:
    """``value`` as a ``(N,)`` float32 array of 0/1 (booleans or numbers equal to 0 or 1)."""
    array = _array(name, value)
    if array.ndim != 1:
        raise ValueError(f"{name}: expected shape (N,), got {array.shape}")
    flags = array.astype(np.float32)
    if not np.all((flags == 0) | (flags == 1)):
        raise ValueError(f"{name}: expected booleans or 0/1 values")
    return flags


_INT64, _FLOAT64 = np.dtype(np.int64), np.dtype(np.float64)


def priority_update(indices: Any, td_errors_abs: Any) -> tuple[np.ndarray, np.ndarray]:
    """``indices`` as a non-empty 1-D int64 array and ``td_errors_abs`` as float64 of the same shape.

    Whether the slots were written and the values finite and non-negative are the
    update kernel's checks (it reports them before writing anything).
    """
    if type(indices) is np.ndarray and type(td_errors_abs) is np.ndarray and indices.dtype is _INT64 \
            and td_errors_abs.dtype is _FLOAT64 and indices.ndim == 1 and indices.size \
            and td_errors_abs.shape == indices.shape:
        return indices, td_errors_abs                     # what sample() returns and a TD error array: as they are
    slots = _array("indices", indices)
    if slots.dtype.kind not in "iu":
        raise ValueError(f"indices: expected integer indices, got dtype {slots.dtype}")
    if slots.ndim != 1 or slots.size == 0:
        raise ValueError(f"indices: expected a non-empty 1-D array, got shape {slots.shape}")
    values = _array("td_errors_abs", td_errors_abs)
    if values.dtype.kind == "b":
        raise ValueError("td_errors_abs: expected numbers, got dtype bool")
    if values.shape != slots.shape:
        raise ValueError(f"td_errors_abs: expected shape {slots.shape} to match the indices, got {values.shape}")
    return slots.astype(np.int64, copy=False), values.astype(np.float64, copy=False)


def refused_update(status: int, position: int, indices: Any, size: int) -> ValueError:
    """The error for a status of :func:`~pearl_py.replay.kernels.update_priorities` (never ``OK``).

    >>> str(refused_update(kernels.BAD_INDEX, 1, [0, 9], size=4))
    'indices: index 9 was never written (valid slots are 0..3)'
    """
    if status == kernels.BAD_INDEX:
        return ValueError(f"indices: index {np.asarray(indices)[position]} was never written "
                          f"(valid slots are 0..{size - 1})")
    if status == kernels.NOT_FINITE:
        return ValueError("td_errors_abs: contains NaN or infinite values")
    return ValueError("td_errors_abs: contains negative values (pass absolute TD errors)")
