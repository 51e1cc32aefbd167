"""Training logs and progress: CSV always, TensorBoard when its extra is installed, progress anywhere.

``episodes.csv`` one row per finished episode, ``train.csv`` one row per training round (SB3's scalars and each
kernel's mean time per call since the previous row), ``tensorboard/`` the same under SB3's tags with the extra
(docs/runtime.md, "Progress and logs"). A row whose losses are still on their way from a GPU waits for them: the host
never waits to write a row. Progress goes to stderr: a live bar on a terminal, else a line every ``every_s`` seconds.

Example::

    >>> log = RunLog(Path("runs/dqn"), total_steps=50_000, algorithm=algo, kernel_times=timer.summary)
    >>> log.episode(step=200, episode_return=21.0, length=21)
    >>> log.train(step=1024, losses={"q": 0.13}, steps_per_second=812.0)
    >>> log.tick(step=1024, rate=lambda: 812.0)
    [1024/50000   2%] 812 samples/s, return 21.0 (mean of 1), 0:01 elapsed, ETA 1:00
    >>> log.close()
"""
from __future__ import annotations

import csv
import sys
import time
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any, Protocol

RETURN_WINDOW = 100
"""Episodes a mean return or length is taken over, in the live log and the report's curve (as SB3's ``ep_rew_mean``)."""
PROGRESS_EVERY_S = 10.0
"""Seconds between progress lines when stderr is not a terminal."""
BAR_EVERY_S = 0.25
"""Seconds between redraws of the live bar on a terminal."""
ETA_WINDOW_S = 30.0
"""The ETA extrapolates the pace of about the last this many seconds (a warm-up of random actions runs faster)."""
TENSORBOARD_EXTRA = 'pip install -c constraints.txt "pearl_py[tensorboard]"'

MAX_LATE_ROWS = 64
"""Rows kept waiting for their losses at most; beyond, the host waits for the oldest (bounded memory)."""

KernelTimes = Callable[[], Mapping[str, Mapping[str, Any]]]


class LateLosses(Protocol):
    """A round's mean losses on their way from a device (``collect.PendingLosses``)."""

    def ready(self) -> bool:
        """Whether they have arrived (never waits)."""

    def values(self) -> Mapping[str, float]:
        """The losses by name (waits for them)."""


class _Arrived:
    """Losses already on the host."""

    def __init__(self, losses: Mapping[str, float]) -> None:
        self.losses = losses

    def ready(self) -> bool:
        return True

    def values(self) -> Mapping[str, float]:
        return self.losses


def exploration_rate(algorithm: Any, progress: float) -> float | None:
    """The exploration figure SB3 logs: DQN's epsilon at ``progress``, or the action-noise std; None otherwise."""
    if algorithm is None:
        return None
    epsilon = getattr(algorithm, "epsilon", None)
    if callable(epsilon):
        return float(epsilon(progress))
    noise = getattr(algorithm.config, "noise_std", None)
    return float(noise) if noise is not None else None


def clock(seconds: float) -> str:
    """``m:ss`` or ``h:mm:ss``."""
    seconds = max(int(round(seconds)), 0)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


