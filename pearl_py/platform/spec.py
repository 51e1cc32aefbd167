"""Typed device and link specifications, validated from catalogue entries.

Each spec is a frozen dataclass; its fields are the catalogue schema. Required
fields have no default; every number must be positive (``idle_w`` may be 0).

Example::

    >>> spec = LinkSpec.from_entry({"bandwidth_gbs": 12.0, "latency_us": 10.0})
    >>> spec.transfer_s(12e9)  # 12 GB at 12 GB/s plus 10 us
    1.00001
"""
from __future__ import annotations

import dataclasses
import difflib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pearl_py.platform.precision import FLOAT32, PRECISIONS, Precision

SpecError = Callable[[tuple, str], Exception]
"""Builds a located error from a key path relative to the entry and a message."""

_NON_NEGATIVE = {"idle_w"}
SINGLE_CORE_BANDWIDTH_GBS = 20.0
"""Upper bound of one core's DRAM bandwidth (STREAM single-thread figures on server CPUs)."""


def _plain_error(path: tuple, message: str) -> Exception:
    from pearl_py.platform.yamlsrc import CatalogueError

    return CatalogueError(message, key=".".join(map(str, path)) or None)


def check_keys(entry: Mapping, allowed: list[str], required: list[str], path: tuple, error: SpecError) -> None:
    """Unknown keys (with a did-you-mean hint) and missing keys raise ``error``."""
    if not isinstance(entry, Mapping):
        raise error(path, f"expected a mapping, got {type(entry).__name__}")
    for key in entry:
        if key not in allowed:
            hint = difflib.get_close_matches(str(key), allowed, n=1)
            suffix = f" (did you mean {hint[0]!r}?)" if hint else f"; allowed: {', '.join(allowed)}"
            raise error(path + (key,), f"unknown key {key!r}{suffix}")
    for key in required:
        if key not in entry:
            raise error(path, f"missing required key {key!r}")


