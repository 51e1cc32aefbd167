"""The ``learner_update`` implementation a plan's variant names.

``reference`` is :meth:`Learner.update` (eager torch), the serial executor's.

Example::

    >>> update = learner_update_fn(learner, "reference")
    >>> out = update(TensorBatch.from_numpy(replay.sample(64), learner.device))
"""
from __future__ import annotations

from collections.abc import Callable

from pearl_py.algorithms.learner import Learner, TensorBatch, UpdateResult
from pearl_py.errors import UserError


def learner_update_fn(learner: Learner, variant: str) -> Callable[[TensorBatch], UpdateResult]:
    """A callable taking one gradient step on ``learner`` with the named implementation."""
    if variant == "reference":
        return learner.update
    raise UserError(f"plan: learner_update variant {variant!r} is not available in this build "
                    "(available: reference)")
