"""The arithmetic type of an FPGA design: ``ap_fixed<W,I>`` or an IEEE float (pure data; the HLS model maps it).

It lives with the catalogue because an FPGA entry states the precision its kernels train at
(``training_precision``); :mod:`pearl_py.estimate.fpga_hls` maps it to DSPs and LUTs.

Example::

    >>> Precision.parse("ap_fixed<8,3>").width, Precision.parse("float16").mantissa_bits
    (8, 11)
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_FIXED = re.compile(r"ap_fixed<\s*(\d+)\s*,\s*(-?\d+)\s*>")
_FLOATS = {"float32": (32, 24), "float16": (16, 11)}
"""IEEE 754 binary32 and binary16: storage bits and significand bits (hidden bit included)."""
PRECISIONS = "float32, float16 or ap_fixed<W,I> (1 <= W <= 64)"
"""What :meth:`Precision.parse` accepts, for error messages."""


@dataclass(frozen=True)
class Precision:
    """An arithmetic type of an HLS design: ``ap_fixed<W,I>`` (W bits, I integer bits) or an IEEE float.

    ``mantissa_bits`` is the width a multiplier sees: W for fixed point, the significand for floats.
    """

    text: str
    width: int
    mantissa_bits: int
    is_float: bool

    @classmethod
    def parse(cls, text: str) -> Precision | None:
        """The precision ``text`` names (``float32``, ``float16``, ``ap_fixed<W,I>`` with 1 <= W <= 64), else None."""
        if text in _FLOATS:
            width, mantissa = _FLOATS[text]
            return cls(text, width, mantissa, True)
        match = _FIXED.fullmatch(text.strip())
        if match and 1 <= int(match[1]) <= 64:
            return cls(text, int(match[1]), int(match[1]), False)
        return None


FLOAT32 = Precision("float32", 32, 24, True)
"""The precision every FPGA kernel trains at unless its catalogue or platform entry says otherwise."""
