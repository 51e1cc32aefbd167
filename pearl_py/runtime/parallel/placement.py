"""What a :class:`Plan` means for the local parallel runtime.

``env_step``'s replicas are the actors; ``learner_update`` picks the learner's device, variant and threads.
Inference apart from ``env_step`` runs in a central server (``"central"``), replay kernels apart from the learner in
a replay server (``"server"``); an executor option overrides each. Every device of a ``one_host`` kind counts as
one. docs/runtime.md, "What the plan decides".

Example::

    >>> layout = RuntimeLayout.from_plan(Plan.single_device(algo.protocol()))
    >>> layout.actors, layout.learner_device, layout.inference, layout.replay
    (1, device(type='cpu'), 'actor', 'colocated')
    >>> RuntimeLayout.from_plan(plan, replay="server").describe()["replay"]
    'server process (prefetch 4, strict priority order)'
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from pearl_py.errors import UserError
from pearl_py.plan import Plan
from pearl_py.platform.kinds import DeviceKind, device_kind
from pearl_py.protocol.kernel import (
    ENV_STEP,
    INFERENCE,
    LEARNER_UPDATE,
    REPLAY_INSERT,
    REPLAY_SAMPLE,
)
from pearl_py.runtime.kernel_devices import SimulatedKernel, simulated_kernels

ACTOR_SIDE = (ENV_STEP, INFERENCE)


def runtime_of(plan: Plan, device: str) -> DeviceKind:
    """The registered kind of a device the plan names (its ``device_runtime``: ``cpu``, ``cuda``, ``simulated``)."""
    kind = plan.device_kind(device)
    try:
        return device_kind(kind)
    except KeyError as exc:
        raise UserError(f"plan: device {device!r}: {exc.args[0]}") from None


INFERENCE_MODES = ("actor", "central")
REPLAY_MODES = ("colocated", "server")
REPLAY_ORDERS = ("strict", "relaxed")


def torch_device(plan: Plan, device: str, kernel: str = LEARNER_UPDATE) -> torch.device:
    """The torch device that executes ``kernel`` planned on ``device`` (a simulated device's kernels: the CPU)."""
    kind = runtime_of(plan, device)
    if not kind.device_runtime.available():
        raise UserError(f"plan: {kernel} is placed on {kind.name.upper()} {device!r} but torch sees no "
                        f"{kind.device_runtime.torch_type.upper()} device here")
    return kind.device_runtime.torch_device(device)


def require_placements(plan: Plan, kernels: tuple[str, ...]) -> None:
    """Raise a UserError naming the ``kernels`` the plan does not place."""
    missing = [k for k in kernels if k not in plan.placements]
    if missing:
        raise UserError(f"plan: no placement for kernel(s) {', '.join(missing)}")


def _apart(plan: Plan, a: str, b: str) -> bool:
    """Whether kernels on devices ``a`` and ``b`` run apart: different devices, not both of a one-host kind (the
    CPUs: one host here)."""
    if a == b:
        return False
    kind_a, kind_b = runtime_of(plan, a), runtime_of(plan, b)
    return not (kind_a is kind_b and kind_a.one_host)


def _choose(option: str, value: str | None, allowed: tuple[str, ...], planned: str) -> str:
    if value is None:
        return planned
    if value not in allowed:
        raise UserError(f"{option} must be one of {', '.join(allowed)} (or None: as the plan places it), "
                        f"got {value!r}")
    return value


@dataclass(frozen=True)
class RuntimeLayout:
    """Process layout of a run: actors, where inference and replay run, learner device and variant."""

    actors: int
    learner_device: torch.device
    learner_variant: str
    inference_variant: str
    simulated: dict[str, SimulatedKernel] = field(default_factory=dict)
    """Every kernel planned on a simulated device (the FPGA): its modelled latency per call and label."""
    inference: str = "actor"
    """``actor``: each actor infers for its envs; ``central``: one server batches every actor's requests."""
    inference_device: torch.device = torch.device("cpu")
    """Where the central server runs the inference kernel."""
    replay: str = "colocated"
    """``colocated``: the learner owns the replay; ``server``: a replay server process does."""
    replay_prefetch: int = 4
    """Batches the replay server may draw ahead of the learner."""
    replay_order: str = "strict"
    """Prioritized replay behind a server: ``strict`` (serial order) or ``relaxed`` (up to prefetch - 1 behind)."""
    learner_threads: int = 1
    """Torch threads of the learner process (``Plan.learner_threads``); actors and servers run one."""

    @classmethod
    def from_plan(cls, plan: Plan, *, inference: str | None = None, replay: str | None = None,
                  replay_prefetch: int = 4, replay_order: str = "strict") -> RuntimeLayout:
        """The plan's layout; ``inference``/``replay`` (when not None) override the plan's rules."""
        require_placements(plan, ACTOR_SIDE + (LEARNER_UPDATE, REPLAY_INSERT, REPLAY_SAMPLE))
        placements = plan.placements
        learner = placements[LEARNER_UPDATE]
        central = _apart(plan, placements[INFERENCE].device, placements[ENV_STEP].device)
        served = any(_apart(plan, placements[k].device, learner.device) for k in (REPLAY_INSERT, REPLAY_SAMPLE))
        if isinstance(replay_prefetch, bool) or not isinstance(replay_prefetch, int) or replay_prefetch < 1:
            raise UserError(f"replay_prefetch must be an integer >= 1, got {replay_prefetch!r}")
        inference = _choose(INFERENCE, inference, INFERENCE_MODES, "central" if central else "actor")
        inference_device = (torch_device(plan, placements[INFERENCE].device, INFERENCE)
                            if inference == "central" else torch.device("cpu"))
        return cls(actors=max(placements[ENV_STEP].replicas, 1),
                   learner_device=torch_device(plan, learner.device), learner_variant=learner.variant,
                   inference_variant=placements[INFERENCE].variant, simulated=simulated_kernels(plan),
                   inference=inference, inference_device=inference_device,
                   replay=_choose("replay", replay, REPLAY_MODES, "server" if served else "colocated"),
                   replay_prefetch=replay_prefetch,
                   replay_order=_choose("replay_order", replay_order, REPLAY_ORDERS, "strict"),
                   learner_threads=plan.learner_threads)

    def describe(self) -> dict[str, Any]:
        """The layout in words and figures (``result.json``'s ``layout``, the report's summary)."""
        if self.inference == "central":
            inference = f"central on {self.inference_device} (one server process, batched over the actors)"
        else:
            inference = "on each actor (batched over its envs)"
        if self.replay == "server":
            replay = f"server process (prefetch {self.replay_prefetch}, {self.replay_order} priority order)"
        else:
            replay = "co-located with the learner"
        return {"actors": self.actors, "learner_device": str(self.learner_device),
                "learner_variant": self.learner_variant, "learner_threads": self.learner_threads,
                "inference_variant": self.inference_variant,
                INFERENCE: inference, "replay": replay, "modelled_kernels": sorted(self.simulated)}
