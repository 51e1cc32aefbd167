"""Record the layers a network runs by observing it: forward hooks per layer type, open to new types.

Each recorder turns one module call into a layer workload (:class:`~pearl_py.protocol.workload.DenseLayer`
for ``nn.Linear``); :func:`register_layer` adds a type (a convolution, a pooling layer) without
touching the derivations that use it.

Example::

    >>> net = mlp(4, (64,), 2)
    >>> [layer.n_out for layer in record_layers(net, lambda: net(torch.zeros(8, 4)))]
    [64, 2]
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from pearl_py.protocol.workload import DenseLayer, Layer

Recorder = Callable[[nn.Module, tuple[torch.Tensor, ...], torch.Tensor], Layer]
"""``recorder(module, inputs, output) -> layer``: the workload of one call of ``module``."""

LAYER_RECORDERS: dict[type[nn.Module], Recorder] = {}
"""Recorders by module type; a subclass without its own uses its nearest registered base's."""


def register_layer(module_type: type[nn.Module], recorder: Recorder) -> None:
    """Record every call of ``module_type`` modules with ``recorder``."""
    LAYER_RECORDERS[module_type] = recorder


def _dense(layer: nn.Linear, inputs: tuple[torch.Tensor, ...], output: torch.Tensor) -> DenseLayer:
    rows = int(np.prod(inputs[0].shape[:-1]))
    return DenseLayer(layer.in_features, layer.out_features, rows, backward=output.requires_grad)


register_layer(nn.Linear, _dense)


def record_layers(module: nn.Module, run: Callable[[], object]) -> tuple[Layer, ...]:
    """Every call of a recorded layer type made by ``run()`` inside ``module``, in order."""
    calls: list[Layer] = []
    handles = []
    for m in module.modules():
        recorder = next((LAYER_RECORDERS[t] for t in type(m).__mro__ if t in LAYER_RECORDERS), None)
        if recorder is not None:
            handles.append(m.register_forward_hook(
                lambda mod, inputs, output, rec=recorder: calls.append(rec(mod, inputs, output))))
    try:
        run()
    finally:
        for h in handles:
            h.remove()
    return tuple(calls)