class RunLog:
    """Writes ``episodes.csv`` and ``train.csv`` (and TensorBoard), and shows progress; see the module docstring.

    ``progress``: None (a bar on a terminal, periodic lines elsewhere), True (the bar), False (nothing).
    ``algorithm``: for ``exploration_rate``; ``kernel_times``: a callable returning per-kernel
    ``{calls, total_s}`` so far (a KernelTimer's ``summary``), for the ``time_<kernel>_ms`` columns.
    """

    def __init__(self, out_dir: Path | None, total_steps: int, progress: bool | None = None, *,
                 algorithm: Any = None, kernel_times: KernelTimes | None = None,
                 every_s: float = PROGRESS_EVERY_S, stream: IO[str] | None = None) -> None:
        self.total_steps = total_steps
        self.stream = stream if stream is not None else sys.stderr
        on_terminal = self.stream.isatty()
        self.mode = ("bar" if progress or on_terminal else "lines") if progress is not False else "off"
        self.every_s = every_s if self.mode == "lines" else BAR_EVERY_S
        self.algorithm = algorithm
        self.kernel_times = kernel_times
        self._files: list[IO[str]] = []
        self._episodes = self._train = None
        self._train_fields: list[str] | None = None
        self._tb = None
        self._started = time.monotonic()
        self._first_step: int | None = None
        self._last_draw = self._started
        self._last_step = 0
        self._last_rate: Callable[[], float] = lambda: 0.0
        self._last_kernels: dict[str, tuple[int, float]] = {}
        self._late: deque[tuple[int, dict[str, float], dict[str, float], LateLosses]] = deque()
        """Rows whose losses have not arrived yet: ``(step, figures before the losses, figures after, losses)``."""
        self._shown: deque[tuple[float, int]] = deque()
        """``(time, step)`` of recent progress displays, for the ETA's recent pace."""
        self.returns: deque[float] = deque(maxlen=RETURN_WINDOW)
        self.lengths: deque[int] = deque(maxlen=RETURN_WINDOW)
        self.episodes = 0
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
        self.returns.append(episode_return)
        self.lengths.append(length)
        self.episodes += 1
        if self._episodes is not None:
            self._episodes.writerow([step, f"{episode_return:.6g}", length])
        self._tensorboard(step, {"rollout/episode_return": episode_return, "rollout/episode_length": length})

    def evaluation(self, step: int, mean_return: float, mean_length: float) -> None:
        """A periodic evaluation's figures, under SB3's ``eval/`` tags (its points are in ``result.json``)."""
        self._tensorboard(step, {"eval/mean_reward": mean_return, "eval/mean_ep_length": mean_length})

    def scalars(self, step: int, losses: Mapping[str, float], steps_per_second: float) -> dict[str, float]:
        """The figures of a ``train.csv`` row, by column name (empty figures left out)."""
        head, tail = self._figures(step, steps_per_second)
        return _row(head, losses, tail)

    def _figures(self, step: int, steps_per_second: float) -> tuple[dict[str, float], dict[str, float]]:
        """A row's figures other than the losses: those before them and those after, by column name."""
        head: dict[str, float] = {"episodes": self.episodes, "time_elapsed": time.monotonic() - self._started}
        if self.returns:
            head["ep_rew_mean"] = sum(self.returns) / len(self.returns)
            head["ep_len_mean"] = sum(self.lengths) / len(self.lengths)
        rate = exploration_rate(self.algorithm, step / max(self.total_steps, 1))
        if rate is not None:
            head["exploration_rate"] = rate
        return head, {"steps_per_second": steps_per_second, **self._kernel_ms()}

    def _kernel_ms(self) -> dict[str, float]:
        """Mean milliseconds per call of each kernel since the previous row (kernels not called since: left out)."""
        if self.kernel_times is None:
            return {}
        out = {}
        for kernel, t in self.kernel_times().items():
            calls, total = int(t["calls"]), float(t["total_s"])
            before_calls, before_total = self._last_kernels.get(kernel, (0, 0.0))
            if calls > before_calls:
                out[f"time_{kernel}_ms"] = 1e3 * (total - before_total) / (calls - before_calls)
            self._last_kernels[kernel] = (calls, total)
        return out

    def train(self, step: int, losses: Mapping[str, float] | LateLosses, steps_per_second: float) -> None:
        """A training round's row. Its figures are taken now; losses still on their way from a device
        (:class:`LateLosses`) are read once they have arrived: the row is written then, at a later round's row or
        at :meth:`close` (or, beyond :data:`MAX_LATE_ROWS` waiting rows, after waiting for the oldest). Rows keep
        their order."""
        late = _Arrived(losses) if isinstance(losses, Mapping) else losses
        self._late.append((step, *self._figures(step, steps_per_second), late))
        self._write_arrived(wait=len(self._late) > MAX_LATE_ROWS)

    def _write_arrived(self, wait: bool, all_of_them: bool = False) -> None:
        """Write the waiting rows whose losses have arrived, oldest first (``wait``: for the oldest, or for every
        one with ``all_of_them``)."""
        while self._late and (wait or self._late[0][3].ready()):
            step, head, tail, late = self._late.popleft()
            self._write_row(step, _row(head, late.values(), tail))
            wait = all_of_them

    def _write_row(self, step: int, row: Mapping[str, float]) -> None:
        if self.out_dir is not None:
            if self._train is None:
                self._train_fields = ["step", *row]
                self._train = self._csv(self.out_dir / "train.csv", self._train_fields)
            self._train.writerow([step] + [_cell(row.get(k)) for k in self._train_fields[1:]])
        self._tensorboard(step, {tensorboard_tag(name): value for name, value in row.items()})

    def _tensorboard(self, step: int, scalars: Mapping[str, float]) -> None:
        """``scalars`` at ``step`` as one TensorBoard event (nothing without the extra or an output folder)."""
        if self._tb is not None:
            self._tb.write(step, scalars)

    def tick(self, step: int, rate: Callable[[], float]) -> None:
        """Show progress: redraw the bar (at most 4 times a second) or print a line every ``every_s`` seconds.
        ``rate()``: env steps per second, asked only when shown (a loop ticks every step)."""
        if self._first_step is None:
            self._first_step = step
        now = time.monotonic()
        self._last_step, self._last_rate = step, rate
        if self.mode == "off" or (now - self._last_draw < self.every_s and step < self.total_steps):
            return
        if self.mode == "lines" and step >= self.total_steps:
            return  # the final line comes from close()
        self._last_draw = now
        self._show(step, rate(), now)

    def _show(self, step: int, steps_per_second: float, now: float) -> None:
        elapsed = now - self._started
        eta = self._eta(step, steps_per_second, now)
        done = min(step / max(self.total_steps, 1), 1.0)
        ret = (f", return {sum(self.returns) / len(self.returns):.1f} (mean of {len(self.returns)})"
               if self.returns else "")
        figures = (f"{step}/{self.total_steps} {done:4.0%}] {steps_per_second:.0f} samples/s{ret}, "
                   f"{clock(elapsed)} elapsed" + (f", ETA {clock(eta)}" if eta is not None and step < self.total_steps
                                                  else ""))
        if self.mode == "bar":
            width = 24
            filled = int(width * done)
            self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] [{figures}\033[K")
        else:
            self.stream.write(f"[{figures}\n")
        self.stream.flush()

    def _eta(self, step: int, steps_per_second: float, now: float) -> float | None:
        """Seconds left at the pace since the display about ``ETA_WINDOW_S`` ago (the given rate at first)."""
        while len(self._shown) > 1 and now - self._shown[1][0] >= ETA_WINDOW_S:
            self._shown.popleft()
        then = self._shown[0] if self._shown else None
        self._shown.append((now, step))
        if then is not None and step > then[1] and now > then[0]:
            steps_per_second = (step - then[1]) / (now - then[0])
        return (self.total_steps - step) / steps_per_second if steps_per_second > 0 else None

    def close(self) -> None:
        self._write_arrived(wait=True, all_of_them=True)
        if self.mode == "bar":
            self.stream.write("\n")
        elif self.mode == "lines" and self._first_step is not None:
            self._show(self._last_step, self._last_rate(), time.monotonic())
        for f in self._files:
            f.close()
        if self._tb is not None:
            self._tb.close()


def _row(head: Mapping[str, float], losses: Mapping[str, float], tail: Mapping[str, float]) -> dict[str, float]:
    """A ``train.csv`` row's figures in column order: ``head``, the losses (``loss_<name>``), ``tail``."""
    return {**head, **{f"loss_{k}": float(v) for k, v in losses.items()}, **tail}


def _cell(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:.6g}" if isinstance(value, float) else str(value)


SB3_LOSS_TAGS = {"q": "loss", "critic": "critic_loss", "actor": "actor_loss", "ent_coef": "ent_coef_loss",
                 "policy_loss": "policy_gradient_loss"}
"""SB3's ``train/`` names of pearl_py's losses where they differ (DQN's ``loss``, SAC's ``actor_loss``, PPO's
``policy_gradient_loss``); the others (``value_loss``, ``approx_kl``, ``clip_fraction``, ``learning_rate``,
``entropy`` — the policy's entropy, SB3 logs its negative as ``entropy_loss``) keep their names."""


def tensorboard_tag(column: str) -> str:
    """SB3's tag for a ``train.csv`` column: ``loss_q`` -> ``train/loss``, ``steps_per_second`` -> ``time/fps``."""
    if column in ("ep_rew_mean", "ep_len_mean", "exploration_rate"):
        return f"rollout/{column}"
    if column.startswith("loss_"):
        name = column.removeprefix("loss_")
        return f"train/{SB3_LOSS_TAGS.get(name, name)}"
    if column == "steps_per_second":
        return "time/fps"
    return f"time/{column}"


class _Events:
    """A TensorBoard event file in ``path``: each :meth:`write` one event holding several scalars of one step."""

    def __init__(self, path: Path) -> None:
        from tensorboard.compat.proto.summary_pb2 import Summary
        from torch.utils.tensorboard.writer import FileWriter

        self._summary, self._file = Summary, FileWriter(str(path))

    def write(self, step: int, scalars: Mapping[str, float]) -> None:
        values = [self._summary.Value(tag=tag, simple_value=float(value)) for tag, value in scalars.items()]
        self._file.add_summary(self._summary(value=values), step)

    def close(self) -> None:
        self._file.close()      # flushes every event written


def _tensorboard(path: Path) -> _Events | None:
    """TensorBoard events in ``path``, or None when the ``tensorboard`` extra is not installed."""
    try:
        return _Events(path)
    except ImportError:
        return None
