"""Compiled replay kernels (numba): tree repair, stratified descent, priority update, row gathers.

Every tree kernel works on the flat ``float64`` array of a
:class:`~pearl_py.replay.segment_tree.SegmentTree` (levels root first) plus ``bounds``,
the uint64 offsets where each level starts (``len(bounds) == depth + 2``; the last entry
is the array's length). Node ``k`` of level ``d`` is ``tree[bounds[d] + k]``; its
children are nodes ``k * fanout ... k * fanout + fanout - 1`` of level ``d + 1``. An
inner node of a sum tree is always recomputed as the left-to-right sum of its children
(never adjusted by a delta), so it stays exactly the sum the descent scans.

Tree positions are ``uint64`` inside the kernels: numba then indexes without the
negative-index wrap-around test, which costs a third of an update's time. Callers
validate shapes and dtypes; kernels that take user values check those values
before writing anything and report a status instead of raising. All kernels are
``nogil`` and cached on disk (``cache=True``): the first call in a fresh environment
compiles them (see ``docs/replay.md`` for the measured time), later processes load them.

Example::

    >>> tree = np.zeros(1 + 2 + 4)                     # capacity 4, fanout 2
    >>> bounds = np.array([0, 1, 3, 7], dtype=np.uint64)
    >>> set_leaves(tree, bounds, 2, np.array([1, 3]), np.array([2.0, 5.0]), False)
    >>> tree.tolist()
    [7.0, 2.0, 5.0, 0.0, 2.0, 0.0, 5.0]
"""
from __future__ import annotations

import numpy as np
from numba import njit

_OPTIONS = {"cache": True, "nogil": True}

_U = np.uint64
_NONE = np.uint64(2**64 - 1)
"""Marks a batch entry whose propagation has stopped (its node kept its value)."""

OK, BAD_INDEX, NOT_FINITE, NEGATIVE = 0, 1, 2, 3
"""Status codes of :func:`update_priorities` (the position of the offending element comes with them)."""


@njit(**_OPTIONS)
def _log2(fanout):
    """``log2(fanout)`` if ``fanout`` is a power of two (parents by shifting, not dividing), else -1."""
    shift = 0
    while (1 << shift) < fanout:
        shift += 1
    return shift if (1 << shift) == fanout else -1


@njit(inline="always", **_OPTIONS)
def _parent(node, fanout, shift):
    """Index of ``node``'s parent in the level above."""
    return node >> _U(shift) if shift >= 0 else node // fanout


@njit(inline="always", **_OPTIONS)
def _repair(tree, bounds, fanout, level, node, is_min):
    """Recompute ``node`` of ``level`` as the left-to-right sum (or the minimum) of its children.

    Returns whether its value changed.
    """
    first = bounds[level + 1] + node * fanout
    if is_min:
        acc = np.inf
        for child in range(first, first + fanout):
            acc = min(acc, tree[child])
    else:
        acc = 0.0
        for child in range(first, first + fanout):
            acc += tree[child]
    slot = bounds[level] + node
    changed = tree[slot] != acc
    tree[slot] = acc
    return changed


@njit(**_OPTIONS)
def set_leaves(tree, bounds, fanout, indices, values, is_min):
    """``leaves[indices] = values`` in order (the last write wins), then repair the ancestors that need it.

    Level by level, bottom up, each node that changed has its parent repaired; a
    parent equal to the previous one in the batch is not repaired twice (sorted
    indices, what stratified sampling returns, repair each shared ancestor once), and
    propagation stops where a repaired node keeps its value (usual in a min tree).
    """
    depth = bounds.size - 2
    leaf0 = bounds[depth]
    f, shift = _U(fanout), _log2(fanout)
    n = indices.size
    nodes = np.empty(n, dtype=np.uint64)
    for i in range(n):
        nodes[i] = _U(indices[i])
        tree[leaf0 + nodes[i]] = values[i]
    for level in range(depth - 1, -1, -1):
        previous, changed, active = _NONE, False, 0
        for i in range(n):
            if nodes[i] == _NONE:
                continue
            parent = _parent(nodes[i], f, shift)
            if parent != previous:
                changed = _repair(tree, bounds, f, level, parent, is_min)
                previous = parent
            nodes[i] = parent if changed else _NONE
            active += changed
        if active == 0:
            return


@njit(**_OPTIONS)
def fill(tree, bounds, fanout, start, stop, value, is_min):
    """Set the contiguous leaves ``[start, stop)`` to ``value`` and repair their ancestors."""
    depth = bounds.size - 2
    f = _U(fanout)
    start, stop = _U(start), _U(stop)
    tree[bounds[depth] + start:bounds[depth] + stop] = value
    for level in range(depth - 1, -1, -1):
        start, stop = start // f, (stop + f - _U(1)) // f
        for node in range(start, stop):
            _repair(tree, bounds, f, level, node, is_min)


