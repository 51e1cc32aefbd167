"""The platform's own Dijkstra (routes between devices) makes networkx's choices, ties included."""
from __future__ import annotations

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from pearl_py.platform.platform import fastest_paths

# small graphs with few distinct costs: many paths of equal cost, so the tie rule decides
EDGES = st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6), st.sampled_from([0.5, 1.0, 2.0])), max_size=18)


@settings(max_examples=150, deadline=None)
@given(EDGES, st.integers(0, 6))
def test_the_same_paths_as_networkx_single_source_dijkstra(edges, src):
    graph, costs = nx.Graph(), {n: {} for n in range(7)}
    graph.add_nodes_from(range(7))
    for a, b, cost in edges:
        if a != b:
            graph.add_edge(a, b, weight=cost)        # a second edge between a and b replaces the first, in place
            costs[a][b] = costs[b][a] = cost
    assert fastest_paths(costs, src) == nx.single_source_dijkstra_path(graph, src, weight="weight")
