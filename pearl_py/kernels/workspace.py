"""Workspace of a fast learner update: each loss's trained parameters and preallocated Adam state.

A fast step (compiled, or captured in a CUDA graph) updates the learner's own tensors
in place: the network ``Parameter`` objects and the ``exp_avg``/``exp_avg_sq``/``step``
tensors of its ``torch.optim.Adam`` state, which this module allocates up front when
the optimizer has not stepped yet. Nothing is copied, so the reference
``Learner.update``, target updates, ``param_sync`` and ``Learner.state_dict`` keep
seeing the same memory, and a fast step and the reference step can alternate.

Example::

    >>> learner = Learner(pearl.DQN("CartPole-v1"))
    >>> (group,) = Workspace.of(learner).groups
    >>> group.loss.name, group.names[0], len(group.params)
    ('q', 'nets.online.q.0.weight', 6)
    >>> group.exp_avg[0] is learner.optimizers["q"].state[group.params[0]]["exp_avg"]
    True
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from pearl_py.algorithms.off_policy.base import Loss
from pearl_py.algorithms.off_policy.learner import Learner
from pearl_py.algorithms.optimizers import Adam


@dataclass(frozen=True)
class AdamHyper:
    """The settings of a plain Adam (no weight decay, amsgrad or maximize) with a float step size."""

    lr: float
    beta1: float
    beta2: float
    eps: float

    @classmethod
    def of(cls, optimizer: torch.optim.Optimizer) -> AdamHyper:
        if type(optimizer) is not Adam or len(optimizer.param_groups) != 1:
            raise ValueError(f"fast learner updates need one plain Adam group (pearl_py.algorithms.optimizers), got {optimizer!r}")
        group = optimizer.param_groups[0]
        if group["weight_decay"] or group["amsgrad"] or group["maximize"]:
            raise ValueError("fast learner updates support Adam without weight_decay, amsgrad or maximize")
        if isinstance(group["lr"], torch.Tensor):
            raise ValueError("fast learner updates need a float learning rate")
        beta1, beta2 = group["betas"]
        return cls(float(group["lr"]), float(beta1), float(beta2), float(group["eps"]))


@dataclass(frozen=True)
class LossGroup:
    """A loss, the parameters its Adam trains (``names`` as ``functional_call`` keys) and their state."""

    loss: Loss
    names: tuple[str, ...]
    params: tuple[torch.nn.Parameter, ...]
    exp_avg: tuple[torch.Tensor, ...]
    exp_avg_sq: tuple[torch.Tensor, ...]
    steps: tuple[torch.Tensor, ...]
    adam: AdamHyper
    lr: torch.Tensor
    """The step size as a float64 scalar on the parameters' device, read by the step (a compiled or captured step
    sees :meth:`Workspace.follow`'s writes); starts at ``adam.lr``."""


@dataclass(frozen=True)
class Workspace:
    """The loss groups of a learner, in the order its losses are minimised.

    Build it after ``Learner.load_state_dict``, which replaces the Adam state tensors.
    """

    groups: tuple[LossGroup, ...]
    rate: list[float]
    """The step size the groups' ``lr`` tensors hold (one element, kept on the host)."""

    @classmethod
    def of(cls, learner: Learner, prefix: str = "nets.") -> Workspace:
        """The groups of ``learner``; ``prefix`` is where the ``Networks`` sit in the module called."""
        groups = tuple(_group(learner, loss, prefix) for loss in learner.losses)
        return cls(groups, [groups[0].adam.lr if groups else 0.0])

    def follow(self, learning_rate: float) -> None:
        """Every group's step size set to the learner's ``learning_rate`` (in place, without reading the device;
        nothing when unchanged)."""
        if learning_rate != self.rate[0]:
            for group in self.groups:
                group.lr.fill_(learning_rate)
            self.rate[0] = learning_rate


def _group(learner: Learner, loss: Loss, prefix: str) -> LossGroup:
    optimizer = learner.optimizers[loss.name]
    adam = AdamHyper.of(optimizer)
    named = list(learner.nets.online[loss.trains].named_parameters())
    params = list(optimizer.param_groups[0]["params"])
    if [p for _, p in named] != params:
        raise ValueError(f"loss {loss.name!r}: its optimizer does not hold exactly the parameters of "
                         f"network {loss.trains!r}")
    states = [optimizer.state[p] for p in params]
    for p, state in zip(params, states):
        if state and state["step"].device != p.device:
            state["step"] = state["step"].to(p.device)   # a captured step counts on the device
        if not state:
            # What Adam's first step would allocate (a CPU step counter unless on an accelerator).
            state["step"] = torch.zeros((), dtype=torch.float32, device=p.device)
            state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
    if len({float(s["step"]) for s in states}) > 1:
        raise ValueError(f"loss {loss.name!r}: its parameters have different Adam step counts")
    return LossGroup(loss, tuple(f"{prefix}online.{loss.trains}.{n}" for n, _ in named), tuple(params),
                     tuple(s["exp_avg"] for s in states), tuple(s["exp_avg_sq"] for s in states),
                     tuple(s["step"] for s in states), adam,
                     torch.tensor(adam.lr, dtype=torch.float64, device=params[0].device))
