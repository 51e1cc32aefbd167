"""Number formatting shared by the Markdown and HTML reports.

Example::

    >>> seconds(3.2e-5), rate(123456.7), joules(2.5e-4)
    ('32.0 us', '123,457', '0.25 mJ')
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pearl_py.plan import Placement


def seconds(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    for unit, factor in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if value >= factor:
            return f"{value / factor:,.1f} {unit}"
    return f"{value * 1e9:,.1f} ns"


def joules(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    for unit, factor in (("J", 1.0), ("mJ", 1e-3), ("uJ", 1e-6)):
        if value >= factor:
            return f"{value / factor:,.2f} {unit}"
    return f"{value * 1e9:,.1f} nJ"


def rate(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:,.2f}"


def percent(value: float) -> str:
    return f"{100 * value:.0f}%"


def placement(p: Placement, variant: bool = False) -> str:
    """``gpu``, ``cpu x16`` or ``gpu / compiled``: the variant only when not ``reference``, or always (``variant``:
    ``cpu / reference x2``)."""
    text = p.device + (f" / {p.variant}" if variant or p.variant != "reference" else "")
    return text + (f" x{p.replicas}" if p.replicas != 1 else "")


