"""Compiled replay kernels (numba): tree repair, stratified descent, priority update, row gathers.

The tree kernels work on the flat ``float64`` array of a
:class:`~pearl_py.replay.segment_tree.PriorityTree` (``tree``) plus ``bounds``, the
uint64 offsets where each level starts (``len(bounds) == depth + 2``; the last entry is
the number of nodes, ``nodes``). :func:`_parts` splits ``tree`` into ``values`` (every
node's sum; the leaves are the priorities), ``prefix`` (each group's running sums, the last
the parent's value; ``prefix[0]`` is the root) and ``mins`` (each inner node's minimum over
its children; above the leaves only those below ``size``, the items written, count).
Children of node ``k`` of level ``d`` are nodes ``k * fanout ... k * fanout + fanout - 1``
of level ``d + 1``. Inner nodes are always recomputed from their children, never adjusted by
a delta. Callers validate shapes and dtypes; kernels that take user values check them before
writing anything and report a status instead of raising. docs/replay.md ("The priority tree")
has the layout, the repair and the descent.

Example::

    >>> bounds = np.array([0, 2, 4, 8], dtype=np.uint64)     # capacity 4, fanout 2 (root padded to 2 slots)
    >>> tree = np.concatenate([np.zeros(8), np.zeros(8), np.full(4, np.inf)])
    >>> set_leaves(tree, bounds, 2, np.array([1, 3]), np.array([2.0, 5.0]), 4)
    >>> values, prefix, mins = tree[:8], tree[8:16], tree[16:]
    >>> values.tolist(), prefix.tolist(), mins.tolist()
    ([7.0, 0.0, 2.0, 5.0, 0.0, 2.0, 0.0, 5.0], [7.0, 0.0, 2.0, 7.0, 0.0, 2.0, 0.0, 5.0], [0.0, inf, 0.0, 0.0])
"""
from __future__ import annotations

import numpy as np
from numba import njit

from pearl_py.replay.fastmath import pow_into
from pearl_py.replay.pcg64 import fill_uniforms
from pearl_py.replay.simd import count_le16, min16

_OPTIONS = {"cache": True, "nogil": True}

_U = np.uint64
_NONE = np.uint64(2**64 - 1)
"""No parent yet (before the first entry of a level)."""

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
def _parts(tree, bounds):
    """``values``, ``prefix`` and ``mins``: the three views of a tree's flat array."""
    nodes, inner = bounds[bounds.size - 1], bounds[bounds.size - 2]
    return tree[:nodes], tree[nodes:nodes + nodes], tree[nodes + nodes:nodes + nodes + inner]


@njit(**_OPTIONS)
def _propagate(values, prefix, mins, bounds, fanout, nodes, active, size, force):
    """Repair the ancestors of the leaves ``nodes[:active]`` (uint64 positions whose values were written).

    Level by level, bottom up, each entry's parent is recomputed from its children (docs/replay.md,
    "Update"): its running sums from the entry's child on, its sum and its minimum (above the leaves only
    over the items, below ``size``). An entry whose parent the previous entry already repaired from an
    earlier (or the same) child is dropped. Propagation stops where a repaired node keeps its sum and
    minimum, unless ``force``. ``nodes`` is overwritten.

    The repair is written out here, not in a helper: numba keeps reference-count
    calls on arrays passed to an inlined helper inside the loop, which costs more
    than the repair itself.
    """
    depth = bounds.size - 2
    f, shift, size = _U(fanout), _log2(fanout), _U(size)
    for level in range(depth - 1, -1, -1):
        base, child_base = bounds[level], bounds[level + 1]
        previous, previous_start, kept = _NONE, _U(0), 0
        for i in range(active):
            parent = _parent(nodes[i], f, shift)
            start = nodes[i] - parent * f
            if parent == previous and start >= previous_start:
                continue
            previous, previous_start = parent, start
            first = child_base + parent * f
            total = prefix[first + start - _U(1)] if start > _U(0) else 0.0
            for child in range(first + start, first + f):
                total += values[child]
                prefix[child] = total
            low = np.inf
            if level == depth - 1:                       # the children are leaves: only items count
                written = min(f, size - parent * f) if size > parent * f else _U(0)
                if written == _U(16):
                    low = min16(values, first)
                else:
                    for child in range(first, first + written):
                        low = min(low, values[child])
            elif f == _U(16):
                low = min16(mins, first)
            else:
                for child in range(first, first + f):
                    low = min(low, mins[child])
            slot = base + parent
            changed = values[slot] != total or mins[slot] != low
            values[slot] = total
            mins[slot] = low
            nodes[kept] = parent
            kept += changed or force
        active = kept
        if active == 0:
            break
    prefix[0] = values[0]


