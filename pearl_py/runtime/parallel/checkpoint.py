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

import importlib
import io
import pickle
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch

from pearl_py.algorithms.off_policy.base import Algorithm
from pearl_py.errors import UserError
from pearl_py.fileio import TMP_SUFFIX, atomic_write_bytes, atomic_write_json
from pearl_py.protocol.kernel import KernelKind

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
    corrections: list[dict[str, Any]] = field(default_factory=list)
    """The run's monitor's corrections so far (:class:`~pearl_py.runtime.monitor.Correction` as dicts): a resumed
    session starts from the corrected plan."""


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
    """Every CUDA device's generator state (:meth:`~pearl_py.platform.runtimes.DeviceRuntime.rng_states`; empty
    without CUDA or in a checkpoint written before they were kept)."""
    obs_transform: dict[str, Any] = field(default_factory=dict)
    """The run's ``normalize`` statistics (:meth:`~pearl_py.envs.normalize.ObsRewardNormalizer.state`); empty
    without normalization."""

    def check_matches(self, algorithm: Algorithm, seed: int, total_steps: int) -> None:
        """Raise :class:`UserError` unless the checkpoint belongs to this algorithm, config and run."""
        mine = (algorithm.name, algorithm.env_id, asdict(algorithm.config), seed, total_steps)
        theirs = (self.algorithm, self.env, self.config, self.seed, self.total_steps)
        for label, a, b in zip(("algorithm", "env", "hyperparameters", "seed", "total_steps"), mine, theirs):
            if a != b:
                raise UserError(f"resume: the checkpoint's {label} is {b!r}, this run's is {a!r}")


def checkpoint_dir(path: Path) -> Path:
    """Accept a checkpoint folder, or a run's output folder: its newest complete checkpoint (periodic, under
    ``checkpoints/``, or the stop checkpoint in ``checkpoint/``; :mod:`pearl_py.runtime.checkpoints`)."""
    from pearl_py.runtime.checkpoints import newest_checkpoint

    path = Path(path)
    if (path / "checkpoint.pt").exists():
        return path
    return newest_checkpoint(path) or path / CHECKPOINT_DIR


def save_checkpoint(directory: Path, ckpt: Checkpoint) -> Path:
    """Write ``checkpoint.pt`` and a readable ``checkpoint.json``, each atomically (a killed save's temporary files
    in ``directory`` removed first: one run writes there at a time)."""
    for stale in Path(directory).glob(f".checkpoint.*{TMP_SUFFIX}"):
        stale.unlink(missing_ok=True)
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
    """Read and check a checkpoint written by :func:`save_checkpoint`. Only data is unpickled (``weights_only``): a
    damaged, foreign or hostile file cannot run code; it is a :class:`UserError` naming the file and what is wrong."""
    file = checkpoint_dir(path) / "checkpoint.pt"
    if not file.is_file():
        raise UserError(f"resume: no checkpoint at {file}")
    try:
        with torch.serialization.safe_globals(_checkpoint_globals()):
            data = torch.load(file, weights_only=True, map_location="cpu")
    except Exception as exc:  # torch raises many kinds for a file it cannot read (zip, pickle, EOF, runtime)
        raise UserError(f"resume: {file} is not a checkpoint pearl_py can read: {_unreadable(exc)}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise UserError(f"resume: {file} is not a pearl_py checkpoint of format {FORMAT} (found {found!r})")
    data.pop("format")
    _check_fields(file, "", data, Checkpoint)
    if isinstance(data["progress"], dict):
        data["progress"].setdefault("corrections", [])  # a checkpoint written before corrections were kept
    _check_fields(file, "progress.", data["progress"], Progress)
    for key in ("learner", "replay", "config"):
        if not isinstance(data[key], dict):
            raise UserError(f"resume: {file}: {key} is not a mapping; the file is damaged or not pearl_py's")
    if not isinstance(data["torch_rng"], torch.Tensor) or data["torch_rng"].dtype != torch.uint8:
        raise UserError(f"resume: {file}: torch_rng is not a generator state; the file is damaged or not pearl_py's")
    data["progress"] = Progress(**data["progress"])
    return Checkpoint(**data)


def _checkpoint_globals() -> list[Any]:
    """What a checkpoint holds besides tensors and plain data: numpy arrays and scalars (their reconstructors,
    dtypes, the bytes of an empty array) and kernel kinds (timing keys, pickled as a look-up by name)."""
    multiarray = importlib.import_module("numpy._core.multiarray" if hasattr(np, "_core") else "numpy.core.multiarray")
    dtypes = [c for c in vars(np.dtypes).values() if isinstance(c, type) and issubclass(c, np.dtype)]
    return [np.ndarray, np.dtype, multiarray._reconstruct, multiarray.scalar, bytes, KernelKind, *dtypes]


def _unreadable(exc: Exception) -> str:
    text = str(exc)
    if isinstance(exc, pickle.UnpicklingError) and "GLOBAL" in text:  # the data-only unpickler met a callable
        return "it holds Python objects other than a checkpoint's tensors and arrays (not loaded: they could run code)"
    if isinstance(exc, pickle.UnpicklingError) and "WeightsUnpickler error:" in text:  # its useful line is inside
        text = text.split("WeightsUnpickler error:", 1)[1]
    first = (text.strip().splitlines() or [""])[0][:200]
    return f"torch.load failed ({type(exc).__name__}{': ' + first if first else ''}); it is damaged, truncated or " \
           "not written by pearl_py"


def _check_fields(file: Path, prefix: str, data: Any, cls: type) -> None:
    """``data`` is a mapping with exactly the fields of dataclass ``cls``."""
    if not isinstance(data, dict):
        raise UserError(f"resume: {file}: {prefix.rstrip('.') or 'the checkpoint'} is not a mapping; the file is "
                        "damaged or not pearl_py's")
    names = {f.name for f in fields(cls)}
    missing, unknown = sorted(names - set(data)), sorted(set(data) - names)
    if missing or unknown:
        what = f"lacks {prefix}{missing[0]}" if missing else f"has an unknown field {prefix}{unknown[0]}"
        raise UserError(f"resume: {file} {what}: it was written by another version of pearl_py or is not a checkpoint")
