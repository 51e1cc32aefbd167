"""Plan and Prediction: the typed contract between the stages (docs/architecture.md).

A :class:`Plan` says what runs (``plan.yaml``, the file a user edits for ``pearl run --plan``); a
:class:`Prediction` beside it (``prediction.json``) what the performance model predicted for it, with each cost's
source. Both are frozen: a stage that adds to a prediction builds a new one (:meth:`Plan.with_prediction`).

Example::

    >>> plan = pearl.plan(pearl.DQN("CartPole-v1"), pearl.Platform.load("pearl-cpu-gpu-fpga"))
    >>> plan.placements[LEARNER_UPDATE].device, plan.mode, plan.devices["fpga"]
    ('gpu', 'overlapped', 'fpga')
    >>> round(plan.prediction.samples_per_s), plan.prediction.cost(LEARNER_UPDATE, "gpu").source
    (35531, 'modelled')
    >>> sorted(p.name for p in pearl.export_plan(plan, "out/plan").values())
    ['plan.json', 'plan.yaml', 'prediction.json', 'report.html', 'report.md']
    >>> pearl.load_plan("out/plan/plan.yaml") == plan      # the prediction is read back from beside it
    True
"""
from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pearl_py.errors import PlanningError
from pearl_py.protocol.kernel import KernelKind

MODES = ("serialized", "overlapped", "synchronous")
"""A plan's protocol modes: stages one after another (the serial executor), collection beside training (the
off-policy parallel runtime), or collection over actors then learning, alternating (the on-policy parallel
runtime)."""
FORMAT = 2
"""plan.yaml's format: 2 keeps the prediction beside the plan (1, the first, held it under ``predicted``)."""


@dataclass(frozen=True)
class Placement:
    """Where one kernel runs: a device of the platform, an implementation variant, replicas.

    ``replicas`` of a replicable kernel (``env_step``, ``inference``) are its processes; of a threaded
    kernel (the learner update) the learner's threads (docs/optimizer.md).
    """

    device: str
    variant: str = "reference"
    replicas: int = 1


@dataclass(frozen=True)
class ThreadCost:
    """One call of a threaded kernel at ``threads`` threads."""

    threads: int
    latency_s: float
    energy_j: float


@dataclass(frozen=True)
class LayerCost:
    """One recorded layer of a network kernel on a device: its modelled share of a call (reports only).

    CPUs and GPUs: the layer's own roofline (dispatches + max(compute, memory), docs/cost-models.md); FPGAs:
    its loop nests' cycles at the design's reuse factor and the DSPs and RAM blocks they use.
    """

    layer: str
    """What the layer is, with its shapes (``Conv2dLayer.label``)."""
    flops: float
    """Forward and backward FLOPs of the layer per call."""
    latency_s: float
    resources: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class KernelCost:
    """One call of a kernel on a device as a variant: latency, dynamic energy, resources, how it is known."""

    latency_s: float
    energy_j: float
    source: str
    """``measured``, ``calibrated`` or ``modelled`` (docs/cost-models.md)."""
    resources: Mapping[str, float] = field(default_factory=dict)
    setup_s: float = 0.0
    """One-off seconds before the first call (a compile); its source is ``setup_source``."""
    threads: tuple[ThreadCost, ...] = ()
    """The call at 2, 3, ... threads where it was costed so (the calibrated learner update); for a synchronous
    plan's actor kernels, one replica's call on its share of the envs at 2, 3, ... replicas (``Option.shares``)."""
    energy_source: str = "modelled"
    """How ``energy_j`` is known: ``modelled`` (catalogue power) or ``measured`` (power measured by ``pearl profile``)."""
    setup_source: str = "modelled"
    """How ``setup_s`` is known (``calibrated``: timed here; ``modelled``: assumed), whatever the latency's source."""
    layers: tuple[LayerCost, ...] = ()
    """Per-layer modelled breakdown of a network kernel with convolutions (empty otherwise)."""
    loop_s: float = 0.0
    """The part of ``latency_s`` that is the training loop's own work per call (an ``env_step``'s:
    ``pearl_py.protocol.kernel.LOOP_WORK``); its source is ``loop_source``."""
    loop_source: str = "modelled"
    normalize_s: float = 0.0
    """The part of ``loop_s`` that is the ``normalize`` transform's work (SB3's VecNormalize: the statistics'
    update and the normalization of a step, or of an off-policy update's sample)."""

    def at(self, threads: int) -> KernelCost:
        """The cost of one call at ``threads`` threads (itself at 1, or where none was costed)."""
        if threads == 1:
            return self
        at = next((t for t in self.threads if t.threads == threads), None)
        return self if at is None else dataclasses.replace(self, latency_s=at.latency_s, energy_j=at.energy_j)


