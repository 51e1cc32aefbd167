"""Branch and bound on the idle power a plan switches on: energy per sample ``E = I * T + D`` made linear.

On an interval ``[lo, hi]`` of idle power, ``lo * T + D`` under-estimates ``E`` for every plan drawing
``lo <= I <= hi``, so one MILP with the budget ``I <= hi`` bounds the interval; intervals split between the
idle powers plans can draw (subset sums of the devices' idle powers) and close or are pruned as in spatial
branch and bound: exact and finite. docs/optimizer.md ("Exact formulation") gives the argument and sources.

Example::

    >>> levels = idle_levels([55.0, 55.0, 65.0], least=55.0)
    >>> levels.watts
    [55.0, 65.0, 110.0, 120.0, 175.0]
    >>> result = branch_on_idle(levels, solve_node, incumbent=None, deadline=None)
    >>> result.complete, result.gap
    (True, 0.0)
"""
from __future__ import annotations

import bisect
import heapq
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

MAX_LEVELS = 20_000
"""Above this many distinct subset sums the levels are a geometric grid (the search then proves a gap)."""
GRID_RATIO = 1.001
"""Ratio of neighbouring grid levels when the subset sums are too many (at most 0.1 % gap per closed interval)."""


@dataclass(frozen=True)
class IdleLevels:
    """Ascending idle powers (W) a plan may draw; ``exact``: every plan's idle power is one of them."""

    watts: list[float]
    exact: bool

    def at_most(self, watts: float) -> int:
        """Index of the highest level not above ``watts`` (levels match to 1e-9 relative)."""
        return max(bisect.bisect_right(self.watts, watts * (1 + 1e-9)) - 1, 0)

    def at_least(self, watts: float) -> int:
        """Index of the lowest level not below ``watts`` (the top level if ``watts`` is above every level)."""
        return min(bisect.bisect_left(self.watts, watts * (1 - 1e-9)), len(self.watts) - 1)

    def budget(self, j: int) -> float:
        """The idle-power budget of an interval ending at level ``j``. Exact levels: halfway to the next level,
        so a plan at level ``j`` is inside with room for HiGHS's tolerances and one at ``j + 1`` is outside. A
        grid: up to the next level, since plans draw anything between levels (the next interval, priced at
        that level, would over-price them)."""
        if j + 1 < len(self.watts):
            return 0.5 * (self.watts[j] + self.watts[j + 1]) if self.exact else self.watts[j + 1]
        return self.watts[j] * (1 + 1e-6) + 1e-9


def idle_levels(idle_w: Iterable[float], least: float = 0.0, limit: int | None = None) -> IdleLevels:
    """Every sum of a subset of ``idle_w`` from ``least`` up (dynamic programming over the devices), or a
    geometric grid from ``least`` to the total when there are more than ``limit`` (``MAX_LEVELS``) distinct sums."""
    limit = MAX_LEVELS if limit is None else limit
    watts = [float(w) for w in idle_w]
    total = sum(watts)
    sums = {0.0}
    for w in watts:
        sums |= {round(s + w, 9) for s in sums}
        if len(sums) > limit:
            low = max(least, min(w for w in watts if w > 0) if any(w > 0 for w in watts) else 0.0, 1e-9)
            steps = max(1, math.ceil(math.log(max(total, low) / low) / math.log(GRID_RATIO)))
            grid = [low * GRID_RATIO ** i for i in range(steps)] + [total]
            return IdleLevels(sorted(set(grid)), exact=False)
    return IdleLevels(sorted(s for s in sums if s >= least * (1 - 1e-9)) or [total], exact=True)


@dataclass
class NodeResult:
    """One interval's MILP: a lower ``bound`` on the objective of the interval's plans, and its best plan
    with the plan's true (evaluated) objective ``value`` and idle power ``idle_w``."""

    bound: float
    value: float
    idle_w: float
    plan: Any


SolveNode = Callable[[float, float, float | None, float | None, float], NodeResult | None]
"""``solve_node(price_w, budget_w, cutoff, time_limit_s, gap)``: minimise with ``price_w * T`` for ``I * T``
over plans drawing at most ``budget_w``, none worse than ``cutoff``, to a relative ``gap``; ``None`` when no
plan qualifies."""
SPLIT_GAP = 0.02
"""Relative gap a wide interval is solved to: it only needs a bound and a plan to split at; one that may close
after all (its plan draws no more than the price) is solved again to the search's gap."""
NARROW = 1.5
"""An interval whose highest idle power is at most this times its lowest is solved to the search's gap at once."""


