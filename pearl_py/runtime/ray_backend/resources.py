"""The Ray resources a plan gives each component: actors, the replay server, the learner.

A component takes its kernel's device as its kind maps it (``ray_resource``: ``num_cpus``, ``num_gpus``, or a custom
resource for a simulated device). Components on one device share it (the replay and the learner on one CPU take
half a core each); every actor replica takes one core.

Example::

    >>> res = component_resources(Plan.single_device(algo.protocol()))
    >>> res["actor"], res["replay"], res["learner"]
    ({'num_cpus': 1.0}, {'num_cpus': 0.5}, {'num_cpus': 0.5})
    >>> needs(res, actors=2)
    {'CPU': 3.0}
    >>> on_policy_resources(ppo_plan)          # on-policy: actors and a learner, no replay
    {'actor': {'num_cpus': 1.0}, 'learner': {'num_cpus': 1.0}}
"""
from __future__ import annotations

from collections import defaultdict

from pearl_py.plan import Plan
from pearl_py.protocol.kernel import ENV_STEP, INFERENCE, LEARNER_UPDATE, REPLAY_INSERT
from pearl_py.runtime.parallel.placement import runtime_of


def _options(plan: Plan, device: str, share: float) -> dict[str, object]:
    resource = runtime_of(plan, device).ray_resource
    if resource == "CPU":
        return {"num_cpus": share}
    if resource == "GPU":
        return {"num_cpus": 0.0, "num_gpus": share}
    return {"num_cpus": 0.0, "resources": {resource: share}}


def component_resources(plan: Plan) -> dict[str, dict[str, object]]:
    """``{"actor" | "replay" | "learner": Ray actor options}`` (``num_cpus``, ``num_gpus``, ``resources``)."""
    places = plan.placements
    actors = max(places[ENV_STEP].replicas, 1)
    actor = {"num_cpus": 1.0}
    inference = places[INFERENCE]
    if inference.device != places[ENV_STEP].device and runtime_of(plan, inference.device).ray_resource != "CPU":
        extra = _options(plan, inference.device, 1.0 / actors)
        actor.update({k: v for k, v in extra.items() if k != "num_cpus"})
    replay_dev, learner_dev = places[REPLAY_INSERT].device, places[LEARNER_UPDATE].device
    share = 0.5 if replay_dev == learner_dev else 1.0
    return {"actor": actor, "replay": _options(plan, replay_dev, share),
            "learner": _options(plan, learner_dev, share)}


def on_policy_resources(plan: Plan) -> dict[str, dict[str, object]]:
    """``{"actor" | "learner": Ray actor options}`` of an on-policy run: an actor takes a core (its inference runs
    beside its envs); the learner takes its device, and as many cores as its planned threads on a CPU."""
    learner = plan.placements[LEARNER_UPDATE]
    options = _options(plan, learner.device, 1.0)
    if options.get("num_cpus"):
        options["num_cpus"] = float(max(plan.learner_threads, 1))
    return {"actor": {"num_cpus": 1.0}, "learner": options}


def needs(resources: dict[str, dict[str, object]], actors: int) -> dict[str, float]:
    """Total Ray resources of a run with ``actors`` actor replicas (``CPU``, ``GPU``, ``FPGA``)."""
    total: dict[str, float] = defaultdict(float)
    for name, options in resources.items():
        count = actors if name == "actor" else 1
        total["CPU"] += count * float(options.get("num_cpus", 0.0))
        total["GPU"] += count * float(options.get("num_gpus", 0.0))
        for custom, amount in dict(options.get("resources") or {}).items():
            total[custom] += count * float(amount)
    return {k: round(v, 6) for k, v in total.items() if v > 0}
