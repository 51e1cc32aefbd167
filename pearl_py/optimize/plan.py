"""Plan: which device (and which implementation variant) runs each kernel, with how many replicas.

Example::

    >>> plan = Plan.single_device(algo.protocol(), device="cpu")
    >>> plan.placements["learner_update"].device
    'cpu'
    >>> Plan.from_dict(plan.to_dict()) == plan
    True
    >>> sorted(p.name for p in plan.export("out/plan").values())
    ['plan.json', 'plan.yaml', 'report.html', 'report.md']
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pearl_py.protocol import ProtocolGraph


@dataclass(frozen=True)
class Placement:
    """Where one kernel runs: a device of the platform, an implementation variant, replicas."""

    device: str
    variant: str = "reference"
    replicas: int = 1


@dataclass
class Plan:
    """An assignment of every kernel of a protocol to a device, with its predictions.

    ``predicted`` holds the performance model's figures (modelled) when an
    optimizer made the plan; a hand-made plan has none.
    """

    platform: str
    objective: str
    placements: dict[str, Placement]
    predicted: dict[str, Any] = field(default_factory=dict)
    solver: str = "none"

    @classmethod
    def single_device(cls, protocol: ProtocolGraph, device: str = "cpu", platform: str = "local") -> Plan:
        """Every kernel on one device with its reference implementation (the serial executor's plan)."""
        return cls(platform=platform, objective="none",
                   placements={k.name: Placement(device) for k in protocol.kernels()}, solver="single-device")

    def to_dict(self) -> dict[str, Any]:
        return {
            "platform": self.platform,
            "objective": self.objective,
            "solver": self.solver,
            "placements": {name: asdict(p) for name, p in self.placements.items()},
            "predicted": self.predicted,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Plan:
        return cls(platform=data["platform"], objective=data["objective"], solver=data.get("solver", "none"),
                   placements={k: Placement(**v) for k, v in data["placements"].items()},
                   predicted=dict(data.get("predicted") or {}))

    def export(self, directory: str | Path) -> dict[str, Path]:
        """Write ``plan.yaml``, ``plan.json``, ``report.md`` and a self-contained ``report.html`` (atomically)."""
        from pearl_py.report.export import export_plan

        return export_plan(self, Path(directory))