@njit(**_OPTIONS)
def set_leaves(tree, bounds, fanout, indices, priorities, size):
    """``leaves[indices] = priorities`` in order (the last write wins), then repair the ancestors that need it.

    All leaves are written first, so every repair sees final values; see :func:`_propagate`.
    """
    values, prefix, mins = _parts(tree, bounds)
    leaf0 = bounds[bounds.size - 2]
    n = indices.size
    nodes = np.empty(n, dtype=np.uint64)
    for i in range(n):
        nodes[i] = _U(indices[i])
        values[leaf0 + nodes[i]] = priorities[i]
    _propagate(values, prefix, mins, bounds, fanout, nodes, n, size, False)


@njit(**_OPTIONS)
def fill(tree, bounds, fanout, start, stop, value, size):
    """Set the contiguous leaves ``[start, stop)`` to ``value`` and repair their ancestors."""
    if stop <= start:
        return
    values, prefix, mins = _parts(tree, bounds)
    leaf0 = bounds[bounds.size - 2]
    values[leaf0 + _U(start):leaf0 + _U(stop)] = value
    first_of_groups = np.arange(start - start % fanout, stop, fanout).astype(np.uint64)
    first_of_groups[0] = start
    _propagate(values, prefix, mins, bounds, fanout, first_of_groups, first_of_groups.size, size, True)


@njit(**_OPTIONS)
def rebuild(tree, bounds, fanout, size):
    """Recompute every inner node, running sum and minimum from the leaves."""
    values, prefix, mins = _parts(tree, bounds)
    depth = bounds.size - 2
    first_of_groups = np.arange(0, np.int64(bounds[depth + 1] - bounds[depth]), fanout).astype(np.uint64)
    _propagate(values, prefix, mins, bounds, fanout, first_of_groups, first_of_groups.size, size, True)


@njit(**_OPTIONS)
def _descend(prefix, bounds, fanout, u, leaves):
    """``leaves[j]``: the leaf ``i`` with ``sum(leaves[:i]) <= u[j] < sum(leaves[:i+1])``; ``u`` is consumed.

    All targets go down together, level by level (docs/replay.md, "Sampling"); in a group the child is the
    number of running sums ``<= u``. A target at or above its group's total is moved just below it: a leaf
    of value 0 is never returned while the total is positive.
    """
    depth = bounds.size - 2
    n = u.size
    nodes = np.zeros(n, dtype=np.uint64)
    for level in range(1, depth + 1):
        base = bounds[level]
        for j in range(n):
            first = base + nodes[j] * fanout
            uj = u[j]
            if fanout == _U(16):
                k = count_le16(prefix, first, uj)
            elif fanout == _U(2):                    # the binary tree: no loop for two children
                k = _U(prefix[first] <= uj) + _U(prefix[first + _U(1)] <= uj)
            else:
                k = _U(0)
                for child in range(first, first + fanout):
                    k += _U(prefix[child] <= uj)
            if k == fanout:
                k = _clamped(prefix, first, fanout)
            before = prefix[first + k - _U(k > _U(0))]     # loaded for k == 0 too: a select, not a branch
            nodes[j] = nodes[j] * fanout + k
            u[j] = uj - (before if k > _U(0) else 0.0)
    for j in range(n):
        leaves[j] = nodes[j]


@njit(**_OPTIONS)
def _clamped(prefix, first, fanout):
    """The child a target just below the group's total selects (its last positive child; 0 if none)."""
    total = prefix[first + fanout - _U(1)]
    if total <= 0.0:                            # a group without mass: nothing sensible to pick
        return _U(0)
    u = np.nextafter(total, -np.inf)
    k = _U(0)
    while prefix[first + k] <= u:
        k += _U(1)
    return k


@njit(**_OPTIONS)
def find(tree, bounds, fanout, targets, out):
    """The leaf of every target (``out[j]`` gets the leaf of ``targets[j]``); see :func:`_descend`."""
    _descend(_parts(tree, bounds)[1], bounds, _U(fanout), targets.copy(), out)


