"""What a :class:`Plan` means for the on-policy executors.

``env_step``'s replicas are the actor processes of the parallel runtime (each steps its share of the
envs, ``RolloutSchedule.env_split``; at most ``n_envs``); ``inference`` runs in every actor, on its
envs, as the plan's variant; ``learner_update``'s device, variant and replicas are the learner's
torch device, minibatch kernel and threads. The advantage scan and the parameter publication run
in the learner process. Kernels planned on a simulated device (an FPGA) run on the CPU and are
charged their modelled latency (as the off-policy runtime does).

Example::

    >>> layout = OnPolicyLayout.from_plan(plan, algo)
    >>> layout.actors, layout.inference_variant, layout.learner_variant
    (2, 'fused', 'fused')
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from pearl_py.errors import UserError
from pearl_py.plan import Plan
from pearl_py.protocol.kernel import ENV_STEP, INFERENCE, LEARNER_UPDATE
from pearl_py.runtime.kernel_devices import SimulatedKernel, simulated_kernels
from pearl_py.runtime.parallel.placement import _apart, require_placements, torch_device


@dataclass(frozen=True)
class OnPolicyLayout:
    """Actors, the inference variant, the learner's device, variant and threads; modelled kernels' latencies."""

    actors: int
    inference_variant: str
    learner_device: torch.device
    learner_variant: str
    learner_threads: int = 1
    simulated: dict[str, SimulatedKernel] = field(default_factory=dict)
    """Every kernel planned on a simulated device (the FPGA): its modelled latency per call and label."""

    @classmethod
    def from_plan(cls, plan: Plan, algorithm: Any) -> OnPolicyLayout:
        """The plan's layout for ``algorithm``'s envs (a UserError names a placement the runtime cannot run)."""
        require_placements(plan, (ENV_STEP, INFERENCE, LEARNER_UPDATE))
        env, inference = plan.placements[ENV_STEP], plan.placements[INFERENCE]
        n_envs = algorithm.config.n_envs
        if not 1 <= env.replicas <= n_envs:
            raise UserError(f"plan: env_step has {env.replicas} replicas (actors) but the run has {n_envs} envs to "
                            "split among them")
        if _apart(plan, inference.device, env.device):
            raise UserError(f"plan: inference on {inference.device!r} apart from env_step on {env.device!r}: the "
                            "on-policy runtime runs inference in its actors, beside their envs")
        learner = plan.placements[LEARNER_UPDATE]
        return cls(actors=env.replicas, inference_variant=inference.variant,
                   learner_device=torch_device(plan, learner.device), learner_variant=learner.variant,
                   learner_threads=plan.learner_threads, simulated=simulated_kernels(plan))

    def describe(self) -> dict[str, Any]:
        """The layout in words and figures (``result.json``'s ``layout``, the report's summary)."""
        return {"actors": self.actors, "learner_device": str(self.learner_device),
                "learner_variant": self.learner_variant, "learner_threads": self.learner_threads,
                "inference_variant": self.inference_variant,
                INFERENCE: "on each actor (batched over its share of the envs)",
                "rollout": "shared memory, each actor writing its envs' columns",
                "modelled_kernels": sorted(self.simulated)}