@dataclass(frozen=True)
class DeviceInfo:
    """A device as the plan used it: kind, catalogue model, power, parallel units, pool members."""

    kind: str
    model: str
    idle_w: float
    peak_w: float
    units: int
    members: int = 1


@dataclass(frozen=True)
class SolverInfo:
    """How the plan was found and how sure: ``gap`` to the proven ``bound`` (0 when optimal)."""

    name: str
    optimal: bool
    bound: float
    gap: float
    seconds: float


@dataclass(frozen=True)
class Figures:
    """A plan's steady-state figures (modelled): speed, efficiency, power, what limits it."""

    samples_per_s: float
    samples_per_j: float
    power_w: float
    time_per_sample_s: float
    energy_per_sample_j: float
    bottleneck: str


@dataclass(frozen=True)
class Alternative:
    """The other objective's plan, for the report's side-by-side table."""

    objective: str
    figures: Figures
    placements: Mapping[str, Placement]


@dataclass(frozen=True)
class ParetoPoint:
    """One plan of the throughput-power Pareto front."""

    samples_per_s: float
    samples_per_j: float
    power_w: float
    placements: Mapping[str, Placement]


@dataclass(frozen=True)
class WholeRun:
    """The modelled time of a whole run: process start-up, warm-up, learning phase, one-off setups
    (docs/optimizer.md)."""

    env_steps: int
    warmup_steps: int
    warmup_s: float
    learning_s: float
    setup_s: float
    seconds: float
    warmup_samples_per_s: float
    samples_per_s: float
    source: str = "modelled"
    startup_s: float = 0.0
    """Starting the runtime's child processes (actors) before training, in ``seconds``; 0 for a plan run in one
    process (serialized). How it is known: ``startup_source``."""
    startup_source: str = "modelled"
    """``calibrated`` (``pearl profile`` timed a process start here) or ``modelled`` (assumed)."""


@dataclass(frozen=True)
class CpuGpuRatio:
    """Actor cores per GPU that runs the learner (None when the learner is on no GPU)."""

    actor_cores: int
    learner_gpus: int
    ratio: float | None


@dataclass(frozen=True)
class PlatformInfo:
    """The platform the plan was made for: its name, description and devices (name, kind, model, node)."""

    name: str
    description: str = ""
    devices: tuple[Mapping[str, Any], ...] = ()
    links: tuple[Mapping[str, Any], ...] = ()
    counters: Mapping[str, bool] = field(default_factory=dict)


@dataclass(frozen=True)
class Simulation:
    """What a discrete-event simulation of the plan measured (every figure ``simulated``, docs/simulator.md)."""

    samples_per_s: float
    run_samples_per_s: float
    elapsed_s: float
    env_steps: int
    updates: int
    utilization: Mapping[str, float]
    bottleneck: str
    energy_per_sample_j: float
    samples_per_j: float
    power_w: float
    timeline: tuple[tuple[str, float, float, str], ...] = ()
    source: str = "simulated"


@dataclass(frozen=True)
class Trial:
    """One candidate plan trialled by ``--tune``: its prediction and what its trial measured."""

    rank: int
    executor: str
    mode: str
    placements: Mapping[str, Placement]
    predicted_samples_per_s: float | None
    predicted_source: str
    measured_samples_per_s: float | None = None
    window_env_steps: int | None = None
    window_s: float | None = None
    trial_env_steps: int | None = None
    trial_s: float | None = None
    error: str | None = None
    kept: bool = False
    source: str = "measured"


