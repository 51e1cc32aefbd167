"""A run's learning curve: the mean return of the last 100 episodes against env steps, from its episodes.csv.

A resumed run's sessions log into ``session<k>/`` beside the first; their episodes follow on.

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
from pathlib import Path

RETURN_WINDOW = 100
"""Episodes a mean return or length is taken over, in the curve and the live log (as SB3's ``ep_rew_mean``)."""
MAX_POINTS = 200
"""Points a curve keeps (evenly spread over the episodes; the last always kept)."""


def _episode_files(run_dir: Path) -> list[Path]:
    sessions = sorted(run_dir.glob("session*/episodes.csv"), key=lambda p: int(p.parent.name[7:] or 0))
    first = run_dir / "episodes.csv"
    return ([first] if first.is_file() else []) + sessions


def learning_curve(run_dir: Path, max_points: int = MAX_POINTS) -> list[tuple[int, float]]:
    """``(step, mean return of the last 100 episodes)`` at episode ends, at most ``max_points`` of them."""
    window: deque[float] = deque(maxlen=RETURN_WINDOW)
    points: list[tuple[int, float]] = []
    for file in _episode_files(Path(run_dir)):
        with file.open(newline="") as f:
            for row in csv.DictReader(f):
                window.append(float(row["episode_return"]))
                points.append((int(row["step"]), sum(window) / len(window)))
    if len(points) <= max_points:
        return points
    stride = len(points) / max_points
    kept = [points[int(i * stride)] for i in range(max_points - 1)]
    return kept + [points[-1]]


def curve_sentence(points: list[tuple[int, float]]) -> str:
    """The curve in words (for report.md, which leaves the chart out)."""
    if not points:
        return "No episode ended during training, so there is no learning curve."
    first, last = points[0], points[-1]
    best = max(points, key=lambda p: p[1])
    return (f"Mean return of the last {RETURN_WINDOW} episodes (measured): {first[1]:.1f} at step {first[0]:,}, "
            f"{last[1]:.1f} at step {last[0]:,} (best {best[1]:.1f} at step {best[0]:,}).")
