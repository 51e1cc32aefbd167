"""What a :class:`Plan` means for the local parallel runtime.

``env_step``'s replicas are the actor processes (inference runs batched on each actor,
with ``inference``'s variant from :mod:`pearl_py.kernels`); ``learner_update``'s device
and variant pick the learner's torch device and update implementation; ``replay_insert``/``replay_sample`` on the learner's device keep the
replay in the learner process. Kernels on a simulated FPGA run on the CPU and are
charged the latency the plan's cost model predicted for them (``plan.predicted``).

Example::

    >>> layout = RuntimeLayout.from_plan(Plan.single_device(algo.protocol()))
    >>> layout.actors, layout.learner_device, layout.modelled_s
    (1, device(type='cpu'), {})
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from pearl_py.errors import UserError
from pearl_py.optimize.plan import Plan

ACTOR_SIDE = ("env_step", "inference")
LEARNER_SIDE = ("replay_insert", "replay_sample", "priority_update", "learner_update", "param_sync")


def device_kind(plan: Plan, device: str) -> str:
    """``cpu``, ``gpu`` or ``fpga``: from the plan's platform description, else from the device name."""
    described = (plan.predicted.get("devices") or {}).get(device)
    if described and "kind" in described:
        return str(described["kind"])
    name = device.lower()
    for kind, prefixes in (("gpu", ("gpu", "cuda")), ("fpga", ("fpga",))):
        if name.startswith(prefixes):
            return kind
    return "cpu"


def modelled_latency(plan: Plan, kernel: str) -> float:
    """Modelled seconds per call of ``kernel`` on its planned device and variant (``predicted.costs``)."""
    p = plan.placements[kernel]
    try:
        return float(plan.predicted["costs"][kernel][p.device][p.variant]["latency_s"])
    except (KeyError, TypeError):
        raise UserError(f"plan: {kernel} is placed on FPGA device {p.device!r} but the plan has no modelled "
                        f"latency for it (predicted.costs.{kernel}.{p.device}.{p.variant}); "
                        "make the plan with pearl plan") from None


def torch_device(plan: Plan, device: str) -> torch.device:
    """The torch device that executes kernels planned on ``device`` (FPGA kernels: the CPU)."""
    if device_kind(plan, device) != "gpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise UserError(f"plan: learner_update is placed on GPU {device!r} but torch sees no CUDA device here")
    digits = "".join(c for c in device if c.isdigit())
    return torch.device(f"cuda:{int(digits) if digits else 0}")


@dataclass(frozen=True)
class RuntimeLayout:
    """Process layout of a run: actor count, learner device and variant, modelled kernels."""

    actors: int
    learner_device: torch.device
    learner_variant: str
    inference_variant: str
    modelled_s: dict[str, float] = field(default_factory=dict)
    """Per-call modelled latency of every kernel planned on a (simulated) FPGA."""

    @classmethod
    def from_plan(cls, plan: Plan) -> RuntimeLayout:
        missing = [k for k in ACTOR_SIDE + ("learner_update", "replay_insert", "replay_sample")
                   if k not in plan.placements]
        if missing:
            raise UserError(f"plan: no placement for kernel(s) {', '.join(missing)}")
        learner = plan.placements["learner_update"]
        modelled = {k: modelled_latency(plan, k) for k, p in plan.placements.items()
                    if device_kind(plan, p.device) == "fpga"}
        return cls(actors=max(plan.placements["env_step"].replicas, 1),
                   learner_device=torch_device(plan, learner.device), learner_variant=learner.variant,
                   inference_variant=plan.placements["inference"].variant, modelled_s=modelled)

    def describe(self) -> dict[str, Any]:
        return {"actors": self.actors, "learner_device": str(self.learner_device),
                "learner_variant": self.learner_variant, "inference_variant": self.inference_variant,
                "modelled_kernels": sorted(self.modelled_s)}
