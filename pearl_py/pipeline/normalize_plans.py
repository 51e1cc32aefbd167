"""Which plans a run with ``normalize`` (SB3's VecNormalize) can take: one rule that the optimizer (``plan="auto"``,
``--tune``) and the executors share, so ``--auto`` never picks a plan that the run then refuses.

Today ``normalize`` runs on the serial executor (serialized plans) and the local parallel runtime of every family,
which combine the actors' statistics (:mod:`pearl_py.runtime.parallel.shared_statistics`), and on the Ray backend
for the families in :data:`RAY_FAMILIES`. The off-policy Ray executor refuses it: its actors would each keep their
own statistics.

Example::

    >>> plan_modes(pearl.DQN("CartPole-v1", normalize=True), one_process=True)   # auto: both modes
    (False, True)
    >>> normalize_refusal(pearl.DQN("CartPole-v1", normalize=True), backend="ray")
    "normalize does not run on the Ray backend for off_policy algorithms yet: its actors would ..."
"""
from __future__ import annotations

from pearl_py.algorithms.core import BaseAlgorithm
from pearl_py.errors import UserError

PARALLEL_MODE, SERIALIZED_MODE = False, True
"""The protocol modes (``algorithm.protocol(serialized=...)``): actor processes, or every stage in this process."""
RAY_FAMILIES = ("on_policy",)
"""The families whose Ray executor combines the actors' ``normalize`` statistics (every local runtime does)."""


def normalize_refusal(algorithm: BaseAlgorithm, *, backend: str = "local") -> str | None:
    """Why ``algorithm``'s run cannot take a plan on ``backend`` (``None``: it can)."""
    family = getattr(algorithm, "family", None)
    if algorithm.obs_transform is None or backend == "local" or family in RAY_FAMILIES:
        return None
    return (f"normalize does not run on the Ray backend for {family} algorithms yet: its actors would each keep "
            "their own statistics (combining them on Ray is implemented for PPO and A2C only); run locally "
            "(backend 'local'), or set normalize: false")


def check_normalize(algorithm: BaseAlgorithm, *, backend: str = "local") -> None:
    """:func:`normalize_refusal` as a :class:`~pearl_py.errors.UserError` (exit code 2)."""
    reason = normalize_refusal(algorithm, backend=backend)
    if reason is not None:
        raise UserError(reason)


def plan_modes(algorithm: BaseAlgorithm, one_process: bool) -> tuple[bool, ...]:
    """The protocol modes the optimizer may choose from for ``algorithm``, the parallel one first (it wins ties):
    both with ``one_process`` (the local runtime), the parallel one alone otherwise (Ray), where a run the backend
    refuses (normalize on Ray, off-policy) is the refusal, a UserError."""
    if one_process:
        return PARALLEL_MODE, SERIALIZED_MODE
    check_normalize(algorithm, backend="ray")
    return (PARALLEL_MODE,)