def _coerce(value: Any, kind: type, name: str, path: tuple, error: SpecError) -> Any:
    if kind in (int, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise error(path, f"must be a number, got {value!r}")
        if not math.isfinite(value):  # .inf or .nan in YAML: no figure of a device is either
            raise error(path, f"must be a finite number, got {value!r}")
        if kind is int and value != int(value):
            raise error(path, f"must be a whole number, got {value!r}")
        if value < 0 or (value == 0 and name not in _NON_NEGATIVE):
            raise error(path, f"must be {'>= 0' if name in _NON_NEGATIVE else '> 0'}, got {value!r}")
        return kind(value)
    if kind is str and not isinstance(value, str):
        raise error(path, f"must be a string, got {value!r}")
    return value


@dataclass(frozen=True)
class Spec:
    """Base of every spec: its dataclass fields are the catalogue schema (:meth:`from_entry` validates an entry)."""

    kind: ClassVar[str] = ""

    @classmethod
    def from_entry(cls, entry: Mapping, path: tuple = (), error: SpecError = _plain_error,
                   name: str = "") -> Any:
        """Validate one catalogue entry (``name`` is its key in the catalogue)."""
        fields = [f for f in dataclasses.fields(cls) if f.init and f.name != "name"]
        names = [f.name for f in fields]
        required = [f.name for f in fields
                    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        check_keys(entry, names, required, path, error)
        kinds = {f.name: {"int": int, "float": float, "str": str}.get(str(f.type), object) for f in fields}
        values = {key: cls._field_value(key, value, kinds[key], path + (key,), error) for key, value in entry.items()}
        if "name" in {f.name for f in dataclasses.fields(cls)}:
            values["name"] = name
        return cls(**values)

    @classmethod
    def _field_value(cls, name: str, value: Any, kind: type, path: tuple, error: SpecError) -> Any:
        return _coerce(value, kind, name, path, error)


@dataclass(frozen=True)
class LinkSpec(Spec):
    """A point-to-point link: effective one-direction bandwidth and one-way latency."""

    bandwidth_gbs: float
    latency_us: float
    name: str = ""

    def transfer_s(self, nbytes: float) -> float:
        """Seconds to move ``nbytes``: latency + bytes / bandwidth (LogP-style, Culler et al. 1993)."""
        return self.latency_us * 1e-6 + nbytes / (self.bandwidth_gbs * 1e9)


@dataclass(frozen=True)
class CpuSpec(Spec):
    """A CPU socket. One pearl_py process uses one core (``torch.set_num_threads(1)``)."""

    kind: ClassVar[str] = "cpu"
    vendor: str
    model_name: str
    cores: int
    base_ghz: float
    flops_per_cycle: float
    mem_bandwidth_gbs: float
    memory_gb: float
    dram_latency_ns: float
    idle_w: float
    peak_w: float
    dispatch_overhead_us: float
    cpuinfo_match: dict = field(default_factory=dict)
    name: str = ""

    @property
    def core_peak_flops(self) -> float:
        return self.base_ghz * 1e9 * self.flops_per_cycle

    @property
    def core_bandwidth_bytes(self) -> float:
        """DRAM bandwidth one core can draw, bytes/s: the socket figure capped at 20 GB/s.

        A single core is limited by its outstanding cache misses (~10-20 GB/s on
        server cores, STREAM single-thread results), not by the socket total.
        """
        return min(self.mem_bandwidth_gbs, SINGLE_CORE_BANDWIDTH_GBS) * 1e9


@dataclass(frozen=True)
class GpuSpec(Spec):
    """A GPU with its host link."""

    kind: ClassVar[str] = "gpu"
    vendor: str
    model_name: str
    fp32_tflops: float
    mem_bandwidth_gbs: float
    memory_gb: float
    idle_w: float
    peak_w: float
    launch_overhead_us: float
    host_link: str
    name_match: str = ""
    name: str = ""


@dataclass(frozen=True)
class MemorySpec(Spec):
    """One kind of FPGA on-chip RAM block: how many, bits per block, ports per block."""

    count: int
    bits: int
    ports: int


@dataclass(frozen=True, kw_only=True)
class FpgaPartSpec(Spec):
    """An FPGA part (a die at a speed grade): fabric resources, DSP clock limit, fp32 operator latencies.

    ``pearl fpga-design`` synthesizes on a part or on a board (:class:`FpgaSpec`, a part with off-chip memory, a
    host link and power); a platform needs a board.
    """

    kind: ClassVar[str] = "fpga_part"
    vendor: str
    model_name: str
    dsp: int
    lut: int
    memories: dict
    dsp_per_mac: int
    dsp_per_add: int
    fmul_latency: int
    fadd_latency: int
    mem_read_latency: int
    name: str = ""
    ff: int = 0
    """Flip-flops (registers) of the fabric, shown beside `pearl fpga-design`'s figures; 0: unknown."""
    fmax_mhz: float = 0.0
    """The fastest clock the part's DSP blocks take with every register used (its data sheet); 0: unknown."""

    @classmethod
    def _field_value(cls, name: str, value: Any, kind: type, path: tuple, error: SpecError) -> Any:
        if name != "memories":
            return super()._field_value(name, value, kind, path, error)
        if not isinstance(value, Mapping) or not value:
            raise error(path, "must map memory kinds (e.g. bram36, m20k) to {count, bits, ports}")
        return {str(k): MemorySpec.from_entry(v, path + (k,), error, name=str(k)) for k, v in value.items()}

    def capacity(self) -> dict[str, int]:
        """Every checked resource of the part: dsp, lut and each memory kind's block count."""
        return {"dsp": self.dsp, "lut": self.lut, **{k: m.count for k, m in self.memories.items()}}


@dataclass(frozen=True, kw_only=True)
class FpgaSpec(FpgaPartSpec):
    """An FPGA board: its part's fabric, the kernels' clock, off-chip memory, host link, power, training precision."""

    kind: ClassVar[str] = "fpga"
    clock_mhz: float
    offchip_bandwidth_gbs: float
    offchip_latency_ns: float
    idle_w: float
    peak_w: float
    host_link: str
    memory_gb: float = 0.0
    """Off-chip memory the board's kernels may keep data in (a replay); 0: unknown, not checked."""
    training_precision: Precision = FLOAT32
    """The precision the planner's FPGA kernels compute their layers at (``float32``, ``float16``,
    ``ap_fixed<W,I>``); a platform's device entry may override it. Adam keeps fp32 master weights."""

    @classmethod
    def _field_value(cls, name: str, value: Any, kind: type, path: tuple, error: SpecError) -> Any:
        if name != "training_precision":
            return super()._field_value(name, value, kind, path, error)
        return parse_precision(value, path, error)

    @property
    def clock_hz(self) -> float:
        return self.clock_mhz * 1e6


def parse_precision(value: Any, path: tuple, error: SpecError) -> Precision:
    """The :class:`Precision` ``value`` names, or ``error`` at ``path``."""
    precision = Precision.parse(value) if isinstance(value, str) else None
    if precision is None:
        raise error(path, f"must be {PRECISIONS}, got {value!r}")
    return precision


DeviceSpec = CpuSpec | GpuSpec | FpgaSpec
"""The built-in kinds' specs; a registered kind (pearl_py.platform.kinds) may bring its own."""