@dataclass(frozen=True)
class Tuning:
    """The record of ``--tune``: every trial, the one kept and why, and what tuning cost."""

    top_k: int
    seconds: float
    kept: int
    reason: str
    tuning_s: float
    trials: tuple[Trial, ...]


@dataclass(frozen=True)
class Prediction:
    """What the performance model predicts for a plan (every figure modelled unless it says otherwise)."""

    figures: Figures
    solver: SolverInfo
    costs: Mapping[str, Mapping[str, Mapping[str, KernelCost]]]
    """``costs[kernel][device][variant]``: every option the optimizer weighed, with its source."""
    rates: Mapping[str, float]
    """Calls per collected sample of each kernel (as the runtime runs it)."""
    kinds: Mapping[str, str]
    """Each kernel's kind."""
    devices: Mapping[str, DeviceInfo]
    throttled: bool = False
    busy_s: Mapping[str, float] = field(default_factory=dict)
    link_busy_s: Mapping[str, float] = field(default_factory=dict)
    utilization: Mapping[str, float] = field(default_factory=dict)
    cpu_gpu_ratio: CpuGpuRatio | None = None
    infeasible: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    variant_notes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    power_cap_w: float | None = None
    limit: str = ""
    """What limits throughput, in words."""
    threads: tuple[str, ...] = ()
    """Why a threaded kernel runs the threads it does, in words."""
    comparison: str = ""
    alternative: Alternative | None = None
    pareto: tuple[ParetoPoint, ...] = ()
    platform: PlatformInfo | None = None
    horizon: float | None = None
    run: WholeRun | None = None
    simulation: Simulation | None = None
    tuning: Tuning | None = None

    # figures read often enough to deserve a name
    @property
    def samples_per_s(self) -> float:
        return self.figures.samples_per_s

    @property
    def samples_per_j(self) -> float:
        return self.figures.samples_per_j

    @property
    def bottleneck(self) -> str:
        return self.figures.bottleneck

    def cost(self, kernel: str, device: str, variant: str = "reference") -> KernelCost | None:
        """The recorded cost of one call of ``kernel`` on ``device`` as ``variant`` (None if not weighed)."""
        return self.costs.get(kernel, {}).get(device, {}).get(variant)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (prediction.json); :meth:`from_dict` reads it back."""
        return _plain(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Prediction:
        """Read :meth:`to_dict`'s data."""
        return _build(cls, data)


@dataclass(frozen=True)
class MadeFor:
    """What a plan was made for: the algorithm, the env and the kernels of its protocol (``algo.protocol()``), a
    plan file's ``made_for``, so a plan given to another config is refused by name
    (:func:`pearl_py.pipeline.plan_check.check_plan`)."""

    algorithm: str
    env: str
    kernels: tuple[str, ...]

    def describe(self) -> str:
        return f"{self.algorithm} on {self.env}"


