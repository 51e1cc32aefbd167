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
from pearl_py.protocol.kernel import LEARNER_UPDATE


@dataclass(frozen=True)
class Placement:
    """Where one kernel runs: a device of the platform, an implementation variant, replicas.

    ``replicas`` of a replicable kernel (``env_step``, ``inference``) are its processes; of
    ``learner_update`` they are the learner's threads (torch intra-op threads of the learner
    process; the optimizer plans them where the estimator costs more than one, docs/optimizer.md).
    """

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

    @property
    def learner_threads(self) -> int:
        """Torch threads of the learner: ``learner_update``'s replicas (1 when the plan has none)."""
        learner = self.placements.get(LEARNER_UPDATE)
        return learner.replicas if learner is not None else 1

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

    def export(self, directory: str | Path, run: dict[str, Any] | None = None) -> dict[str, Path]:
        """Write ``plan.yaml``, ``plan.json``, ``report.md`` and a self-contained ``report.html`` (atomically).

        ``run``: a run's result.json data; the reports then set what was measured beside the predictions.
        """
        from pearl_py.report.export import export_plan

        return export_plan(self, Path(directory), run)

    @classmethod
    def load(cls, path: str | Path) -> Plan:
        """Read a ``plan.yaml`` or ``plan.json`` written by :meth:`export`."""
        from pearl_py.config.yaml_source import YamlDocument

        doc = YamlDocument.load(path)  # JSON is YAML too
        data = doc.data
        if not isinstance(data, dict):
            raise doc.error((), "a plan file is a mapping with platform, objective and placements")
        for key in ("platform", "objective", "placements"):
            if key not in data:
                raise doc.error((), f"missing key {key!r}")
        if not isinstance(data["placements"], dict) or not data["placements"]:
            raise doc.error(("placements",), "must map kernel names to {device, variant, replicas}")
        for kernel, entry in data["placements"].items():
            if not isinstance(entry, dict) or "device" not in entry:
                raise doc.error(("placements", kernel), "needs a device")
            unknown = set(entry) - {"device", "variant", "replicas"}
            if unknown:
                raise doc.error(("placements", kernel, sorted(unknown)[0]), "unknown key")
            replicas = entry.get("replicas", 1)
            if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 1:
                raise doc.error(("placements", kernel, "replicas"), f"must be an integer >= 1, got {replicas!r}")
        return cls.from_dict(data)
