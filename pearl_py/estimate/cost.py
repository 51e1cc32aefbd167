"""Cost: what one call of a kernel costs on one device, and how we know.

Example::

    >>> c = Cost(latency_s=2e-4, energy_j=1e-3, source="calibrated")
    >>> c.latency_s * 1e6
    200.0
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pearl_py.errors import UserError
from pearl_py.plan import LayerCost

Source = Literal["measured", "calibrated", "modelled"]
SOURCES = ("measured", "calibrated", "modelled")


@dataclass(frozen=True)
class Cost:
    """Per call of a kernel on a device.

    ``energy_j`` is the dynamic (above-idle) energy of the call; a device's idle
    power is paid per unit of wall time whatever runs on it (docs/cost-models.md, Power).
    ``resources`` is what the call occupies (FPGA: ``dsp``, ``lut`` and memory blocks;
    CPU: ``cores``); FPGA kernels with the same ``instance`` share one hardware
    instance, whose resources count once (the three replay kernels share the sum tree).
    """

    latency_s: float
    energy_j: float
    resources: dict[str, float] = field(default_factory=dict)
    source: Source = "modelled"
    instance: str = ""
    detail: dict[str, float] = field(default_factory=dict)
    """Breakdown of ``latency_s`` by term (e.g. ``compute``, ``dispatch``, ``offchip``) for reports."""
    setup_s: float = 0.0
    """One-off seconds the implementation pays before its first call (a compile, a graph capture);
    not part of ``latency_s``: a plan weighs it against the calls of the run (break-even)."""
    energy_source: Source = "modelled"
    """How ``energy_j`` is known: ``modelled`` (catalogue watts x latency) or ``measured`` (the dynamic power
    ``pearl profile`` measured on this machine's counters x latency)."""
    setup_source: Source = "modelled"
    """How ``setup_s`` is known: ``calibrated`` (timed by ``pearl profile``) or ``modelled``
    (``estimators/roofline.yaml``, e.g. a calibrated cost whose compile no profile measured cold)."""
    layers: tuple[LayerCost, ...] = ()
    """Per-layer modelled breakdown of a network kernel with convolutions (reports; empty otherwise)."""
    loop_s: float = 0.0
    """The part of ``latency_s`` that is the runtime loop's own work per call (an ``env_step``'s: the per-step
    bookkeeping around it, ``pearl_py.protocol.kernel.LOOP_WORK``); its source is ``loop_source``."""
    loop_source: Source = "modelled"
    normalize_s: float = 0.0
    """The part of ``loop_s`` that is the ``normalize`` transform's work (VecNormalize's; the estimator's
    ``normalize_work``, calibrated or modelled as ``loop_source`` says of the whole)."""

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"Cost.source must be one of {SOURCES}, got {self.source!r}")
        if not self.latency_s >= 0:
            raise ValueError(f"Cost.latency_s must be >= 0, got {self.latency_s}")
        if not self.setup_s >= 0:
            raise ValueError(f"Cost.setup_s must be >= 0, got {self.setup_s}")
        for name in ("energy_source", "setup_source"):
            if getattr(self, name) not in SOURCES:
                raise ValueError(f"Cost.{name} must be one of {SOURCES}, got {getattr(self, name)!r}")


class Infeasible(UserError):
    """A kernel cannot run on a device: the reason names the overflowing resource.

    ``resource`` is e.g. ``"dsp"``, ``"m20k"``, ``"lut"`` or ``"device kind"``;
    ``needed``/``available`` are in that resource's unit (NaN when not a quantity).
    """

    def __init__(self, kernel: str, device: str, resource: str, needed: float = float("nan"),
                 available: float = float("nan"), reason: str = "") -> None:
        self.kernel, self.device, self.resource = kernel, device, resource
        self.needed, self.available = needed, available
        amount = f": needs {needed:g}, board has {available:g}" if needed == needed else ""
        super().__init__(f"{kernel} does not fit on {device}: {resource}{amount}"
                         + (f" ({reason})" if reason else ""))
