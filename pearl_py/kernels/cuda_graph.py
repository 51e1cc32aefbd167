"""GPU learner update captured in a CUDA graph: one launch per gradient step.

A small-MLP update on a GPU is bound by kernel launches (hundreds per step), which is
why SB3/CleanRL users see "GPU slower than CPU". Capturing the whole step
(:func:`~pearl_py.kernels.functional_step.make_step`: forward, backward, clip, Adam)
in a ``torch.cuda.CUDAGraph`` replays all of it with one launch. Shapes are static:
the batch is copied into fixed input buffers before each replay. Delayed losses
(``Loss.every``) get one graph per set of active losses.

Capture follows the PyTorch recipe: a few warm-up steps on a side stream, then
``torch.cuda.graph``. Warm-up steps really update the tensors, so the learner's
state is saved before and restored after them: the first replay is the first step.

Example::

    >>> update = make_cuda_graph(Learner(algo, device="cuda"))
    >>> out = update(TensorBatch.from_numpy(sample, torch.device("cuda")))
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from pearl_py.algorithms.off_policy.learner import Learner, TensorBatch, UpdateResult
from pearl_py.kernels.functional_step import StepFn, active_losses, batch_tensors, make_step
from pearl_py.kernels.workspace import Workspace

WARMUP_STEPS = 3
"""Steps run on a side stream before capture (lazy allocations, library handles, autotuning)."""


def cuda_available() -> tuple[bool, str]:
    if not torch.cuda.is_available():
        return False, "CUDA is not available here (torch.cuda.is_available() is False)"
    return True, ""


@dataclass
class _Captured:
    """One captured step: its graph, static input buffers and static outputs."""

    graph: torch.cuda.CUDAGraph
    inputs: tuple[torch.Tensor, ...]
    losses: tuple[torch.Tensor, ...]
    td_abs: torch.Tensor | None


class CudaGraphUpdate:
    """``Learner.update`` semantics; each step is captured on its first call and replayed after."""

    def __init__(self, learner: Learner) -> None:
        if learner.device.type != "cuda":
            raise ValueError(f"a CUDA-graph update needs a learner on a CUDA device, not {learner.device}")
        self.learner = learner
        self.workspace = Workspace.of(learner)
        self.captured: dict[tuple[int, ...], _Captured] = {}

    def sets_up_next(self) -> bool:
        """Whether the next call captures its step first (the one-off setup, not an update's time)."""
        return active_losses(self.learner) not in self.captured

    def _state(self) -> list[torch.Tensor]:
        return [t for g in self.workspace.groups for t in (*g.params, *g.exp_avg, *g.exp_avg_sq, *g.steps)]

    def _capture(self, step: StepFn, fields: tuple[torch.Tensor, ...]) -> _Captured:
        inputs = tuple(f.clone() for f in fields)
        saved = [t.detach().clone() for t in self._state()]
        device = self.learner.device   # the learner's, whatever device is current (capture and streams)
        with torch.cuda.device(device):
            side = torch.cuda.Stream(device)
            side.wait_stream(torch.cuda.current_stream(device))
            with torch.cuda.stream(side):
                for _ in range(WARMUP_STEPS):
                    step(*inputs)
            torch.cuda.current_stream(device).wait_stream(side)
            with torch.no_grad():
                torch._foreach_copy_(self._state(), saved)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                losses, td_abs = step(*inputs)
        return _Captured(graph, inputs, losses, td_abs)

    def __call__(self, batch: TensorBatch) -> UpdateResult:
        learner = self.learner
        self.workspace.follow(learner.learning_rate)     # in place: the captured graphs read it
        step_number = learner.gradient_steps + 1
        active = active_losses(learner)
        fields = batch_tensors(batch)
        captured = self.captured.get(active)
        if captured is None:
            captured = self.captured[active] = self._capture(make_step(learner, self.workspace, active), fields)
        elif any(f.shape != s.shape for f, s in zip(fields, captured.inputs)):
            raise ValueError("a CUDA-graph update has static shapes: the batch shapes changed since capture")
        else:
            for static, f in zip(captured.inputs, fields):
                static.copy_(f, non_blocking=True)
        captured.graph.replay()
        learner.gradient_steps = step_number
        learner.algorithm.after_gradient_step(learner.nets, step_number)
        names = (learner.losses[i].name for i in active)
        return UpdateResult({n: v.clone() for n, v in zip(names, captured.losses)},
                            None if captured.td_abs is None else captured.td_abs.clone())


def make_cuda_graph(learner: Learner) -> CudaGraphUpdate:
    """The learner update of ``learner`` (on a CUDA device) as replayed CUDA graphs."""
    return CudaGraphUpdate(learner)