@dataclass
class SearchResult:
    value: float
    plan: Any
    bound: float
    complete: bool
    """Every interval closed or pruned (the plan is optimal up to ``gap``)."""
    nodes: int
    leaves: list[tuple[float, int, int]] = field(default_factory=list)
    """``(bound, i, j)`` of every interval the search ended with (closed, pruned, empty or left open): they
    cover every level, and no plan in one beats its bound."""

    @property
    def gap(self) -> float:
        if self.value is None or not math.isfinite(self.value) or self.value <= 0:
            return 0.0
        return max(0.0, (self.value - self.bound) / self.value)


def branch_on_idle(levels: IdleLevels, solve_node: SolveNode, incumbent: tuple[float, Any] | None,
                   deadline: float | None, tie: float = 1e-9,
                   intervals: list[tuple[int, int]] | None = None) -> SearchResult:
    """Best-first search over idle-power intervals; ``incumbent`` = ``(value, plan)`` of a known feasible plan.

    An interval ``[i, j]`` (level indices) is priced at ``watts[i]`` and budgeted up to ``watts[j]``.
    Its MILP's plan at level ``k``: ``k <= i`` closes the interval (that plan is its best); otherwise the
    interval splits at ``k`` or at the geometric middle of its idle powers, whichever is lower, so the
    plan's part is priced higher next time. ``intervals``: search only these (default: every level), e.g.
    the leaves of an earlier search that may hold a plan within a held objective. Stops at ``deadline``
    (``time.perf_counter()`` seconds) with the least bound of the intervals left open.
    """
    best_value, best_plan = incumbent if incumbent is not None else (math.inf, None)
    leaves: list[tuple[float, int, int]] = []
    heap = [(-math.inf, i, j) for i, j in (intervals if intervals is not None else [(0, len(levels.watts) - 1)])]
    heapq.heapify(heap)
    nodes = 0
    while heap:
        parent_bound, i, j = heapq.heappop(heap)
        if parent_bound >= best_value * (1 - tie):
            leaves.append((parent_bound, i, j))  # pruned: nothing here beats the incumbent
            continue
        remaining = None if deadline is None else deadline - time.perf_counter()
        if remaining is not None and remaining <= 0:
            heapq.heappush(heap, (parent_bound, i, j))
            break
        nodes += 1
        cutoff = best_value * (1 + tie) if math.isfinite(best_value) else None
        node = (levels.watts[i], levels.budget(j), cutoff, remaining)
        # a wide interval only needs a bound and a plan to split at; a narrow one will likely close
        narrow = levels.watts[j] <= NARROW * levels.watts[i]
        result = solve_node(*node, tie if narrow else SPLIT_GAP)
        if result is not None and not narrow and result.plan is not None and math.isfinite(result.value) \
                and levels.at_least(result.idle_w) <= i and result.value > result.bound * (1 + tie):
            result = solve_node(*node, tie)  # it may close after all: solve it to the search's gap
        if result is None:
            leaves.append((math.inf, i, j))  # no plan here, or none better than the incumbent
            continue
        if result.plan is None:  # the time limit stopped the node before any plan: keep its bound open
            heapq.heappush(heap, (max(parent_bound, result.bound), i, j))
            break
        if math.isfinite(result.value) and (result.value < best_value * (1 - tie) or best_plan is None):
            best_value, best_plan = result.value, result.plan
        k = levels.at_least(result.idle_w) if levels.exact else levels.at_most(result.idle_w) + 1
        if (k <= i and math.isfinite(result.value)) or i == j:  # closed: its best plan draws no more than the price
            leaves.append((result.bound, i, j))
            continue
        middle = levels.at_least(math.sqrt(levels.watts[i] * levels.watts[j]))
        split = min(max(k, i + 1), max(middle, i + 1), j)
        bound = max(parent_bound, result.bound)
        heapq.heappush(heap, (bound, i, split - 1))
        heapq.heappush(heap, (bound, split, j))
    complete = not heap or heap[0][0] >= best_value * (1 - tie)
    leaves += heap
    bound = min([best_value, *(b for b, _, _ in leaves)])
    return SearchResult(best_value, best_plan, bound, complete and best_plan is not None, nodes, leaves)
