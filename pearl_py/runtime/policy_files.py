"""The files a run's trained policy is written as: ``policy.pt`` (plain tensors) and ``policy.json`` (the
manifest), or the best evaluated pair; :mod:`pearl_py.saved_policy` reads them back (the format is described
there). Written here, in the runtime, because evaluations write the best pair as a run goes.

Example::

    >>> save_policy("runs/dqn", algo, learner.nets, seed=0, env_steps=50_000, gradient_steps=24_576)
    PosixPath('runs/dqn/policy.pt')
"""
from __future__ import annotations

import dataclasses
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from pearl_py.algorithms import BaseAlgorithm, Networks
from pearl_py.config.plain import plain_values
from pearl_py.errors import UserError
from pearl_py.fileio import atomic_write_bytes, atomic_write_json
from pearl_py.version import __version__

POLICY_FILE = "policy.pt"
MANIFEST_FILE = "policy.json"
BEST_POLICY_FILE = "best_policy.pt"
BEST_MANIFEST_FILE = "best_policy.json"
FORMAT = 1
"""Format of both files; a reader refuses any other."""


@dataclass(frozen=True)
class PolicyManifest:
    """What ``policy.json`` says of the networks in ``policy.pt``."""

    format: int
    algorithm: str
    family: str
    """``off_policy`` or ``on_policy``: which networks the algorithm builds (with target copies or not)."""
    env: str
    config: dict[str, Any]
    """Every hyperparameter of the algorithm's config, as a config file holds it."""
    pearl_py_version: str
    seed: int
    env_steps: int
    gradient_steps: int
    obs_normalization: dict[str, Any] | None = None
    """The ``normalize`` transform's state (:meth:`~pearl_py.envs.normalize.ObsRewardNormalizer.state`), applied
    frozen before the networks; null without normalization."""
    best_evaluation: dict[str, float] | None = None
    """In ``best_policy.json``: the periodic evaluation these networks scored best in (``step``,
    ``return_mean``, ``return_std``); null in ``policy.json``."""

    @classmethod
    def from_dict(cls, data: Any, file: Path) -> PolicyManifest:
        if not isinstance(data, dict):
            raise UserError(f"{file}: not a pearl_py policy manifest (expected a JSON object)")
        if data.get("format") != FORMAT:
            raise UserError(f"{file}: not a pearl_py policy manifest of format {FORMAT} "
                            f"(format {data.get('format')!r})")
        names = [f.name for f in dataclasses.fields(cls)]
        optional = {f.name for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}
        missing = [n for n in names if n not in data and n not in optional]
        if missing:
            raise UserError(f"{file}: policy manifest lacks {', '.join(missing)}")
        return cls(**{n: data[n] for n in names if n in data})


def save_policy(directory: str | Path, algorithm: BaseAlgorithm, nets: Networks, *, seed: int, env_steps: int,
                gradient_steps: int, best_evaluation: dict[str, float] | None = None) -> Path:
    """Write ``policy.pt`` and ``policy.json`` into ``directory`` (each atomically); returns policy.pt's path.

    With ``best_evaluation`` (the periodic evaluation these networks scored best in): ``best_policy.pt``
    and ``best_policy.json`` instead."""
    weights_file, manifest_file = policy_file_names(best_evaluation is not None)
    directory = Path(directory)
    state = {name: tensor.detach().cpu().clone() for name, tensor in nets.state_dict().items()}
    buffer = io.BytesIO()
    torch.save({"format": FORMAT, "nets": state}, buffer)
    manifest = PolicyManifest(format=FORMAT, algorithm=algorithm.name, family=algorithm.family, env=algorithm.env_id,
                              config=plain_values(algorithm.config), pearl_py_version=__version__, seed=seed,
                              env_steps=env_steps, gradient_steps=gradient_steps, best_evaluation=best_evaluation,
                              obs_normalization=algorithm.obs_transform.state() if algorithm.obs_transform else None)
    # the weights first: a manifest on disk always has its weights beside it
    atomic_write_bytes(directory / weights_file, buffer.getvalue())
    atomic_write_json(directory / manifest_file, dataclasses.asdict(manifest))
    return directory / weights_file


def policy_file_names(best: bool) -> tuple[str, str]:
    """File names of the final policy's pair, or of the best evaluated one's."""
    return (BEST_POLICY_FILE, BEST_MANIFEST_FILE) if best else (POLICY_FILE, MANIFEST_FILE)
