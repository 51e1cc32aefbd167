"""Priority-tree invariants under random inserts and updates (hypothesis), for binary and n-ary fanouts."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pearl_py.protocol import ReplayWorkload
from pearl_py.replay.segment_tree import PriorityTree, level_sizes, tree_nodes
from pearl_py.replay.writer import RingWriter

FANOUTS = (2, 3, 16)


def assert_invariants(tree: PriorityTree, reference: np.ndarray, size: int) -> None:
    """Exact: leaves equal the reference (0 beyond ``size``); every group's running sums are numpy's cumulative
    sums of its nodes; every inner node's sum is the last running sum of its children and its minimum the
    minimum of its children's (leaves: of the items only)."""
    np.testing.assert_array_equal(tree.leaves[:size], reference[:size])
    assert np.all(tree.leaves[size:] == 0.0)
    f = tree.fanout
    items = np.where(np.arange(tree.leaves.size) < size, tree.leaves, np.inf)
    for depth in range(tree.depth, 0, -1):
        lo, hi = int(tree.bounds[depth]), int(tree.bounds[depth + 1])
        running = tree.prefix[lo:hi].reshape(-1, f)
        np.testing.assert_array_equal(running, np.cumsum(tree.values[lo:hi].reshape(-1, f), axis=1))
        up_lo, up_hi = int(tree.bounds[depth - 1]), lo
        sums, mins = tree.values[up_lo:up_hi], tree.mins[up_lo:up_hi]
        children_mins = (items if depth == tree.depth else tree.mins[lo:hi]).reshape(-1, f).min(axis=1)
        groups = len(running)
        np.testing.assert_array_equal(sums[:groups], running[:, -1])
        np.testing.assert_array_equal(mins[:groups], children_mins)
        assert np.all(sums[groups:] == 0.0) and np.all(mins[groups:] == np.inf)     # padding without children
    assert tree.prefix[0] == tree.values[0] == tree.total
    assert tree.total == pytest.approx(reference[:size].sum(), rel=1e-12, abs=1e-300)
    assert tree.min == (reference[:size].min() if size else np.inf)


operations = st.lists(
    st.one_of(
        # new items at the ring's cursor (wrapping around), as the writer hands them out
        st.tuples(st.just("add"), st.integers(1, 50), st.floats(0, 1e6)),
        # batched update of written slots, possibly repeated, sorted (as sampled) or not
        st.tuples(st.just("update"), st.lists(st.integers(0, 10_000), min_size=1, max_size=40),
                  st.lists(st.floats(0, 1e6, allow_nan=False), min_size=40, max_size=40), st.booleans()),
    ),
    min_size=1, max_size=25,
)


@pytest.mark.parametrize("fanout", FANOUTS)
@settings(max_examples=40, deadline=None)
@given(capacity=st.integers(1, 300), ops=operations)
def test_random_inserts_and_updates_keep_invariants(fanout, capacity, ops):
    tree = PriorityTree(capacity, fanout)
    writer = RingWriter(capacity, np.zeros(2, dtype=np.int64))
    reference = np.zeros(capacity)
    size = 0
    for op in ops:
        if op[0] == "add":
            runs = writer.write(min(op[1], capacity))
            size = writer.size
            for start, stop in runs:
                tree.fill(start, stop, op[2], size)
                reference[start:stop] = op[2]
        elif size:
            indices = np.array(op[1]) % size
            if op[3]:
                indices = np.sort(indices)
            values = np.array(op[2][: len(indices)])
            tree.update(indices, values, size)
            for i, v in zip(indices, values):                        # sequential semantics: last write wins
                reference[i] = v
        assert_invariants(tree, reference, size)


def test_an_update_touching_a_group_in_separate_runs_ends_exact():
    """Children of one parent out of order and repeated: each run repairs the parent, the last with final values."""
    tree = PriorityTree(64, 4)
    tree.fill(0, 64, 1.0, 64)
    indices = np.array([3, 40, 0, 3, 41, 1, 3])
    values = np.array([5.0, 2.0, 0.5, 7.0, 0.25, 9.0, 0.125])
    tree.update(indices, values, 64)
    reference = np.ones(64)
    for i, v in zip(indices, values):
        reference[i] = v
    assert_invariants(tree, reference, 64)