@dataclass(frozen=True)
class Plan:
    """An assignment of every kernel of a protocol to a device, and the model's prediction for it.

    ``devices`` maps every device a placement names to its kind; ``prediction`` is None for a
    hand-made plan (or a plan file without its prediction.json); ``made_for`` is None for a plan made from a
    bare protocol, by hand or by an older pearl_py (its kernels are then checked alone).
    """

    platform: str
    objective: str
    placements: Mapping[str, Placement]
    mode: str = "overlapped"
    devices: Mapping[str, str] = field(default_factory=dict)
    solver: str = "none"
    prediction: Prediction | None = None
    made_for: MadeFor | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise PlanningError(f"plan mode must be one of {', '.join(MODES)}, got {self.mode!r}")

    @classmethod
    def single_device(cls, protocol: Any, device: str = "cpu", platform: str = "local", kind: str = "cpu") -> Plan:
        """Every kernel on one device with its reference implementation, stages in series (the serial
        executor's plan; an executor given it explicitly runs it its own way)."""
        return cls(platform=platform, objective="none", placements={k.name: Placement(device) for k in protocol.kernels()},
                   mode="serialized", devices={device: kind}, solver="single-device")

    @property
    def serialized(self) -> bool:
        """Whether the stages run one after another (the serial executor's kind of plan)."""
        return self.mode == "serialized"

    @property
    def learner_threads(self) -> int:
        """Threads of the learner: the replicas of the kernel of a threaded kind (1 when the plan has none)."""
        declared = {str(k): k for k in KernelKind}
        threaded = [p for name, p in self.placements.items() if name in declared and declared[name].threaded]
        return threaded[0].replicas if threaded else 1

    def variant(self, kernel: str) -> str:
        """The implementation variant ``kernel`` is placed as ("reference" for a kernel the plan does not place)."""
        placement = self.placements.get(kernel)
        return placement.variant if placement is not None else "reference"

    def device_kind(self, device: str) -> str:
        """The kind of a device a placement names (``cpu``, ``gpu``, ``fpga``, ...)."""
        try:
            return self.devices[device]
        except KeyError:
            raise PlanningError(f"plan: device {device!r} has no kind; the plan's devices: "
                                f"{', '.join(f'{d} ({k})' for d, k in self.devices.items()) or 'none'}") from None

    def with_prediction(self, prediction: Prediction) -> Plan:
        """The same plan with another prediction (a simulation or a tuning record added)."""
        return dataclasses.replace(self, prediction=prediction)

    def to_dict(self, prediction: bool = True) -> dict[str, Any]:
        """plan.yaml's data (``prediction=False``) or plan.json's (the prediction inline)."""
        data = {"format": FORMAT, "platform": self.platform, "objective": self.objective, "solver": self.solver,
                "mode": self.mode, "devices": dict(self.devices),
                "placements": {name: dataclasses.asdict(p) for name, p in self.placements.items()}}
        if self.made_for is not None:
            data["made_for"] = {**dataclasses.asdict(self.made_for), "kernels": list(self.made_for.kernels)}
        if prediction and self.prediction is not None:
            data["prediction"] = self.prediction.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Plan:
        """A plan from :meth:`to_dict`'s data."""
        prediction = data.get("prediction")
        placements = {k: Placement(**v) for k, v in data["placements"].items()}
        devices = dict(data.get("devices") or {})
        missing = sorted({p.device for p in placements.values()} - set(devices))
        if missing:  # a hand-written plan: the kinds are its platform's
            devices.update(platform_kinds(data["platform"], missing))
        made_for = data.get("made_for")
        return cls(platform=data["platform"], objective=data["objective"], solver=data.get("solver", "none"),
                   placements=placements, mode=data.get("mode") or "overlapped", devices=devices,
                   prediction=Prediction.from_dict(prediction) if prediction else None,
                   made_for=MadeFor(made_for["algorithm"], made_for["env"], tuple(made_for["kernels"]))
                   if made_for else None)


def platform_kinds(platform: str, devices: list[str]) -> dict[str, str]:
    """The kinds of ``devices`` on ``platform`` (``local`` or a catalogue name or path); a device it does
    not have is a :class:`PlanningError` naming it and the platform's devices."""
    from pearl_py.platform import Platform

    target = Platform.local() if platform == "local" else Platform.load(platform)
    unknown = [d for d in devices if d not in target.devices]
    if unknown:
        raise PlanningError(f"plan: platform {platform!r} has no device {unknown[0]!r}; its devices: "
                            f"{', '.join(target.devices)}")
    return {d: target.devices[d].kind for d in devices}


# -- plain data <-> the frozen dataclasses above -------------------------------------------------------
def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def _build(hint: Any, data: Any) -> Any:
    """``data`` (plain, from JSON or YAML) as the type ``hint`` (dataclasses, mappings, tuples, optionals)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint)
        known = {f.name for f in dataclasses.fields(hint)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"{hint.__name__} has no field {sorted(unknown)[0]!r}")
        return hint(**{k: _build(hints[k], v) for k, v in data.items()})
    if origin in (typing.Union, types.UnionType):
        if data is None:
            return None
        options = [a for a in args if a is not type(None)]
        return _build(options[0], data)
    if origin in (Mapping, dict) or hint in (Mapping, dict):
        value_type = args[1] if args else Any
        return {k: _build(value_type, v) for k, v in dict(data).items()}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_build(args[0], v) for v in data)
        return tuple(_build(a, v) for a, v in zip(args, data))
    if hint is float and isinstance(data, (str, int)):
        return float(data)
    return data