@njit(**_OPTIONS)
def rebuild(tree, bounds, fanout, is_min):
    """Recompute every inner node from the leaves."""
    f = _U(fanout)
    for level in range(bounds.size - 3, -1, -1):
        for node in range((bounds[level + 2] - bounds[level + 1]) // f):
            _repair(tree, bounds, f, level, node, is_min)


@njit(**_OPTIONS)
def _descend(tree, bounds, fanout, targets, leaves):
    """``leaves[j]``: the leaf ``i`` with ``sum(leaves[:i]) <= targets[j] < sum(leaves[:i+1])``.

    All targets go down together, one level at a time, so the scans of different
    targets overlap in the processor instead of waiting on each other. At a node the
    child is found without branching: the number of children whose running sum is
    ``<= u``. A target at or above a node's total (rounding, or a caller's target >=
    the root) is moved just below that total, which selects the node's last positive
    child: a leaf of value 0 is never returned while the total is positive.
    """
    depth = bounds.size - 2
    n = targets.size
    u = targets.copy()
    nodes = np.zeros(n, dtype=np.uint64)
    for level in range(1, depth + 1):
        base = bounds[level]
        for j in range(n):
            first = base + nodes[j] * fanout
            uj = u[j]
            acc, before, k = 0.0, 0.0, _U(0)
            for child in range(first, first + fanout):
                acc += tree[child]
                below = acc <= uj
                k += _U(below)
                before = acc if below else before
            if k == fanout:
                k, before = _clamped(tree, first, fanout, acc)
            nodes[j] = nodes[j] * fanout + k
            u[j] = uj - before
    for j in range(n):
        leaves[j] = nodes[j]


@njit(**_OPTIONS)
def _clamped(tree, first, fanout, total):
    """Child and running sum before it for a target just below ``total`` (the children's sum)."""
    if total <= 0.0:                            # a node without mass: nothing sensible to pick
        return _U(0), 0.0
    u = np.nextafter(total, -np.inf)
    acc, k = 0.0, _U(0)
    while acc + tree[first + k] <= u:
        acc += tree[first + k]
        k += _U(1)
    return k, acc


@njit(**_OPTIONS)
def find(tree, bounds, fanout, targets, out):
    """The leaf of every target (``out[j]`` gets the leaf of ``targets[j]``); see :func:`_descend`."""
    _descend(tree, bounds, _U(fanout), targets, out)


@njit(**_OPTIONS)
def _gather(indices, source, target):
    """``target[j] = source[indices[j]]`` for rows of any shape (both C-contiguous)."""
    row = _U(source.size // source.shape[0])
    src = source.reshape(source.size)
    dst = target.reshape(target.size)
    for j in range(indices.size):
        start, at = _U(indices[j]) * row, _U(j) * row
        for k in range(row):
            dst[at + k] = src[start + k]


@njit(**_OPTIONS)
def _gather_all(indices, obs, actions, rewards, next_obs, dones, out_obs, out_actions, out_rewards, out_next_obs,
                out_dones):
    _gather(indices, obs, out_obs)
    _gather(indices, actions, out_actions)
    _gather(indices, rewards, out_rewards)
    _gather(indices, next_obs, out_next_obs)
    _gather(indices, dones, out_dones)


@njit(**_OPTIONS)
def sample_uniform(uniforms, size, indices, weights, obs, actions, rewards, next_obs, dones, out_obs, out_actions,
                   out_rewards, out_next_obs, out_dones):
    """Slot ``floor(u * size)`` for each ``u`` in ``[0, 1)``, unit weights, and the rows of those slots."""
    for j in range(uniforms.size):
        indices[j] = min(np.int64(uniforms[j] * size), size - 1)
        weights[j] = 1.0
    _gather_all(indices, obs, actions, rewards, next_obs, dones, out_obs, out_actions, out_rewards, out_next_obs,
                out_dones)


@njit(**_OPTIONS)
def sample_prioritized(sums, mins, bounds, fanout, uniforms, beta, indices, weights, obs, actions, rewards, next_obs,
                       dones, out_obs, out_actions, out_rewards, out_next_obs, out_dones):
    """Stratified proportional draw, IS weights and the rows of the drawn slots, in one pass.

    Target ``j`` of ``B`` is ``(j + u_j) * total / B``. The weight
    ``(N P(i))^-beta / (N p_min / total)^-beta`` of the paper equals
    ``(p_min / p_i)^beta``: ``N`` and the total cancel.
    """
    leaf0 = bounds[bounds.size - 2]
    n = uniforms.size
    step = sums[0] / n
    targets = np.empty(n)
    for j in range(n):
        targets[j] = (j + uniforms[j]) * step
    _descend(sums, bounds, _U(fanout), targets, indices)
    p_min = mins[0]
    for j in range(n):
        weights[j] = (p_min / sums[leaf0 + _U(indices[j])]) ** beta
    _gather_all(indices, obs, actions, rewards, next_obs, dones, out_obs, out_actions, out_rewards, out_next_obs,
                out_dones)


@njit(**_OPTIONS)
def update_priorities(sums, mins, bounds, fanout, max_seen, indices, td_errors_abs, size, alpha, eps):
    """Check, then store ``(|delta| + eps)^alpha`` in both trees (last write wins) and raise ``max_seen``.

    Returns ``(status, position)``: :data:`OK`, or the first problem found (an index
    outside ``[0, size)``, then a NaN/infinite or negative value) and where it is; on a
    problem nothing has been written.
    """
    n = indices.size
    for i in range(n):
        if indices[i] < 0 or indices[i] >= size:
            return BAD_INDEX, i
    for i in range(n):
        if not np.isfinite(td_errors_abs[i]):
            return NOT_FINITE, i
    for i in range(n):
        if td_errors_abs[i] < 0.0:
            return NEGATIVE, i
    priorities = np.empty(n)
    largest = max_seen[0]
    for i in range(n):
        raw = td_errors_abs[i] + eps
        largest = max(largest, raw)
        priorities[i] = raw ** alpha
    set_leaves(sums, bounds, fanout, indices, priorities, False)
    set_leaves(mins, bounds, fanout, indices, priorities, True)
    max_seen[0] = largest
    return OK, 0