@pytest.mark.parametrize("fanout", FANOUTS)
@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.one_of(st.just(0.0), st.floats(1e-3, 1e3)), min_size=1, max_size=200),
       fractions=st.lists(st.floats(0, 1, exclude_max=True), min_size=1, max_size=64))
def test_find_returns_the_leaf_whose_prefix_interval_holds_the_target(fanout, values, fractions):
    values = np.array(values)
    if values.sum() == 0:
        values[-1] = 1.0
    tree = PriorityTree(len(values), fanout)
    tree.fill(0, len(values), 1.0, len(values))
    tree.update(np.arange(len(values)), values, len(values))
    targets = np.array(fractions) * tree.total
    found = tree.find(targets)
    prefix = np.concatenate(([0.0], np.cumsum(values)))
    assert np.all(values[found] > 0), "zero-priority leaves are never drawn"
    tolerance = 1e-9 * values.sum()
    assert np.all(prefix[found] <= targets + tolerance)
    assert np.all(targets < prefix[found + 1] + tolerance)


@pytest.mark.parametrize("fanout", FANOUTS)
def test_targets_at_or_above_the_total_map_to_the_last_positive_leaf(fanout):
    tree = PriorityTree(10, fanout)
    tree.fill(0, 4, 1.0, 4)
    tree.update(np.arange(4), np.array([1.0, 2.0, 3.0, 0.0]), 4)
    assert tree.find(np.array([6.0, 7.5])).tolist() == [2, 2]


def test_duplicate_indices_in_one_batch_keep_the_last_value():
    tree = PriorityTree(8, 2)
    tree.fill(0, 6, 1.0, 6)
    tree.update(np.array([5, 1, 5, 5, 1]), np.array([1.0, 2.0, 3.0, 4.0, 7.0]), 6)
    assert tree.leaves[[1, 5]].tolist() == [7.0, 4.0]
    assert tree.total == 4 * 1.0 + 7.0 + 4.0 and tree.min == 1.0
    tree.update(np.array([2, 2, 0]), np.array([1.0, 0.5, 3.0]), 6)
    assert tree.leaves[[0, 2]].tolist() == [3.0, 0.5] and tree.min == 0.5


def test_the_minimum_counts_written_items_only():
    tree = PriorityTree(10, 4)
    tree.fill(0, 3, 2.0, 3)                         # leaves 3..9 are 0 but hold no items
    assert tree.min == 2.0 and tree.total == 6.0
    tree.fill(3, 5, 0.5, 5)
    assert tree.min == 0.5
    before = tree.flat.copy()
    tree.fill(5, 5, 9.0, 5)                         # an empty run changes nothing
    np.testing.assert_array_equal(tree.flat, before)


@pytest.mark.parametrize("fanout", FANOUTS)
def test_rebuild_recomputes_inner_nodes_from_leaves(fanout):
    tree = PriorityTree(100, fanout)
    tree.leaves[:90] = np.arange(90.0)
    tree.rebuild(90)
    assert_invariants(tree, np.arange(100.0), 90)


@pytest.mark.parametrize("capacity", [1, 2, 5, 16, 17, 1000, 2**20, 10_000_000])
@pytest.mark.parametrize("fanout", [2, 16])
def test_depth_matches_the_workload_descriptor(capacity, fanout):
    sizes = level_sizes(capacity, fanout)
    assert sizes[0] == 1 and sizes[-1] >= capacity
    assert all(s % fanout == 0 for s in sizes[1:])
    workload = ReplayWorkload(capacity=capacity, batch=1, item_bytes=1, prioritized=True, fanout=fanout)
    assert len(sizes) - 1 == workload.tree_depth


def test_ten_million_leaves_cost_only_their_arrays():
    """Sums and running sums of all nodes plus minima of the inner ones: about 8 C (2 f + 1) / (f - 1) bytes."""
    assert 8 * tree_nodes(10_000_000, 16) < 1.01 * 8 * 10_000_000 * 33 / 15
