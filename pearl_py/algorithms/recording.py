"""Record the layers a network runs by observing it: forward hooks per layer type, open to new types.

Each recorder turns one module call into a layer workload (:class:`~pearl_py.protocol.workload.DenseLayer`
for ``nn.Linear``; :class:`~pearl_py.protocol.layers.Conv2dLayer` for ``nn.Conv2d``,
:class:`~pearl_py.protocol.layers.PoolLayer` for max and average pooling,
:class:`~pearl_py.protocol.layers.FlattenLayer` for ``nn.Flatten``, with their shapes as called);
:func:`register_layer` adds a type without touching the derivations that use it.

Example::

    >>> net = mlp(4, (64,), 2)
    >>> [layer.n_out for layer in record_layers(net, lambda: net(torch.zeros(8, 4)))]
    [64, 2]
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import torch
from torch import nn

from pearl_py.protocol.layers import Conv2dLayer, FlattenLayer, PoolLayer
from pearl_py.protocol.workload import DenseLayer, Layer

Recorder = Callable[[nn.Module, tuple[torch.Tensor, ...], torch.Tensor], Layer]
"""``recorder(module, inputs, output) -> layer``: the workload of one call of ``module``."""

T = TypeVar("T")

LAYER_RECORDERS: dict[type[nn.Module], Recorder] = {}
"""Recorders by module type; a subclass without its own uses its nearest registered base's."""


def register_layer(module_type: type[nn.Module], recorder: Recorder) -> None:
    """Record every call of ``module_type`` modules with ``recorder``."""
    LAYER_RECORDERS[module_type] = recorder


def _dense(layer: nn.Linear, inputs: tuple[torch.Tensor, ...], output: torch.Tensor) -> DenseLayer:
    rows = int(np.prod(inputs[0].shape[:-1]))
    return DenseLayer(layer.in_features, layer.out_features, rows, backward=output.requires_grad)


register_layer(nn.Linear, _dense)


def _pair(value: int | tuple[int, ...]) -> tuple[int, int]:
    return (value, value) if isinstance(value, int) else (int(value[0]), int(value[1]))


def _frames(x: torch.Tensor) -> tuple[int, int, int, int]:
    """``(batch, channels, h, w)`` of a call's input (an unbatched ``(C, H, W)`` input is one frame)."""
    return (1, *x.shape) if x.dim() == 3 else tuple(int(d) for d in x.shape)


def _conv(layer: nn.Conv2d, inputs: tuple[torch.Tensor, ...], output: torch.Tensor) -> Conv2dLayer:
    if not isinstance(layer.padding, tuple):
        raise ValueError(f"recording {layer}: padding {layer.padding!r} by name is not supported; give it in pixels")
    if _pair(layer.dilation) != (1, 1):
        raise ValueError(f"recording {layer}: dilated convolutions are not modelled")
    batch, channels, h, w = _frames(inputs[0])
    return Conv2dLayer(channels, layer.out_channels, h, w, _pair(layer.kernel_size), _pair(layer.stride),
                       _pair(layer.padding), batch, layer.groups, layer.bias is not None,
                       backward=output.requires_grad, input_grad=inputs[0].requires_grad)


def _pool(mode: str) -> Recorder:
    def record(layer: nn.MaxPool2d | nn.AvgPool2d, inputs: tuple[torch.Tensor, ...], output: torch.Tensor) -> PoolLayer:
        batch, channels, h, w = _frames(inputs[0])
        stride = layer.stride if layer.stride is not None else layer.kernel_size
        return PoolLayer(mode, channels, h, w, _pair(layer.kernel_size), _pair(stride), _pair(layer.padding), batch,
                         backward=output.requires_grad)
    return record


def _flatten(layer: nn.Flatten, inputs: tuple[torch.Tensor, ...], output: torch.Tensor) -> FlattenLayer:
    shape = tuple(int(d) for d in inputs[0].shape)
    return FlattenLayer(shape[1:], shape[0], backward=output.requires_grad)


register_layer(nn.Conv2d, _conv)
register_layer(nn.MaxPool2d, _pool("max"))
register_layer(nn.AvgPool2d, _pool("avg"))
register_layer(nn.Flatten, _flatten)


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


def observe(module: nn.Module, run: Callable[[], object]) -> tuple[tuple[Layer, ...], int]:
    """The layers ``run()`` calls inside ``module`` and the operators it dispatches, from two runs: the first
    records the layers and creates whatever a call makes once (an optimizer's moments), so the second counts a
    steady call's operators (the derivations' ``dispatched_ops``)."""
    return record_layers(module, run), count_dispatched(run)


def count_dispatched(run: Callable[[], object]) -> int:
    """Operators ``run()`` dispatches to torch's kernels (forward, backward and optimizer alike): the
    per-operator launch term of the cost models, observed rather than estimated."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class _Count(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.calls = 0

        @classmethod
        def _should_skip_dynamo(cls) -> bool:   # never traced: torch would import torch._dynamo to skip the count
            return False

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.calls += 1
            return func(*args, **(kwargs or {}))

    with _Count() as counter:
        run()
    return counter.calls


@dataclass(frozen=True)
class ObservedCode:
    """What running an algorithm's code once on a throwaway learner shows: the layers and dispatched operators of its
    acting and of one period of updates (one update where every loss steps each time), the parameters trained per
    period, and the acting networks' bytes and tensors (what a parameter sync copies)."""

    trained_params: int
    acting: tuple[Layer, ...]
    acting_ops: int
    learning: tuple[Layer, ...]
    learning_ops: int
    param_bytes: int
    param_tensors: int
    period: int = 1
    optimizer: str | None = None
    """The learner's one optimizer, by class name in lower case (None: not recorded)."""


def observed_once(algorithm: Any, observe_code: Callable[[Any], T]) -> T:
    """``observe_code(algorithm)``, run once per config and env spec and kept on ``algorithm``: a run derives its
    protocol in both modes, for the calibration's needs and for each plan (7 derivations for `pearl run --auto`), and
    every observation builds a learner and runs its updates.
    The config is frozen, so the same config and spec objects observe the same (a changed ``config`` observes
    again)."""
    cfg, spec = algorithm.config, algorithm.spec
    cached = algorithm.__dict__.get("_observed_code")
    if cached is not None and cached[0] is cfg and cached[1] is spec:
        return cached[2]
    observed = observe_code(algorithm)
    algorithm.__dict__["_observed_code"] = (cfg, spec, observed)
    return observed
