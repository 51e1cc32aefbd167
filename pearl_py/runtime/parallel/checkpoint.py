"""Checkpoints of a parallel run: written whole or not at all, and validated on resume.

A checkpoint holds the learner (networks, optimizers, gradient-step count), the replay
(items, priorities, counters, sampling generator), the run's progress (transitions
consumed, episodes, evaluation history, training seconds, kernel times so far), the
torch RNG states (the CPU's and every CUDA device's) and the config it belongs to. It is taken at a consistent point:
between two updates, with every drained transition in the replay (transitions still in
the actors' rings are dropped and collected again after resume).

Example::

    >>> save_checkpoint(Path("runs/x/checkpoint"), Checkpoint(...))      # atomic
    >>> ckpt = load_checkpoint(Path("runs/x"))                            # the run dir or the folder
    >>> ckpt.progress.transitions
    12288
"""
from __future__ import annotations

import io
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from pearl_py.algorithms.off_policy.base import Algorithm
from pearl_py.errors import UserError
from pearl_py.fileio import atomic_write_bytes, atomic_write_json

CHECKPOINT_DIR = "checkpoint"
FORMAT = 1


@dataclass
class Progress:
    """How far a run got: counters that make a resumed run continue exactly."""

    transitions: int = 0
    """Transitions inserted into the replay (and processed by the training schedule)."""
    episodes: int = 0
    sessions: int = 0
    """Sessions run before this one (the first run is session 0; each resume adds one)."""
    wall_seconds: float = 0.0
    eval_history: list[dict[str, float]] = field(default_factory=list)
    kernel_times: dict[str, dict[str, float]] = field(default_factory=dict)
    max_policy_lag: int = 0
    """The largest policy lag (updates) any actor noted in any session."""


@dataclass
class Checkpoint:
    algorithm: str
    env: str
    config: dict[str, Any]
    seed: int
    total_steps: int
    learner: dict[str, Any]
    replay: dict[str, Any]
    progress: Progress
    torch_rng: torch.Tensor
    cuda_rng: list[torch.Tensor] = field(default_factory=list)
    """Every CUDA device's generator state (``pearl_py.runtime.rng_state``; empty without CUDA or in a checkpoint
    written before they were kept)."""

    def check_matches(self, algorithm: Algorithm, seed: int, total_steps: int) -> None:
        """Raise :class:`UserError` unless the checkpoint belongs to this algorithm, config and run."""
        mine = (algorithm.name, algorithm.env_id, asdict(algorithm.config), seed, total_steps)
        theirs = (self.algorithm, self.env, self.config, self.seed, self.total_steps)
        for label, a, b in zip(("algorithm", "env", "hyperparameters", "seed", "total_steps"), mine, theirs):
            if a != b:
                raise UserError(f"resume: the checkpoint's {label} is {b!r}, this run's is {a!r}")


def checkpoint_dir(path: Path) -> Path:
    """Accept the run's output folder or its ``checkpoint`` folder."""
    path = Path(path)
    return path if (path / "checkpoint.pt").exists() else path / CHECKPOINT_DIR


def save_checkpoint(directory: Path, ckpt: Checkpoint) -> Path:
    """Write ``checkpoint.pt`` (torch) and a readable ``checkpoint.json`` summary, each atomically."""
    buffer = io.BytesIO()
    data = asdict(ckpt)
    data["format"] = FORMAT
    torch.save(data, buffer)
    path = Path(directory) / "checkpoint.pt"
    atomic_write_bytes(path, buffer.getvalue())
    summary = {k: data[k] for k in ("algorithm", "env", "seed", "total_steps")}
    summary.update(transitions=ckpt.progress.transitions, gradient_steps=ckpt.learner["gradient_steps"],
                   episodes=ckpt.progress.episodes, sessions=ckpt.progress.sessions + 1)
    atomic_write_json(Path(directory) / "checkpoint.json", summary)
    return path


def load_checkpoint(path: Path) -> Checkpoint:
    """Read a checkpoint written by :func:`save_checkpoint` (our own file: full unpickling)."""
    file = checkpoint_dir(path) / "checkpoint.pt"
    if not file.exists():
        raise UserError(f"resume: no checkpoint at {file}")
    data = torch.load(file, weights_only=False)
    if data.pop("format", None) != FORMAT:
        raise UserError(f"resume: {file} is not a pearl_py checkpoint of format {FORMAT}")
    data["progress"] = Progress(**data["progress"])
    return Checkpoint(**data)