@njit(**_OPTIONS)
def _gather(indices, source, target):
    """``target[j] = source[indices[j]]`` for rows of any shape (both C-contiguous)."""
    row = _U(source.size // source.shape[0])
    src = source.reshape(source.size)
    dst = target.reshape(target.size)
    if row == _U(1):
        for j in range(indices.size):
            dst[j] = src[_U(indices[j])]
        return
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
def sample_uniform(stream, size, indices, weights, obs, actions, rewards, next_obs, dones, out_obs, out_actions,
                   out_rewards, out_next_obs, out_dones):
    """Slot ``floor(u * size)`` for each of the next uniforms ``u`` of ``stream``, unit weights, and their rows."""
    uniforms = np.empty(indices.size)
    fill_uniforms(stream, uniforms)
    for j in range(uniforms.size):
        indices[j] = min(np.int64(uniforms[j] * size), size - 1)
        weights[j] = 1.0
    _gather_all(indices, obs, actions, rewards, next_obs, dones, out_obs, out_actions, out_rewards, out_next_obs,
                out_dones)


@njit(**_OPTIONS)
def sample_prioritized(tree, bounds, fanout, stream, beta, indices, weights, obs, actions, rewards, next_obs, dones,
                       out_obs, out_actions, out_rewards, out_next_obs, out_dones):
    """Stratified proportional draw, IS weights and the rows of the drawn slots, in one pass.

    Target ``j`` of ``B`` is ``(j + u_j) * total / B``, ``u_j`` the next uniforms of ``stream``. The weight
    ``(N P(i))^-beta / (N p_min / total)^-beta`` of the paper equals
    ``(p_min / p_i)^beta``: ``N`` and the total cancel.
    """
    values, prefix, mins = _parts(tree, bounds)
    leaf0 = bounds[bounds.size - 2]
    n = indices.size
    step = values[0] / n
    u = np.empty(n)
    fill_uniforms(stream, u)
    for j in range(n):
        u[j] = (j + u[j]) * step
    _descend(prefix, bounds, _U(fanout), u, indices)
    p_min = mins[0]
    for j in range(n):                               # ratios p_min / p_i in (0, 1]
        u[j] = p_min / values[leaf0 + _U(indices[j])]
    pow_into(u, beta, weights)
    _gather_all(indices, obs, actions, rewards, next_obs, dones, out_obs, out_actions, out_rewards, out_next_obs,
                out_dones)


@njit(**_OPTIONS)
def update_priorities(tree, bounds, fanout, max_seen, alpha, eps, indices, td_errors_abs, size):
    """Check, then store ``(|delta| + eps)^alpha`` at ``indices`` (last write wins) and raise ``max_seen``.

    Returns ``(status, position)``: :data:`OK`, or the first problem found (an index
    outside ``[0, size)``, then a NaN/infinite or negative value) and where it is; on a
    problem nothing has been written.
    """
    n = indices.size
    bad = False
    for i in range(n):                               # one pass that vectorizes; the exact culprit only if bad
        bad |= (indices[i] < 0) | (indices[i] >= size) | ~(np.abs(td_errors_abs[i]) < np.inf) \
            | (td_errors_abs[i] < 0.0)
    if bad:
        return first_problem(indices, td_errors_abs, size)
    raw, priorities = np.empty(n), np.empty(n)
    largest = max_seen[0]
    for i in range(n):
        raw[i] = td_errors_abs[i] + eps
        largest = max(largest, raw[i])
    pow_into(raw, alpha, priorities)
    set_leaves(tree, bounds, fanout, indices, priorities, size)
    max_seen[0] = largest
    return OK, 0


@njit(**_OPTIONS)
def first_problem(indices, td_errors_abs, size):
    """``(status, position)`` of the first bad index, else of the first NaN/infinite, else negative value."""
    for i in range(indices.size):
        if indices[i] < 0 or indices[i] >= size:
            return BAD_INDEX, i
    for i in range(indices.size):
        if not np.isfinite(td_errors_abs[i]):
            return NOT_FINITE, i
    for i in range(indices.size):
        if td_errors_abs[i] < 0.0:
            return NEGATIVE, i
    return OK, 0


@njit(inline="always", **_OPTIONS)
def _finite(values):
    for x in values.reshape(values.size):
        if not x - x == 0:    # NaN and infinities only: an integer (or uint8 frame) is always finite
            return False
    return True


@njit(inline="always", **_OPTIONS)
def _put(source, target, cursor, capacity):
    """``target[(cursor + i) % capacity] = source[i]`` for every row ``i`` (both C-contiguous, any row shape)."""
    row = source.size // source.shape[0]
    src = source.reshape(source.size)
    dst = target.reshape(target.size)
    for i in range(source.shape[0]):
        at, start = ((cursor + i) % capacity) * row, i * row
        for k in range(row):
            dst[at + k] = src[start + k]


@njit(**_OPTIONS)
def insert(cursor, obs, actions, rewards, next_obs, terminated, s_obs, s_actions, s_rewards, s_next_obs, s_dones):
    """Checks ``N`` transitions, then writes them to the storage's rows from ``cursor`` on (wrapping at its
    capacity); returns ``OK``, or, having written nothing, ``NOT_FINITE`` (a float field holds NaN or an
    infinity) or ``BAD_INDEX`` (a ``terminated`` value other than 0 or 1). The caller checked dtypes, shapes
    and ``1 <= N <= capacity``, and advances the ring writer after an ``OK``."""
    if not (_finite(rewards) and _finite(obs) and _finite(next_obs) and _finite(actions)):
        return NOT_FINITE
    for flag in terminated:
        if flag != 0 and flag != 1:
            return BAD_INDEX
    capacity = s_obs.shape[0]
    _put(obs, s_obs, cursor, capacity)
    _put(actions, s_actions, cursor, capacity)
    _put(rewards, s_rewards, cursor, capacity)
    _put(next_obs, s_next_obs, cursor, capacity)
    for i in range(terminated.size):
        s_dones[(cursor + i) % capacity] = np.float32(terminated[i])
    return OK
