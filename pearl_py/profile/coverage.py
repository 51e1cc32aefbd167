"""What a calibration's grids cover: the networks (plain MLPs, each CNN extractor) and the vector sizes of
``env_step``. A run's first profile times only its own (:class:`~pearl_py.pipeline.planning.CalibrationNeeds`), and
records what each fitted model covers in ``calibration.meta[COVERS_KEY]``, so that a later run needing more (another
extractor, more envs) tops that model up. Imported by a run that plans: no torch here.

Example::

    >>> env_counts(1), env_counts(8), env_counts(None)
    ((1, 2, 4), (1, 2, 4, 8), (1, 2, 4, 8, 16))
    >>> cal.meta[COVERS_KEY]["env_step/reference/BreakoutNoFrameskip-v4"]
    {'n_envs': 4}
    >>> covered(cal, "env_step/reference/BreakoutNoFrameskip-v4", n_envs=16)
    False
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

NETWORKS = ("mlp", "small_cnn", "nature_cnn")
"""The networks the calibration grids time: plain MLPs, and DQN with each CNN extractor (its ``cnn`` model)."""
MLP = NETWORKS[0]
ENV_COUNTS = (1, 2, 4, 8, 16)
"""Vector sizes (``n_envs``) ``env_step`` is timed at."""
LEAST_POINTS = 3
"""The fewest points a model is fitted on (:func:`~pearl_py.estimate.fit.select_model`)."""
COVERS_KEY = "covers"
"""``meta[COVERS_KEY]``: ``{model key: {"extractors": [...]} or {"n_envs": largest timed}}`` of the CNN and env models
a run's profile fitted; a model without an entry covers every grid point (``pearl profile``'s, an older cache)."""


def env_counts(n_envs: int | None) -> tuple[int, ...]:
    """The vector sizes ``env_step`` is timed at for a run of up to ``n_envs`` envs (a plan's actors step shares of
    them: :func:`~pearl_py.protocol.share.env_share`): every size up to the first that reaches ``n_envs``, and at
    least :data:`LEAST_POINTS`; None: every size."""
    if n_envs is None:
        return ENV_COUNTS
    reach = next((i for i, count in enumerate(ENV_COUNTS) if count >= n_envs), len(ENV_COUNTS) - 1)
    return ENV_COUNTS[:max(reach + 1, LEAST_POINTS)]


def cnn_extractors(networks: Iterable[str]) -> tuple[str, ...]:
    """The CNN extractors of ``networks`` (the ``cnn`` model's), in :data:`NETWORKS` order."""
    chosen = set(networks)
    return tuple(name for name in NETWORKS[1:] if name in chosen)


def coverage(group: str | None, points: Iterable[Any]) -> dict | None:
    """What a model of ``group`` fitted on the grid ``points`` (``BenchPoint``) covers: the CNN extractors of the
    ``cnn`` model, the largest vector size of an env's; None for the kind's other model (its grid is fixed)."""
    if group == "cnn":
        return {"extractors": list(cnn_extractors(p.extractor for p in points if p.frames))}
    if group is not None:
        return {"n_envs": max(p.batch for p in points if p.env_id == group)}
    return None


def covered(calibration: Any, key: str, extractors: Iterable[str] = (), n_envs: int | None = None) -> bool:
    """Whether the model ``key`` of ``calibration`` covers the CNN ``extractors`` and a run of ``n_envs`` envs."""
    record = calibration.meta.get(COVERS_KEY, {}).get(key)
    if record is None:
        return True
    if "n_envs" in record and env_counts(n_envs)[-1] > record["n_envs"]:
        return False
    return set(extractors) <= set(record.get("extractors", extractors))
