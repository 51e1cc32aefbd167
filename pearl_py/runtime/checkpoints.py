"""Periodic checkpoints of every executor: written whole or not at all, the newest ``keep`` kept, resumable.

A checkpoint is written into a hidden temporary folder (each file fsynced) and renamed into place, so a folder under
``checkpoints/`` is always complete; ``--resume OUT`` continues from the newest complete one (periodic, or the stop
checkpoint ``OUT/checkpoint``, whichever got further), its envs reseeded with ``seed + SESSION_SEED_STRIDE *
session``. docs/runtime.md, "Periodic checkpoints and resume", has when each executor writes them.

Example::

    >>> options = CheckpointOptions(every=10_000, keep=2)
    >>> periodic = PeriodicCheckpoints(Path("runs/x"), options, algo, seed=0, total_steps=50_000, done=0)
    >>> periodic.due(10_000)
    True
    >>> periodic.save(learner.state_dict(), replay.state_dict(), progress)
    PosixPath('runs/x/checkpoints/000001-step10000')
    >>> newest_checkpoint(Path("runs/x"))
    PosixPath('runs/x/checkpoints/000001-step10000')
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from pearl_py.algorithms.core import BaseAlgorithm
from pearl_py.errors import UserError
from pearl_py.platform.runtimes import CUDA

if TYPE_CHECKING:  # the parallel package imports this module: its checkpoint format is imported where used
    from pearl_py.runtime.parallel.checkpoint import Checkpoint, Progress

CHECKPOINTS_DIR = "checkpoints"
INTERRUPT_DIR = "checkpoint"
"""Where a run's stop (Ctrl-C, SIGTERM; a parallel run's crash) checkpoint goes (one, replaced each time)."""
SESSION_SEED_STRIDE = 1_000_003
"""Env seed offset per resumed session (a resumed run does not replay the first session's episodes)."""
_NAME = re.compile(r"^(\d{6})-step(\d+)$")


@dataclass(frozen=True)
class CheckpointOptions:
    """``every``: env steps between periodic checkpoints (0: none); ``keep``: newest complete ones kept."""

    every: int = 0
    keep: int = 2

    def __post_init__(self) -> None:
        if not isinstance(self.every, int) or self.every < 0:
            raise UserError(f"checkpoint_freq must be an integer >= 0 (env steps; 0: none), got {self.every!r}")
        if not isinstance(self.keep, int) or self.keep < 1:
            raise UserError(f"checkpoint_keep must be an integer >= 1, got {self.keep!r}")


def _complete(folder: Path) -> bool:
    """A checkpoint folder with both files (the summary is written last)."""
    return (folder / "checkpoint.pt").is_file() and (folder / "checkpoint.json").is_file()


def periodic_checkpoints(run_dir: Path) -> list[Path]:
    """The complete periodic checkpoints of a run, oldest first."""
    root = Path(run_dir) / CHECKPOINTS_DIR
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if _NAME.match(p.name) and _complete(p)]
    return sorted(found, key=lambda p: int(_NAME.match(p.name).group(1)))


def _reached(folder: Path) -> tuple[int, int]:
    """(transitions, gradient steps) a checkpoint's summary records; (-1, -1) when unreadable."""
    try:
        summary = json.loads((folder / "checkpoint.json").read_text())
        return int(summary["transitions"]), int(summary["gradient_steps"])
    except (OSError, ValueError, KeyError, TypeError):
        return -1, -1


def newest_checkpoint(run_dir: Path) -> Path | None:
    """The complete checkpoint of ``run_dir`` that got furthest: the newest periodic one or the stop checkpoint."""
    candidates = periodic_checkpoints(run_dir)[-1:]
    stop = Path(run_dir) / INTERRUPT_DIR
    if _complete(stop):
        candidates.append(stop)  # last: on a tie the stop checkpoint (taken later) wins
    return max(reversed(candidates), key=_reached, default=None) if candidates else None


class CheckpointStore:
    """The ``checkpoints/`` folder of a run: atomic writes, the newest ``keep`` kept."""

    def __init__(self, run_dir: Path, keep: int) -> None:
        self.root = Path(run_dir) / CHECKPOINTS_DIR
        self.keep = keep

    def save(self, write: Callable[[Path], object], transitions: int) -> Path:
        """``write(folder)`` fills a temporary folder, renamed to ``<seq>-step<transitions>``; older ones pruned."""
        self.root.mkdir(parents=True, exist_ok=True)
        existing = periodic_checkpoints(self.root.parent)
        seq = int(_NAME.match(existing[-1].name).group(1)) + 1 if existing else 1
        tmp = self.root / f".tmp-{secrets.token_hex(4)}"
        tmp.mkdir()
        try:
            write(tmp)
            final = self.root / f"{seq:06d}-step{transitions}"
            os.replace(tmp, final)
            _fsync_dir(self.root)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        for old in periodic_checkpoints(self.root.parent)[:-self.keep]:
            shutil.rmtree(old, ignore_errors=True)
        for stale in self.root.glob(".tmp-*"):  # a run killed mid-write left it; never a complete checkpoint
            if stale != tmp:
                shutil.rmtree(stale, ignore_errors=True)
        return final


