"""Sum- and min-tree invariants under random inserts and updates (hypothesis), for binary and n-ary fanouts."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pearl_py.protocol import ReplayWorkload
from pearl_py.replay.segment_tree import MinTree, SumTree, level_sizes

FANOUTS = (2, 3, 16)


def assert_invariants(tree, reference: np.ndarray) -> None:
    """Leaves equal the reference, padding holds the identity, and every inner node reduces its children."""
    capacity = len(reference)
    np.testing.assert_array_equal(tree.leaves[:capacity], reference)
    assert np.all(tree.leaves[capacity:] == tree.identity)
    for depth in range(tree.depth):
        children = tree.levels[depth + 1].reshape(-1, tree.fanout)
        expected = tree.reduce.reduce(children, axis=1)
        np.testing.assert_allclose(tree.levels[depth][:len(expected)], expected, rtol=1e-12, atol=0)
        assert np.all(tree.levels[depth][len(expected):] == tree.identity)
    if isinstance(tree, SumTree):
        assert tree.total == pytest.approx(reference.sum(), rel=1e-12, abs=1e-300)
    else:
        assert tree.total == reference.min()


operations = st.lists(
    st.one_of(
        # batched update at arbitrary (possibly repeated) slots
        st.tuples(st.just("update"), st.lists(st.integers(0, 10_000), min_size=1, max_size=40),
                  st.lists(st.floats(0, 1e6, allow_nan=False), min_size=40, max_size=40)),
        # contiguous fill, as the ring writer does on insert
        st.tuples(st.just("fill"), st.integers(0, 10_000), st.integers(1, 50), st.floats(0, 1e6)),
    ),
    min_size=1, max_size=25,
)


@pytest.mark.parametrize("fanout", FANOUTS)
@settings(max_examples=40, deadline=None)
@given(capacity=st.integers(1, 300), ops=operations)
def test_random_inserts_and_updates_keep_invariants(fanout, capacity, ops):
    sums, mins = SumTree(capacity, fanout), MinTree(capacity, fanout)
    sum_ref, min_ref = np.zeros(capacity), np.full(capacity, np.inf)
    for op in ops:
        if op[0] == "update":
            indices = np.array(op[1]) % capacity
            values = np.array(op[2][: len(indices)])
            for tree in (sums, mins):
                tree.update(indices, values)
            for i, v in zip(indices, values):        # sequential semantics: last write wins
                sum_ref[i] = min_ref[i] = v
        else:
            start = op[1] % capacity
            stop = min(capacity, start + op[2])
            for tree in (sums, mins):
                tree.fill(start, stop, op[3])
            sum_ref[start:stop] = min_ref[start:stop] = op[3]
    assert_invariants(sums, sum_ref)
    assert_invariants(mins, min_ref)


@pytest.mark.parametrize("fanout", FANOUTS)
@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.one_of(st.just(0.0), st.floats(1e-3, 1e3)), min_size=1, max_size=200),
       fractions=st.lists(st.floats(0, 1, exclude_max=True), min_size=1, max_size=64))
def test_find_returns_the_leaf_whose_prefix_interval_holds_the_target(fanout, values, fractions):
    values = np.array(values)
    if values.sum() == 0:
        values[-1] = 1.0
    tree = SumTree(len(values), fanout)
    tree.update(np.arange(len(values)), values)
    targets = np.array(fractions) * tree.total
    found = tree.find(targets)
    prefix = np.concatenate(([0.0], np.cumsum(values)))
    assert np.all(values[found] > 0), "zero-priority leaves are never drawn"
    tolerance = 1e-9 * values.sum()
    assert np.all(prefix[found] <= targets + tolerance)
    assert np.all(targets < prefix[found + 1] + tolerance)


@pytest.mark.parametrize("fanout", FANOUTS)
def test_targets_at_or_above_the_total_map_to_the_last_positive_leaf(fanout):
    tree = SumTree(10, fanout)
    tree.update(np.arange(4), np.array([1.0, 2.0, 3.0, 0.0]))
    assert tree.find(np.array([6.0, 7.5])).tolist() == [2, 2]


def test_duplicate_indices_in_one_batch_keep_the_last_value():
    tree = SumTree(8, 2)
    tree.update(np.array([5, 1, 5, 5, 1]), np.array([1.0, 2.0, 3.0, 4.0, 7.0]))
    assert tree.leaves[[1, 5]].tolist() == [7.0, 4.0]
    assert tree.total == 11.0
    mins = MinTree(8, 2)
    mins.update(np.array([2, 2, 0]), np.array([1.0, 2.0, 3.0]))
    assert mins.leaves[[0, 2]].tolist() == [3.0, 2.0] and mins.total == 2.0


@pytest.mark.parametrize("fanout", FANOUTS)
def test_rebuild_recomputes_inner_nodes_from_leaves(fanout):
    tree = SumTree(100, fanout)
    tree.leaves[:100] = np.arange(100.0)
    tree.rebuild()
    assert_invariants(tree, np.arange(100.0))


@pytest.mark.parametrize("capacity", [1, 2, 5, 16, 17, 1000, 2**20, 10_000_000])
@pytest.mark.parametrize("fanout", [2, 16])
def test_depth_matches_the_workload_descriptor(capacity, fanout):
    sizes = level_sizes(capacity, fanout)
    assert sizes[0] == 1 and sizes[-1] >= capacity
    assert all(s % fanout == 0 for s in sizes[1:])
    workload = ReplayWorkload(capacity=capacity, batch=1, item_bytes=1, prioritized=True, fanout=fanout)
    assert len(sizes) - 1 == workload.tree_depth


def test_ten_million_leaves_cost_only_their_arrays():
    sizes = level_sizes(10_000_000, 16)
    assert sum(sizes) * 8 < 1.1 * 10_000_000 * 8 * 16 / 15
