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
_F32, _BOOL = np.dtype(np.float32), np.dtype(np.bool_)


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


def sample_request(batch_size: Any, beta: Any, size: int) -> tuple[int, float]:
    """A ``sample(batch_size, beta)`` call's arguments checked against a buffer holding ``size`` items."""
    batch_size = positive_int("batch_size", batch_size)
    beta = finite_float("beta", beta, 0.0, 1.0)
    if size == 0:
        raise ValueError("batch_size: cannot sample from an empty buffer (add transitions first)")
    return batch_size, beta


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


def non_negative_int(name: str, value: Any) -> int:
    """``value`` as an int >= 0 (bools and floats are refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"{name}: expected an integer >= 0, got {value!r}")
    return int(value)


def buffer_settings(capacity: Any, obs_shape: Any, action_shape: Any, action_dtype: Any, prioritized: Any,
                    alpha: Any, fanout: Any, eps: Any, obs_dtype: Any = np.float32) -> dict[str, Any]:
    """A replay buffer's validated settings, as the JSON-able ``meta`` its storage header and checkpoints carry.

    >>> buffer_settings(8, (4,), (), np.int64, True, 0.6, 16, 1e-6)["action_dtype"]
    '<i8'
    """
    capacity = positive_int("capacity", capacity)
    fanout = positive_int("fanout", fanout)
    if fanout < 2:
        raise ValueError(f"fanout: expected an integer >= 2, got {fanout}")
    action_dtype = np.dtype(action_dtype)
    if action_dtype.kind not in "iuf":
        raise ValueError(f"action_dtype: expected an integer or float dtype, got {action_dtype}")
    obs_dtype = np.dtype(obs_dtype)
    if obs_dtype not in (np.dtype(np.float32), np.dtype(np.uint8)):
        raise ValueError(f"obs_dtype: expected float32 or uint8 (image frames), got {obs_dtype}")
    return {
        "capacity": capacity,
        "obs_shape": list(shape_tuple("obs_shape", obs_shape)),
        "action_shape": list(shape_tuple("action_shape", action_shape)),
        "action_dtype": action_dtype.str,
        "obs_dtype": obs_dtype.str,
        "prioritized": bool(prioritized),
        "alpha": finite_float("alpha", alpha, 0.0),
        "eps": finite_float("eps", eps, np.nextafter(0.0, 1.0)),
        "fanout": fanout,
    }


def _numeric(name: str, dtype: np.dtype) -> None:
    if dtype.kind not in _NUMERIC:
        raise ValueError(f"{name}: expected a numeric array, got dtype {dtype}")


def _array(name: str, value: Any) -> np.ndarray:
    array = np.asarray(value)
    _numeric(name, array.dtype)
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


def exact_rows(obs: Any, actions: Any, rewards: Any, next_obs: Any, terminated: Any, capacity: int,
               obs_shape: tuple[int, ...], action_shape: tuple[int, ...], action_dtype: np.dtype,
               obs_dtype: np.dtype) -> bool:
    """Whether the five arrays already are the stored fields' dtypes and shapes (``terminated`` bool or float32),
    C-contiguous, with the same ``1..capacity`` rows: what the collectors hand over. Their values are then
    checked by :func:`~pearl_py.replay.kernels.insert` as it writes; anything else goes through
    :func:`transition_rows`, which converts it or names what is wrong."""
    fields = ((obs, obs_dtype, obs_shape), (actions, action_dtype, action_shape), (rewards, _F32, ()),
              (next_obs, obs_dtype, obs_shape), (terminated, None, ()))
    n = obs.shape[0] if type(obs) is np.ndarray and obs.ndim else 0
    for value, dtype, tail in fields:
        if type(value) is not np.ndarray or value.shape != (n, *tail) or not value.flags.c_contiguous:
            return False
        if value.dtype != dtype if dtype is not None else value.dtype not in (_BOOL, _F32):
            return False
    return 1 <= n <= capacity


def transition_rows(obs: Any, actions: Any, rewards: Any, next_obs: Any, terminated: Any, capacity: int,
                    obs_shape: tuple[int, ...], action_shape: tuple[int, ...],
                    action_dtype: np.dtype, obs_dtype: np.dtype = np.dtype(np.float32)) -> dict[str, np.ndarray]:
    """A batch of ``N`` transitions (``1 <= N <= capacity``) as the stored fields' arrays, each with ``N`` rows.

    Keys are the stored fields: ``obs``, ``actions``, ``rewards``, ``next_obs`` and
    ``dones`` (``terminated`` as 0/1 float32).
    """
    obs = as_rows("obs", obs, obs_dtype, obs_shape)
    n = len(obs)
    if n == 0 or n > capacity:
        raise ValueError(f"obs: batch of {n} transitions; expected 1..{capacity} (the capacity)")
    rows = {
        "obs": obs,
        "actions": as_rows("actions", actions, action_dtype, action_shape),
        "rewards": as_rows("rewards", rewards, np.float32, ()),
        "next_obs": as_rows("next_obs", next_obs, obs_dtype, obs_shape),
        "dones": as_flags("terminated", terminated),
    }
    for name, arg in (("actions", "actions"), ("rewards", "rewards"), ("next_obs", "next_obs"),
                      ("dones", "terminated")):
        if len(rows[name]) != n:
            raise ValueError(f"{arg}: has {len(rows[name])} rows, obs has {n}")
    return rows


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
    slots, values = np.asarray(indices), np.asarray(td_errors_abs)
    priority_update_layout(slots.dtype, slots.shape, values.dtype, values.shape)
    return slots.astype(np.int64, copy=False), values.astype(np.float64, copy=False)


def priority_update_layout(indices_dtype: np.dtype, indices_shape: tuple[int, ...], td_dtype: np.dtype,
                           td_shape: tuple[int, ...]) -> None:
    """The dtype and shape checks of :func:`priority_update`, for arrays known only by their dtype and shape.

    (Device tensors: their values stay on the device.)

    >>> priority_update_layout(np.dtype(np.int64), (3,), np.dtype(np.float32), (2,))
    Traceback (most recent call last):
    ...
    ValueError: td_errors_abs: expected shape (3,) to match the indices, got (2,)
    """
    _numeric("indices", indices_dtype)
    if indices_dtype.kind not in "iu":
        raise ValueError(f"indices: expected integer indices, got dtype {indices_dtype}")
    if len(indices_shape) != 1 or indices_shape[0] == 0:
        raise ValueError(f"indices: expected a non-empty 1-D array, got shape {indices_shape}")
    _numeric("td_errors_abs", td_dtype)
    if td_dtype.kind == "b":
        raise ValueError("td_errors_abs: expected numbers, got dtype bool")
    if td_shape != indices_shape:
        raise ValueError(f"td_errors_abs: expected shape {indices_shape} to match the indices, got {td_shape}")


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
