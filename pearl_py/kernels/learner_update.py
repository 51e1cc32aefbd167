"""Learner-update kernels: the reference step and the fast ones, all ``TensorBatch -> UpdateResult``.

Every builder takes a :class:`~pearl_py.algorithms.off_policy.learner.Learner` and returns a
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

from pearl_py.algorithms.off_policy.learner import Learner, TensorBatch, UpdateResult
from pearl_py.kernels.functional_step import StepFn, active_losses, batch_tensors, make_step
from pearl_py.kernels.workspace import Workspace

LearnerUpdate = Callable[[TensorBatch], UpdateResult]


def make_reference(learner: Learner) -> LearnerUpdate:
    """The algorithm's own eager step: ``Learner.update`` itself."""
    return learner.update


class FusedUpdate:
    """A learner update running whole-step functions over the learner's workspace.

    ``wrap`` turns a step function into what runs (``torch.compile``, or nothing); one
    is made per set of active losses (delayed losses, ``Loss.every``, make several).
    ``first_call_seconds`` holds the first call's time per set (the compile time); ``compiles``: whether ``wrap``
    compiles, so that a set's first call is its setup (:meth:`sets_up_next`).
    """

    def __init__(self, learner: Learner, wrap: Callable[[StepFn], StepFn], compiles: bool = True) -> None:
        self.learner = learner
        self.workspace = Workspace.of(learner)
        self.wrap = wrap
        self.compiles = compiles
        self.steps: dict[tuple[int, ...], StepFn] = {}
        self.first_call_seconds: dict[tuple[str, ...], float] = {}

    def __call__(self, batch: TensorBatch) -> UpdateResult:
        learner = self.learner
        self.workspace.follow(learner.learning_rate)
        step_number = learner.gradient_steps + 1
        active = active_losses(learner)
        names = tuple(learner.losses[i].name for i in active)
        step = self.steps.get(active)
        if step is None:
            step = self.steps[active] = self.wrap(make_step(learner, self.workspace, active))
            start = time.perf_counter()
            losses, td_abs = step(*batch_tensors(batch))
            self.first_call_seconds[names] = time.perf_counter() - start
        else:
            losses, td_abs = step(*batch_tensors(batch))
        learner.gradient_steps = step_number
        learner.algorithm.after_gradient_step(learner.nets, step_number)
        return UpdateResult(dict(zip(names, losses)), td_abs)

    def sets_up_next(self) -> bool:
        """Whether the next call compiles its step first (the one-off setup, not an update's time)."""
        return self.compiles and active_losses(self.learner) not in self.steps


def make_functional(learner: Learner) -> FusedUpdate:
    """The whole-step function run eagerly: exact, no compile time, no faster (the compiled variant's source)."""
    return FusedUpdate(learner, lambda step: step, compiles=False)


COMPILE_OPTIONS = {"fallback_random": True}
"""Inductor options: random ops draw from torch's generator, as in eager (TD3's target noise matches)."""


def make_compiled(learner: Learner, options: dict | None = None) -> FusedUpdate:
    """The whole step (forward, backward, clip, Adam) as one ``torch.compile`` graph.

    Shapes are static: a new batch size compiles again. Inductor caches compiled
    graphs on disk (``TORCHINDUCTOR_CACHE_DIR``), so a later process pays only tracing.
    ``options`` adds inductor options (``{"max_autotune": True}``: the default was chosen
    by measurement, see docs/kernels.md).
    """
    merged = COMPILE_OPTIONS | (options or {})
    return FusedUpdate(learner, lambda step: torch.compile(step, fullgraph=True, dynamic=False, options=merged))
