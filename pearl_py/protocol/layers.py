"""Layer calls besides dense ones: 2-D convolutions, pooling, flatten, with their FLOPs, bytes and shapes.

Every layer type has the attributes :data:`pearl_py.protocol.workload.Layer` lists; ``gemm`` is the matrix product
a layer amounts to, ``(rows, n_in, n_out)`` (a convolution: ``batch x out_h x out_w`` rows of an ``in_channels x kh
x kw`` patch against ``out_channels`` filters, im2col; None without weights), which the FPGA model maps like a dense
layer (hls4ml, FINN: docs/cost-models.md).

Example::

    >>> conv = Conv2dLayer(4, 16, 10, 10, (3, 3), (1, 1), (0, 0), batch=32, backward=True, input_grad=False)
    >>> conv.out_h, conv.forward_flops, conv.backward_flops, conv.gemm
    (8, 1179648, 1179648, (2048, 36, 16))
"""
from __future__ import annotations

from dataclasses import dataclass


def conv_out(size: int, kernel: int, stride: int, padding: int) -> int:
    """Output side of a convolution or pooling window (no dilation)."""
    return (size + 2 * padding - kernel) // stride + 1


class SlidingWindow:
    """The output size of a layer that slides a ``kernel`` window by ``stride`` over ``padding``-ed inputs
    (convolutions and pooling share it)."""

    in_h: int
    in_w: int
    kernel: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int]

    @property
    def out_h(self) -> int:
        return conv_out(self.in_h, self.kernel[0], self.stride[0], self.padding[0])

    @property
    def out_w(self) -> int:
        return conv_out(self.in_w, self.kernel[1], self.stride[1], self.padding[1])


@dataclass(frozen=True)
class Conv2dLayer(SlidingWindow):
    """One ``nn.Conv2d`` call on ``batch`` frames of ``in_channels x in_h x in_w``.

    ``backward``: the learner back-propagates through it (the weight gradient, as large as the forward);
    ``input_grad``: the gradient w.r.t. its input is needed too (not for a first layer, whose input is data).
    """

    in_channels: int
    out_channels: int
    in_h: int
    in_w: int
    kernel: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int]
    batch: int
    groups: int = 1
    bias: bool = True
    backward: bool = False
    input_grad: bool = True

    @property
    def patch(self) -> int:
        """Inputs of one output value: ``in_channels / groups x kh x kw``."""
        return self.in_channels // self.groups * self.kernel[0] * self.kernel[1]

    @property
    def weights(self) -> int:
        return self.out_channels * self.patch + (self.out_channels if self.bias else 0)

    @property
    def weight_key(self) -> tuple:
        return ("conv2d", self.in_channels, self.out_channels, self.kernel, self.groups)

    @property
    def activation_elements(self) -> int:
        return self.batch * (self.in_channels * self.in_h * self.in_w + self.out_channels * self.out_h * self.out_w)

    @property
    def forward_flops(self) -> int:
        return 2 * self.batch * self.out_h * self.out_w * self.out_channels * self.patch

    @property
    def backward_flops(self) -> int:
        """Weight gradient (a GEMM the size of the forward) plus, when needed, the input gradient (another)."""
        if not self.backward:
            return 0
        return self.forward_flops * (2 if self.input_grad else 1)

    @property
    def dispatches(self) -> int:
        return (2 + self.input_grad) if self.backward else 1

    @property
    def gemm(self) -> tuple[int, int, int]:
        return (self.batch * self.out_h * self.out_w, self.patch, self.out_channels)

    @property
    def label(self) -> str:
        (kh, kw), (sh, sw) = self.kernel, self.stride
        return (f"conv2d {self.in_channels}->{self.out_channels} {kh}x{kw}/{sh}" + (f"x{sw}" if sw != sh else "")
                + f" {self.in_h}x{self.in_w}->{self.out_h}x{self.out_w} (x{self.batch})")

    @property
    def line_buffer_words(self) -> int:
        """Words a streaming sliding-window unit keeps: ``kh - 1`` input rows plus ``kw`` pixels (FINN's SWU)."""
        return ((self.kernel[0] - 1) * (self.in_w + 2 * self.padding[1]) + self.kernel[1]) * self.in_channels


@dataclass(frozen=True)
class PoolLayer(SlidingWindow):
    """One max or average pooling call on ``batch`` frames of ``channels x in_h x in_w``."""

    mode: str
    channels: int
    in_h: int
    in_w: int
    kernel: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int]
    batch: int
    backward: bool = False

    weights = 0
    gemm = None

    @property
    def weight_key(self) -> tuple:
        return ("pool",)

    @property
    def activation_elements(self) -> int:
        return self.batch * self.channels * (self.in_h * self.in_w + self.out_h * self.out_w)

    @property
    def forward_flops(self) -> int:
        """One compare (max) or add (average) per window element of every output."""
        return self.batch * self.channels * self.out_h * self.out_w * self.kernel[0] * self.kernel[1]

    @property
    def backward_flops(self) -> int:
        return self.forward_flops if self.backward else 0

    @property
    def dispatches(self) -> int:
        return 2 if self.backward else 1

    @property
    def label(self) -> str:
        return (f"{self.mode}pool {self.kernel[0]}x{self.kernel[1]}/{self.stride[0]} {self.channels}x{self.in_h}x"
                f"{self.in_w}->{self.out_h}x{self.out_w} (x{self.batch})")


@dataclass(frozen=True)
class FlattenLayer:
    """``nn.Flatten`` of ``batch`` rows of ``shape``: a view, no arithmetic and no copy."""

    shape: tuple[int, ...]
    batch: int
    backward: bool = False

    weights = 0
    forward_flops = 0
    backward_flops = 0
    activation_elements = 0
    dispatches = 0
    gemm = None

    @property
    def weight_key(self) -> tuple:
        return ("flatten",)

    @property
    def label(self) -> str:
        return f"flatten {'x'.join(map(str, self.shape))} (x{self.batch})"
