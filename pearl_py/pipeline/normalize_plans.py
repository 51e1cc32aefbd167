"""Which plans a run with ``normalize`` (SB3's VecNormalize) can take: one rule that the optimizer (``plan="auto"``,
``--tune``) and the executors share, so ``--auto`` never picks a plan that the run then refuses.

Today ``normalize`` runs on the serial executor (serialized plans) of every family and, for the families in
:data:`PARALLEL_FAMILIES`, on the local parallel runtime and the Ray backend, which combine the actors'
statistics (:mod:`pearl_py.runtime.parallel.shared_statistics`). The off-policy parallel runtime and Ray executor
refuse it: their actors would each keep their own statistics.

Example::

    >>> plan_modes(pearl.DQN("CartPole-v1", normalize=True), one_process=True)   # auto: serialized plans only
    (True,)
    >>> normalize_refusal(pearl.DQN("CartPole-v1", normalize=True), serialized=False, backend="ray")
    "normalize does not run on the Ray backend for off_policy algorithms yet: its actors would ..."
"""
from __future__ import annotations

from pearl_py.algorithms.core import BaseAlgorithm
from pearl_py.errors import UserError

PARALLEL_MODE, SERIALIZED_MODE = False, True
"""The protocol modes (``algorithm.protocol(serialized=...)``): actor processes, or every stage in this process."""
PARALLEL_FAMILIES = ("on_policy",)
"""The families whose local parallel runtime and Ray executor combine the actors' ``normalize`` statistics."""


def normalize_refusal(algorithm: BaseAlgorithm, *, serialized: bool, backend: str = "local") -> str | None:
    """Why ``algorithm``'s run cannot take a plan of this mode on ``backend`` (``None``: it can)."""
    family = getattr(algorithm, "family", None)
    if algorithm.obs_transform is None or family in PARALLEL_FAMILIES or (serialized and backend == "local"):
        return None
    runtime = "the Ray backend" if backend == "ray" else "the parallel runtime"
    return (f"normalize does not run on {runtime} for {family} algorithms yet: its actors would each keep their "
            "own statistics (combining them is implemented for PPO and A2C only); run a serialized plan locally "
            "(plan 'serial', 'local' or 'auto'), or set normalize: false")


def check_normalize(algorithm: BaseAlgorithm, *, serialized: bool, backend: str = "local") -> None:
    """:func:`normalize_refusal` as a :class:`~pearl_py.errors.UserError` (exit code 2)."""
    reason = normalize_refusal(algorithm, serialized=serialized, backend=backend)
    if reason is not None:
        raise UserError(reason)


def plan_modes(algorithm: BaseAlgorithm, one_process: bool) -> tuple[bool, ...]:
    """The protocol modes the optimizer may choose from for ``algorithm``, the parallel one first (it wins ties):
    both with ``one_process`` (the local runtime), the parallel one alone otherwise (Ray); a mode whose plans the
    run would refuse is left out. None left (normalize on Ray): the refusal, a UserError."""
    backend = "local" if one_process else "ray"
    modes = (PARALLEL_MODE, SERIALIZED_MODE) if one_process else (PARALLEL_MODE,)
    taken = tuple(mode for mode in modes if normalize_refusal(algorithm, serialized=mode, backend=backend) is None)
    if not taken:
        check_normalize(algorithm, serialized=modes[0], backend=backend)
    return taken
