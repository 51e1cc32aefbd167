"""A run's learning curve: the mean return of the last 100 episodes against env steps, from its episodes.csv.

Example::

    >>> points = learning_curve(Path("runs/dqn"))
    >>> points[-1]
    (50000, 187.3)
    >>> curve_sentence(points)
    'Mean return of the last 100 episodes (measured): 21.0 at step 1,200, 187.3 at step 50,000 (best 201.5 at ...).'
"""
from __future__ import annotations

import csv
from collections import deque
from collections.abc import Iterator
from pathlib import Path

from pearl_py.runtime.run_log import RETURN_WINDOW

MAX_POINTS = 200
"""Points a curve keeps (evenly spread over the episodes; the last always kept)."""


def session_rows(run_dir: Path, name: str) -> Iterator[dict[str, str]]:
    """The rows of the run's ``name`` log (``episodes.csv``, ``train.csv``): the first session's, then each resumed
    one's (a resumed run's sessions log into ``session<k>/`` beside the first)."""
    sessions = sorted(run_dir.glob(f"session*/{name}"), key=lambda p: int(p.parent.name[7:] or 0))
    first = run_dir / name
    for file in ([first] if first.is_file() else []) + sessions:
        with file.open(newline="") as f:
            yield from csv.DictReader(f)


def thin(points: list[tuple[int, float]], max_points: int = MAX_POINTS) -> list[tuple[int, float]]:
    """At most ``max_points`` of ``points``, evenly spread, the last always kept."""
    if len(points) <= max_points:
        return points
    stride = len(points) / max_points
    return [points[int(i * stride)] for i in range(max_points - 1)] + [points[-1]]


def learning_curve(run_dir: Path, max_points: int = MAX_POINTS) -> list[tuple[int, float]]:
    """``(step, mean return of the last 100 episodes)`` at episode ends, at most ``max_points`` of them."""
    window: deque[float] = deque(maxlen=RETURN_WINDOW)
    points: list[tuple[int, float]] = []
    for row in session_rows(Path(run_dir), "episodes.csv"):
        window.append(float(row["episode_return"]))
        points.append((int(row["step"]), sum(window) / len(window)))
    return thin(points, max_points)


def curve_sentence(points: list[tuple[int, float]]) -> str:
    """The curve in words (for report.md, which leaves the chart out)."""
    if not points:
        return "No episode ended during training, so there is no learning curve."
    first, last = points[0], points[-1]
    best = max(points, key=lambda p: p[1])
    return (f"Mean return of the last {RETURN_WINDOW} episodes (measured): {first[1]:.1f} at step {first[0]:,}, "
            f"{last[1]:.1f} at step {last[0]:,} (best {best[1]:.1f} at step {best[0]:,}).")


def evaluation_sentence(history: list[dict[str, float]], best_policy: dict[str, float] | None = None) -> str:
    """The periodic evaluations in words, with where the best one's networks were saved."""
    best = max(history, key=lambda p: p["return_mean"])
    text = (f"Periodic evaluations (measured, greedy policy): {len(history)}, from {history[0]['return_mean']:.1f} "
            f"at step {history[0]['step']:,} to {history[-1]['return_mean']:.1f} at step {history[-1]['step']:,}; "
            f"best {best['return_mean']:.1f} at step {best['step']:,}")
    if best_policy is not None:
        return text + (", its networks saved as best_policy.pt (`pearl eval RUN_DIR --best`, "
                       "`pearl.load(RUN_DIR, best=True)`).")
    return text + "."


def series_sentence(name: str, points: list[tuple[int, float]]) -> str:
    """A logged series in words: first, last, lowest and highest (report.md, which leaves the charts out)."""
    (first_step, first), (last_step, last) = points[0], points[-1]
    low, high = min(points, key=lambda p: p[1]), max(points, key=lambda p: p[1])
    return (f"{name} (measured): {first:.4g} at step {first_step:,}, {last:.4g} at step {last_step:,} "
            f"(lowest {low[1]:.4g} at step {low[0]:,}, highest {high[1]:.4g} at step {high[0]:,}).")
