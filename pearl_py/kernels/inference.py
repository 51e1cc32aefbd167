"""Inference kernels: a batch of observations (numpy, one row per env) to actions (numpy).

``make_reference`` is what the serial executor does: ``algorithm.act`` under
``torch.no_grad``. ``make_fused`` is the CPU path for actors: ``torch.inference_mode``
(no autograd or version-counter bookkeeping), zero-copy ``torch.from_numpy``, and
every acting network that is a plain MLP (an ``nn.Sequential`` of ``Linear`` and
ReLU/Tanh layers) run as one module call of ``addmm`` + in-place activations into
preallocated per-batch-size buffers. The algorithm's own ``act`` still decides the
actions, so exploration draws the same random numbers as the reference.

Example::

    >>> infer = make_fused(algo, learner.nets)
    >>> infer(obs, explore=True, progress=0.3).shape    # obs: (n_envs, obs_dim) float32
    (8,)
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from pearl_py.algorithms.base import Algorithm
from pearl_py.algorithms.networks import Networks

Inference = Callable[..., np.ndarray]
"""``infer(obs: np.ndarray, *, explore: bool, progress: float) -> np.ndarray`` of actions."""

ACTIVATIONS: dict[type[nn.Module], Callable[[torch.Tensor], torch.Tensor]] = {
    nn.ReLU: torch.relu_, nn.Tanh: torch.tanh_}
"""In-place activations a fused MLP supports, by module type."""


def make_reference(algorithm: Algorithm, nets: Networks) -> Inference:
    """``algorithm.act`` on the networks as they are, under ``torch.no_grad``."""
    device = next(nets.parameters()).device

    def infer(obs: np.ndarray, *, explore: bool, progress: float) -> np.ndarray:
        with torch.no_grad():
            return algorithm.act(nets, torch.as_tensor(obs, device=device), explore=explore,
                                 progress=progress).cpu().numpy()

    return infer


class FusedMLP(nn.Module):
    """A ``Linear``/activation ``nn.Sequential`` evaluated with ``addmm(out=...)`` into reused buffers.

    Shares the parameters of the wrapped layers (updates to them are seen at once).
    The output is a fresh tensor; hidden activations live in a buffer per batch size.
    """

    def __init__(self, sequential: nn.Sequential) -> None:
        super().__init__()
        self.layers = sequential
        self.plan = _mlp_plan(sequential)
        if self.plan is None:
            raise ValueError("not a plain Linear/ReLU/Tanh MLP")
        self._buffers_by_rows: dict[int, list[torch.Tensor]] = {}

    @staticmethod
    def fusable(module: nn.Module) -> bool:
        return isinstance(module, nn.Sequential) and _mlp_plan(module) is not None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.shape[0]
        buffers = self._buffers_by_rows.get(rows)
        if buffers is None:
            buffers = [x.new_empty(rows, linear.out_features) for linear, _ in self.plan[:-1]]
            self._buffers_by_rows[rows] = buffers
        for (linear, activation), out in zip(self.plan[:-1], buffers):
            x = torch.addmm(linear.bias, x, linear.weight.t(), out=out)
            if activation is not None:
                activation(x)
        linear, activation = self.plan[-1]
        y = torch.addmm(linear.bias, x, linear.weight.t())
        return y if activation is None else activation(y)


def _mlp_plan(sequential: nn.Sequential) -> list[tuple[nn.Linear, Callable | None]] | None:
    """``[(linear, in-place activation or None), ...]`` for a plain MLP, else None."""
    plan: list[tuple[nn.Linear, Callable | None]] = []
    for module in sequential:
        if isinstance(module, nn.Linear) and module.bias is not None:
            plan.append((module, None))
        elif type(module) in ACTIVATIONS and plan and plan[-1][1] is None:
            plan[-1] = (plan[-1][0], ACTIVATIONS[type(module)])
        else:
            return None
    return plan or None


def fused_networks(nets: Networks, names: tuple[str, ...]) -> Networks:
    """A ``Networks`` sharing ``nets``'s modules, with the fusable ones among ``names`` as :class:`FusedMLP`."""
    view = Networks({}, ())
    view.online = nn.ModuleDict({name: FusedMLP(m) if name in names and FusedMLP.fusable(m) else m
                                 for name, m in nets.online.items()})
    view.target = nets.target
    return view


def make_fused(algorithm: Algorithm, nets: Networks) -> Inference:
    """``algorithm.act`` under ``inference_mode`` with its acting MLPs fused (CPU networks only)."""
    device = next(nets.parameters()).device
    if device.type != "cpu":
        raise ValueError(f"the fused inference path runs on the CPU; the networks are on {device}")
    view = fused_networks(nets, algorithm.acting_networks)

    def infer(obs: np.ndarray, *, explore: bool, progress: float) -> np.ndarray:
        with torch.inference_mode():
            obs_t = torch.from_numpy(np.ascontiguousarray(obs, dtype=np.float32))
            return algorithm.act(view, obs_t, explore=explore, progress=progress).numpy()

    return infer
