"""Training logs: CSV always, TensorBoard when installed, a progress line on a terminal.

Example::

    >>> log = RunLog(Path("runs/dqn"), total_steps=50_000)
    >>> log.episode(step=200, episode_return=21.0, length=21)
    >>> log.train(step=1024, losses={"q": 0.13}, steps_per_second=812.0)
    >>> log.close()
"""
from __future__ import annotations

import csv
import sys
import time
from pathlib import Path
from typing import IO, Any


class RunLog:
    """Writes ``episodes.csv`` (step, return, length) and ``train.csv`` (step, losses, steps/s)."""

    def __init__(self, out_dir: Path | None, total_steps: int, progress: bool | None = None) -> None:
        self.total_steps = total_steps
        self.progress = sys.stderr.isatty() if progress is None else progress
        self._files: list[IO[str]] = []
        self._episodes = self._train = None
        self._train_fields: list[str] | None = None
        self._tb = None
        self._last_draw = 0.0
        self.last_return: float | None = None
        self.out_dir = out_dir
        if out_dir is not None:
            out_dir.mkdir(parents=True, exist_ok=True)
            self._episodes = self._csv(out_dir / "episodes.csv", ["step", "episode_return", "episode_length"])
            self._tb = _tensorboard(out_dir / "tensorboard")

    def _csv(self, path: Path, header: list[str]) -> csv.writer:
        f = path.open("w", newline="")
        self._files.append(f)
        writer = csv.writer(f)
        writer.writerow(header)
        return writer

    def episode(self, step: int, episode_return: float, length: int) -> None:
        self.last_return = episode_return
        if self._episodes is not None:
            self._episodes.writerow([step, f"{episode_return:.6g}", length])
        if self._tb is not None:
            self._tb.add_scalar("rollout/episode_return", episode_return, step)

    def train(self, step: int, losses: dict[str, float], steps_per_second: float) -> None:
        row: dict[str, Any] = {"step": step, **{f"loss_{k}": f"{v:.6g}" for k, v in losses.items()},
                               "steps_per_second": f"{steps_per_second:.1f}"}
        if self.out_dir is not None:
            if self._train is None:
                self._train_fields = list(row)
                self._train = self._csv(self.out_dir / "train.csv", self._train_fields)
            self._train.writerow([row.get(k, "") for k in self._train_fields])
        if self._tb is not None:
            for k, v in losses.items():
                self._tb.add_scalar(f"train/loss_{k}", v, step)
            self._tb.add_scalar("time/steps_per_second", steps_per_second, step)

    def tick(self, step: int, steps_per_second: float) -> None:
        """Redraw the progress line (at most 4 times a second) when on a terminal."""
        now = time.monotonic()
        if not self.progress or (now - self._last_draw < 0.25 and step < self.total_steps):
            return
        self._last_draw = now
        width = 30
        done = int(width * min(step / max(self.total_steps, 1), 1.0))
        ret = f" return {self.last_return:8.1f}" if self.last_return is not None else ""
        sys.stderr.write(f"\r[{'#' * done}{'.' * (width - done)}] {step}/{self.total_steps} "
                         f"{steps_per_second:7.0f} steps/s{ret}")
        sys.stderr.flush()

    def close(self) -> None:
        if self.progress:
            sys.stderr.write("\n")
        for f in self._files:
            f.close()
        if self._tb is not None:
            self._tb.close()


def _tensorboard(path: Path):
    """A TensorBoard SummaryWriter, or None when the tensorboard package is not installed."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        return None
    return SummaryWriter(str(path))