def _fsync_dir(path: Path) -> None:
    """Make a rename in ``path`` durable (a power cut after it keeps the new name)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class PeriodicCheckpoints:
    """When a run is due for a checkpoint, and writing it or the stop checkpoint (see the module docstring)."""

    def __init__(self, out_dir: Path | None, options: CheckpointOptions, algorithm: BaseAlgorithm, seed: int,
                 total_steps: int, done: int = 0) -> None:
        self.options, self.algorithm, self.seed, self.total_steps = options, algorithm, seed, total_steps
        self.out_dir = out_dir
        self.store = CheckpointStore(out_dir, options.keep) if out_dir is not None and options.every else None
        self.next_at = (done // options.every + 1) * options.every if options.every else 0
        """Env steps at which the next checkpoint is due."""
        self.written: list[Path] = []

    @property
    def enabled(self) -> bool:
        return self.store is not None

    def due(self, transitions: int) -> bool:
        """Whether ``transitions`` reached the next multiple of ``every`` (never at the run's end: it is done)."""
        return self.enabled and self.next_at <= transitions < self.total_steps

    def save(self, learner_state: dict[str, Any], replay_state: dict[str, Any], progress: Progress,
             rng: tuple[torch.Tensor, list[torch.Tensor]] | None = None) -> Path:
        """Write a checkpoint of the run at ``progress.transitions`` env steps; ``rng``: the learner's torch RNG
        states (CPU, CUDA devices) where it runs in another process, else this process's, now."""
        from pearl_py.runtime.parallel.checkpoint import save_checkpoint

        ckpt = self._checkpoint(learner_state, replay_state, progress, rng)
        path = self.store.save(lambda folder: save_checkpoint(folder, ckpt), progress.transitions)
        every = self.options.every
        self.next_at = (progress.transitions // every + 1) * every
        self.written.append(path)
        return path

    def save_stop(self, learner_state: dict[str, Any], replay_state: dict[str, Any], progress: Progress
                  ) -> Path | None:
        """Write the stop checkpoint (``OUT/checkpoint``, each file atomically) of a run stopped at
        ``progress.transitions`` env steps; None without an output folder."""
        if self.out_dir is None:
            return None
        return self.save_to(Path(self.out_dir) / INTERRUPT_DIR, learner_state, replay_state, progress)

    def save_to(self, folder: Path, learner_state: dict[str, Any], replay_state: dict[str, Any], progress: Progress
                ) -> Path:
        """Write a checkpoint of the run at ``progress.transitions`` env steps into ``folder`` (each file
        atomically): the stop checkpoint's, or a mode switch's
        (:meth:`~pearl_py.runtime.session.RunSession.switch_mode`)."""
        from pearl_py.runtime.parallel.checkpoint import save_checkpoint

        folder.mkdir(parents=True, exist_ok=True)
        save_checkpoint(folder, self._checkpoint(learner_state, replay_state, progress))
        return folder

    def _checkpoint(self, learner_state: dict[str, Any], replay_state: dict[str, Any], progress: Progress,
                    rng: tuple[torch.Tensor, list[torch.Tensor]] | None = None) -> Checkpoint:
        from pearl_py.runtime.parallel.checkpoint import Checkpoint

        algo = self.algorithm
        torch_rng, cuda_rng = rng if rng is not None else (torch.get_rng_state(), CUDA.rng_states())
        return Checkpoint(algorithm=algo.name, env=algo.env_id, config=asdict(algo.config), seed=self.seed,
                          total_steps=self.total_steps, learner=learner_state, replay=replay_state,
                          progress=progress, torch_rng=torch_rng, cuda_rng=cuda_rng,
                          obs_transform=algo.obs_transform.state() if algo.obs_transform else {})


def restore_learner(learner: Any, state: dict[str, Any], torch_rng: torch.Tensor, cuda_rng: list[torch.Tensor],
                    source: Path | str) -> None:
    """Load a checkpoint's learner part and torch RNGs (this process's) into ``learner``; a UserError naming
    ``source`` when they do not fit."""
    try:
        learner.load_state_dict(state)
        torch.set_rng_state(torch_rng)
        CUDA.restore_rng_states(cuda_rng)
    except (RuntimeError, KeyError, TypeError, ValueError) as exc:  # the networks' shapes or names differ
        raise UserError(f"resume: the checkpoint in {source} does not fit this run's learner "
                        f"({str(exc).splitlines()[0][:200]})") from None


def session_seed(seed: int, sessions: int) -> int:
    """The env and warm-up seed of a run's ``sessions``-th resumed session (the seed itself at first)."""
    return seed + SESSION_SEED_STRIDE * sessions

