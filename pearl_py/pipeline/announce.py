"""The chosen plan in a few lines, printed before training starts.

Example::

    >>> for line in plan_lines(plan):
    ...     print(line)
    plan: overlapped (actors and learner in parallel), throughput objective on local, solver milp
      env_step        cpu  reference  x2
      inference       cpu  fused
      learner_update  cpu  fused      1 thread
      predicted 4564 samples/s (modelled); Throughput is limited by learner_update on cpu
"""
from __future__ import annotations

import re

from pearl_py.plan import Placement, Plan
from pearl_py.protocol.kernel import LEARNER_UPDATE

MODES = {"overlapped": "overlapped (actors and learner in parallel)",
         "serialized": "serialized (one process, stages in turn)"}


def plan_lines(plan: Plan) -> list[str]:
    """What runs where, and what the model predicts for it (a hand-made plan has no prediction)."""
    head = f"plan: {MODES.get(plan.mode, plan.mode)}"
    if plan.objective != "none":  # an optimized plan
        head += f", {plan.objective} objective on {plan.platform}, solver {plan.solver}"
    lines = [head]
    width = max((len(name) for name in plan.placements), default=0)
    variant_width = max((len(p.variant) for p in plan.placements.values()), default=0)
    for name, place in plan.placements.items():
        lines.append(f"  {name:<{width}}  {place.device}  {place.variant:<{variant_width}}  "
                     f"{_copies(name, place)}".rstrip())
    p = plan.prediction
    if p is None:
        lines.append("  no prediction (a hand-made or serial reference plan): measured figures only")
    else:
        limit = re.split(r"[:;]", p.limit)[0].rstrip(".") if p.limit else f"bottleneck {p.bottleneck}"  # 1st clause
        lines.append(f"  predicted {p.samples_per_s:.0f} samples/s (modelled); {limit}")
    return lines


def _copies(kernel: str, place: Placement) -> str:
    """The learner update's threads; other kernels' processes when more than one."""
    if kernel == LEARNER_UPDATE:
        return f"{place.replicas} thread{'s' if place.replicas > 1 else ''}"
    return f"x{place.replicas}" if place.replicas > 1 else ""
