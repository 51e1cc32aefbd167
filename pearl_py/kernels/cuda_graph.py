"""GPU learner update captured in a CUDA graph: one launch per gradient step.

A small-MLP update on a GPU is bound by kernel launches (hundreds per step), which is
why SB3/CleanRL users see "GPU slower than CPU". Capturing the whole step
(:func:`~pearl_py.kernels.functional_step.make_step`: forward, backward, clip, Adam)
in a ``torch.cuda.CUDAGraph`` replays all of it with one launch. Shapes are static:
the batch is copied into fixed input buffers before each replay.

Capture follows the PyTorch recipe: a few warm-up steps on a side stream, then
``torch.cuda.graph``. Warm-up steps really update the tensors, so the learner's
state is saved before and restored after them: the first replay is the first step.

Example::

    >>> update = make_cuda_graph(Learner(algo, device="cuda"))
    >>> out = update(TensorBatch.from_numpy(sample, torch.device("cuda")))
"""
from __future__ import annotations

import torch

from pearl_py.algorithms.learner import Learner, TensorBatch, UpdateResult
from pearl_py.kernels.functional_step import StepFn, batch_tensors, make_step
from pearl_py.kernels.workspace import Workspace

WARMUP_STEPS = 3
"""Steps run on a side stream before capture (lazy allocations, library handles, autotuning)."""


def cuda_available() -> tuple[bool, str]:
    if not torch.cuda.is_available():
        return False, "CUDA is not available here (torch.cuda.is_available() is False)"
    return True, ""


class CudaGraphUpdate:
    """``Learner.update`` semantics; the gradient step is captured on the first call and replayed after."""

    def __init__(self, learner: Learner) -> None:
        if learner.device.type != "cuda":
            raise ValueError(f"a CUDA-graph update needs a learner on a CUDA device, not {learner.device}")
        self.learner = learner
        self.workspace = Workspace.of(learner)
        self.step: StepFn = make_step(learner, self.workspace)
        self.loss_names = tuple(loss.name for loss in learner.losses)
        self.graph: torch.cuda.CUDAGraph | None = None
        self.inputs: tuple[torch.Tensor, ...] = ()
        self.outputs: tuple[tuple[torch.Tensor, ...], torch.Tensor | None] = ((), None)

    def _state(self) -> list[torch.Tensor]:
        return [t for g in self.workspace.groups for t in (*g.params, *g.exp_avg, *g.exp_avg_sq, *g.steps)]

    def _capture(self, fields: tuple[torch.Tensor, ...]) -> None:
        self.inputs = tuple(f.clone() for f in fields)
        saved = [t.detach().clone() for t in self._state()]
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(WARMUP_STEPS):
                self.step(*self.inputs)
        torch.cuda.current_stream().wait_stream(side)
        with torch.no_grad():
            torch._foreach_copy_(self._state(), saved)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.outputs = self.step(*self.inputs)

    def __call__(self, batch: TensorBatch) -> UpdateResult:
        fields = batch_tensors(batch)
        if self.graph is None:
            self._capture(fields)
        elif any(f.shape != s.shape for f, s in zip(fields, self.inputs)):
            raise ValueError("a CUDA-graph update has static shapes: the batch shapes changed since capture")
        else:
            for static, f in zip(self.inputs, fields):
                static.copy_(f, non_blocking=True)
        self.graph.replay()
        losses, td_abs = self.outputs
        learner = self.learner
        learner.gradient_steps += 1
        learner.algorithm.after_gradient_step(learner.nets, learner.gradient_steps)
        return UpdateResult({n: v.clone() for n, v in zip(self.loss_names, losses)},
                            None if td_abs is None else td_abs.clone())


def make_cuda_graph(learner: Learner) -> CudaGraphUpdate:
    """The learner update of ``learner`` (on a CUDA device) as a replayed CUDA graph."""
    return CudaGraphUpdate(learner)
