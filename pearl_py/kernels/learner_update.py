"""Learner-update kernels: the reference step and the fast ones, all ``TensorBatch -> UpdateResult``.

Every builder takes a :class:`~pearl_py.algorithms.learner.Learner` and returns a
callable with the semantics of ``Learner.update``: every loss minimised in order, the
learner's networks and Adam state updated in place, ``learner.gradient_steps``
counted, the algorithm's target update run, the losses and ``|TD error|`` returned.

Example::

    >>> update = make_compiled(learner)
    >>> out = update(batch)          # first call compiles (seconds), later calls are fast
    >>> learner.gradient_steps
    1
"""
from __future__ import annotations

import time
from collections.abc import Callable

import torch

from pearl_py.algorithms.learner import Learner, TensorBatch, UpdateResult
from pearl_py.kernels.functional_step import StepFn, batch_tensors, make_step
from pearl_py.kernels.workspace import Workspace

LearnerUpdate = Callable[[TensorBatch], UpdateResult]


def make_reference(learner: Learner) -> LearnerUpdate:
    """The algorithm's own eager step: ``Learner.update`` itself."""
    return learner.update


class FusedUpdate:
    """A learner update running a whole-step function ``step`` over the learner's workspace.

    ``first_call_seconds`` is how long the first call took (the compile time, for a compiled step).
    """

    def __init__(self, learner: Learner, step: StepFn) -> None:
        self.learner = learner
        self.loss_names = tuple(loss.name for loss in learner.losses)
        self.step = step
        self.first_call_seconds: float | None = None

    def __call__(self, batch: TensorBatch) -> UpdateResult:
        if self.first_call_seconds is None:
            start = time.perf_counter()
            losses, td_abs = self.step(*batch_tensors(batch))
            self.first_call_seconds = time.perf_counter() - start
        else:
            losses, td_abs = self.step(*batch_tensors(batch))
        learner = self.learner
        learner.gradient_steps += 1
        learner.algorithm.after_gradient_step(learner.nets, learner.gradient_steps)
        return UpdateResult(dict(zip(self.loss_names, losses)), td_abs)


def make_functional(learner: Learner) -> FusedUpdate:
    """The whole-step function run eagerly: exact, no compile time, little faster (a building block)."""
    return FusedUpdate(learner, make_step(learner, Workspace.of(learner)))


COMPILE_MODE = "max-autotune-no-cudagraphs"
"""Inductor mode of the compiled variant (chosen by measurement, see docs/kernels.md)."""


def make_compiled(learner: Learner, mode: str | None = COMPILE_MODE) -> FusedUpdate:
    """The whole step (forward, backward, clip, Adam) as one ``torch.compile`` graph.

    Shapes are static: a new batch size compiles again. Inductor caches compiled
    graphs on disk (``TORCHINDUCTOR_CACHE_DIR``), so a later process pays only tracing.
    """
    step = make_step(learner, Workspace.of(learner))
    return FusedUpdate(learner, torch.compile(step, fullgraph=True, dynamic=False, mode=mode))
