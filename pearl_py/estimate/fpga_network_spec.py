"""The network spec of ``pearl fpga-design``: a part, a clock, a precision, HLS directives and layers.

A bad spec raises :class:`pearl_py.errors.ConfigError` naming ``file:line: key``, as configs do.

Example::

    >>> spec = load_network_spec("examples/fpga/jet_tagger.yaml")
    >>> spec.part, spec.precision.text, spec.input_shape, spec.layers[0]
    ('alveo-u250', 'ap_fixed<16,6>', (16,), DenseSpec(units=64, activation='relu'))
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pearl_py.config.yaml_source import YamlDocument
from pearl_py.platform import Catalogue
from pearl_py.platform.precision import PRECISIONS, Precision
from pearl_py.platform.spec import FpgaPartSpec, FpgaSpec, check_keys

STRATEGIES = ("latency", "resource")
IO_TYPES = ("parallel", "stream")
ACTIVATIONS = ("linear", "relu", "sigmoid", "tanh", "elu", "softmax")
PADDINGS = ("same", "valid")
_TOP = ["part", "clock_ns", "precision", "reuse_factor", "strategy", "io", "layers"]


@dataclass(frozen=True)
class DenseSpec:
    units: int
    activation: str


@dataclass(frozen=True)
class Conv2dSpec:
    filters: int
    kernel: int
    stride: int
    padding: str
    activation: str


LayerSpec = DenseSpec | Conv2dSpec


@dataclass(frozen=True)
class NetworkSpec:
    """A network as an hls4ml-style FPGA design: every layer at one precision and one reuse factor."""

    part: str
    board: FpgaPartSpec
    """The catalogue FPGA the design is synthesized on: a board (``fpgas:``) or a bare part (``fpga_parts:``)."""
    clock_ns: float
    precision: Precision
    reuse_factor: int
    strategy: str
    io: str
    input_shape: tuple[int, ...]
    layers: tuple[LayerSpec, ...]


def load_network_spec(path: str | Path, catalogue: Catalogue | None = None) -> NetworkSpec:
    """Read and check a spec file; every mistake is a located :class:`~pearl_py.errors.ConfigError`."""
    return network_spec(YamlDocument.load(path), catalogue)


def network_spec(doc: YamlDocument, catalogue: Catalogue | None = None) -> NetworkSpec:
    """The spec of a parsed document (``YamlDocument.parse(text)`` for one held in a string)."""
    error, data = doc.error, doc.data
    check_keys(data, _TOP, _TOP, (), error)
    catalogue = catalogue or Catalogue.load()
    fpgas = {**{name: spec for name, spec in catalogue.devices.items() if isinstance(spec, FpgaSpec)},
             **catalogue.parts}
    if data["part"] not in fpgas:
        raise error(("part",), f"unknown FPGA {data['part']!r}; catalogue FPGAs: {', '.join(sorted(fpgas))}")
    board = fpgas[data["part"]]
    precision = Precision.parse(data["precision"]) if isinstance(data["precision"], str) else None
    if precision is None:
        raise error(("precision",), f"must be {PRECISIONS}, got {data['precision']!r}")
    clock_ns = _positive(data["clock_ns"], ("clock_ns",), error, float)
    if board.fmax_mhz and clock_ns < 1e3 / board.fmax_mhz:
        raise error(("clock_ns",), f"{clock_ns:g} ns is faster than {data['part']}'s DSP limit of "
                                   f"{1e3 / board.fmax_mhz:.3g} ns ({board.fmax_mhz:g} MHz, its catalogue entry)")
    for key, options in (("strategy", STRATEGIES), ("io", IO_TYPES)):
        if data[key] not in options:
            raise error((key,), f"must be one of {', '.join(options)}, got {data[key]!r}")
    layers = data["layers"]
    if not isinstance(layers, list) or len(layers) < 2:
        raise error(("layers",), "must list an {input: [...]} entry and at least one layer")
    shape = _input_shape(layers[0], ("layers", 0), error)
    parsed = tuple(_layer(entry, ("layers", i), error) for i, entry in enumerate(layers[1:], start=1))
    _check_shapes(shape, parsed, error)
    return NetworkSpec(
        part=data["part"], board=board, clock_ns=clock_ns,
        precision=precision,
        reuse_factor=_positive(data["reuse_factor"], ("reuse_factor",), error, int),
        strategy=data["strategy"], io=data["io"], input_shape=shape, layers=parsed,
    )


def output_shape(shape: tuple[int, ...], layer: LayerSpec) -> tuple[int, ...]:
    """A layer's output shape (Keras's: ``same`` pads to ``ceil(n / stride)``); a dense layer flattens its input."""
    if isinstance(layer, DenseSpec):
        return (layer.units,)
    h, w, _ = shape
    k, s = layer.kernel, layer.stride
    if layer.padding == "same":
        return math.ceil(h / s), math.ceil(w / s), layer.filters
    return math.ceil((h - k + 1) / s), math.ceil((w - k + 1) / s), layer.filters


def _check_shapes(shape: tuple[int, ...], layers: tuple[LayerSpec, ...], error) -> None:
    for i, layer in enumerate(layers, start=1):
        if isinstance(layer, Conv2dSpec):
            if len(shape) != 3:
                raise error(("layers", i), f"conv2d needs a [height, width, channels] input, got "
                                           f"{len(shape)}-D {list(shape)}")
            if layer.padding == "valid" and layer.kernel > min(shape[:2]):
                raise error(("layers", i, "kernel"), f"{layer.kernel} is larger than the {list(shape[:2])} input")
        shape = output_shape(shape, layer)


def _positive(value: Any, where: tuple, error, kind: type) -> Any:
    ok = not isinstance(value, bool) and isinstance(value, (int, float)) and value > 0 and value != float("inf")
    if not ok or (kind is int and value != int(value)):
        raise error(where, f"must be a {'whole ' if kind is int else ''}number > 0, got {value!r}")
    return kind(value)


def _input_shape(entry: Any, where: tuple, error) -> tuple[int, ...]:
    check_keys(entry, ["input"], ["input"], where, error)
    shape = entry["input"]
    if not isinstance(shape, list) or len(shape) not in (1, 3):
        raise error(where + ("input",), f"must be [features] or [height, width, channels], got {shape!r}")
    return tuple(_positive(n, where + ("input", i), error, int) for i, n in enumerate(shape))


def _layer(entry: Any, where: tuple, error) -> LayerSpec:
    kinds = [k for k in ("dense", "conv2d") if isinstance(entry, dict) and k in entry]
    if len(kinds) != 1:
        raise error(where, "each layer after the input must have exactly one of the keys dense, conv2d")
    activation = entry.get("activation", "linear")
    if activation not in ACTIVATIONS:
        raise error(where + ("activation",), f"must be one of {', '.join(ACTIVATIONS)}, got {activation!r}")
    if kinds[0] == "dense":
        check_keys(entry, ["dense", "activation"], ["dense"], where, error)
        return DenseSpec(_positive(entry["dense"], where + ("dense",), error, int), activation)
    check_keys(entry, ["conv2d", "kernel", "stride", "padding", "activation"], ["conv2d", "kernel"], where, error)
    padding = entry.get("padding", "valid")
    if padding not in PADDINGS:
        raise error(where + ("padding",), f"must be same or valid, got {padding!r}")
    return Conv2dSpec(_positive(entry["conv2d"], where + ("conv2d",), error, int),
                      _positive(entry["kernel"], where + ("kernel",), error, int),
                      _positive(entry.get("stride", 1), where + ("stride",), error, int), padding, activation)
