"""The learner's gradient step as one pure-tensor function over the learner's workspace.

``Learner.update`` runs each loss through autograd, then ``clip_grad_norm_`` and
``Adam.step`` parameter by parameter: dozens of small dispatched operations.
:func:`make_step` rewrites the same step, for any algorithm's list of losses, as a
function of tensors only: ``torch.func.grad_and_value`` of each loss with respect to
its network's parameters, the gradient-norm clip and Adam (the formulas of
``torch.optim.Adam``'s single-tensor path, bias corrections in float64) applied in
place on the learner's parameters and Adam state. Such a function can be traced whole by ``torch.compile``
(one graph, fused elementwise loops) or captured in a CUDA graph.

Example::

    >>> ws = Workspace.of(learner)
    >>> step = make_step(learner, ws)
    >>> losses, td_abs = step(*batch_tensors(batch))   # one gradient step on every loss, in place
"""
from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from pearl_py.algorithms.networks import Networks
from pearl_py.algorithms.off_policy.base import LossFn
from pearl_py.algorithms.off_policy.learner import Learner, TensorBatch
from pearl_py.kernels.workspace import LossGroup, Workspace

StepFn = Callable[..., tuple[tuple[torch.Tensor, ...], "torch.Tensor | None"]]
"""``step(obs, actions, rewards, next_obs, dones, weights) -> (losses in loss order, |td| or None)``."""

CLIP_EPS = 1e-6
"""The epsilon ``torch.nn.utils.clip_grad_norm_`` adds to the total norm."""


def batch_tensors(batch: TensorBatch) -> tuple[torch.Tensor, ...]:
    """The fields of a batch in the order :data:`StepFn` takes them."""
    return batch.obs, batch.actions, batch.rewards, batch.next_obs, batch.dones, batch.weights


class _LossCall(nn.Module):
    """``loss.fn(nets, batch)`` as a module call, so ``torch.func.functional_call`` can swap parameters."""

    def __init__(self, nets: Networks, fn: LossFn) -> None:
        super().__init__()
        self.nets = nets
        self.fn = fn

    def forward(self, batch: TensorBatch) -> tuple[torch.Tensor, torch.Tensor | None]:
        return self.fn(self.nets, batch)


def active_losses(learner: Learner) -> tuple[int, ...]:
    """Indices of the losses the learner's next gradient step updates (a delayed loss: every ``Loss.every`` steps)."""
    step_number = learner.gradient_steps + 1
    return tuple(i for i, loss in enumerate(learner.losses) if step_number % loss.every == 0)


def make_step(learner: Learner, workspace: Workspace, active: tuple[int, ...] | None = None) -> StepFn:
    """One gradient step on the losses ``active`` (indices, all by default), in order, in place.

    Delayed losses (``Loss.every``) make several step functions, one per set of active
    losses. Target updates are not part of a step (they depend on the Python step
    counter): callers run ``algorithm.after_gradient_step`` afterwards, as ``Learner.update`` does.
    """
    max_norm = learner.algorithm.config.max_grad_norm
    groups = [workspace.groups[i] for i in (active if active is not None else range(len(workspace.groups)))]
    calls = [_LossCall(learner.nets, group.loss.fn) for group in groups]

    def step(*fields: torch.Tensor) -> tuple[tuple[torch.Tensor, ...], torch.Tensor | None]:
        batch = TensorBatch(*fields)
        losses: list[torch.Tensor] = []
        td_abs = None
        for group, call in zip(groups, calls):
            def loss_of(params: tuple[torch.Tensor, ...], group: LossGroup = group, call: _LossCall = call):
                value, td = torch.func.functional_call(call, dict(zip(group.names, params)), (batch,))
                return value, () if td is None else (td,)   # aux must be tensors

            grads, (value, td) = torch.func.grad_and_value(loss_of, has_aux=True)(group.params)
            with torch.no_grad():
                if max_norm is not None:
                    grads = _clip(list(grads), max_norm)
                _adam(group, list(grads))
            losses.append(value.detach())
            if td:
                td_abs = td[0].detach().abs()
        return tuple(losses), td_abs

    return step


def _clip(grads: list[torch.Tensor], max_norm: float) -> list[torch.Tensor]:
    """``clip_grad_norm_``: scale every gradient by ``min(1, max_norm / (total L2 norm + 1e-6))``."""
    squares = torch.stack([g.square().sum() for g in grads])
    # Two equal lanes reduced (see _adam): the coefficient is computed once, not per loop iteration.
    coef = torch.clamp(max_norm / (torch.sqrt(squares.sum()).expand(2) + CLIP_EPS), max=1.0).amin()
    return torch._foreach_mul(grads, coef)


def _adam(group: LossGroup, grads: list[torch.Tensor]) -> None:
    """``torch.optim.Adam``'s single-tensor update, in place, bias corrections in float64 like Python floats."""
    hp = group.adam
    params, exp_avg, exp_avg_sq = list(group.params), list(group.exp_avg), list(group.exp_avg_sq)
    torch._foreach_add_(list(group.steps), 1.0)
    # Over the (equal) per-tensor counters, reduced: a reduction is computed once, where a
    # scalar expression would be recomputed inside every vectorized Adam loop iteration.
    steps = torch.stack(group.steps).to(torch.float64)
    dtype = params[0].dtype
    step_size = (group.lr / (1 - torch.pow(hp.beta1, steps))).amax().to(dtype)
    bias_correction2_sqrt = torch.sqrt(1 - torch.pow(hp.beta2, steps)).amax().to(dtype)
    torch._foreach_lerp_(exp_avg, grads, 1 - hp.beta1)
    torch._foreach_mul_(exp_avg_sq, hp.beta2)
    torch._foreach_addcmul_(exp_avg_sq, grads, grads, value=1 - hp.beta2)
    denom = torch._foreach_add(torch._foreach_div(torch._foreach_sqrt(exp_avg_sq), bias_correction2_sqrt), hp.eps)
    updates = torch._foreach_div(exp_avg, denom)
    torch._foreach_mul_(updates, step_size)
    torch._foreach_sub_(params, updates)
