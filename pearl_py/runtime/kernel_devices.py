"""Where a plan's kernels execute on this machine, and whether this machine can run the plan as planned.

A kernel executes on the torch device its kind's :class:`~pearl_py.platform.runtimes.DeviceRuntime` gives (a
simulated kind's on the host CPU, charged its modelled latency). :func:`plan_problems` lists every way this machine
cannot run a plan; :func:`check_runnable` raises the first as a :class:`~pearl_py.errors.UserError` before anything
starts (docs/runtime.md, "Plans run where they say").

Example::

    >>> kernel_devices(plan)["learner_update"], kernel_devices(plan)["replay_sample"]
    (device(type='cuda', index=0), device(type='cuda', index=0))
    >>> plan_problems(gpu_plan, device_counts={"cuda": 0}, family="off_policy")[0]
    "plan: learner_update is placed on gpu0 (a gpu device), but this machine has no CUDA device ..."
    >>> simulated_kernels(fpga_plan)["replay_sample"]
    SimulatedKernel(latency_s=2.1e-06, label='modelled (simulated FPGA)')
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from pearl_py.errors import UserError
from pearl_py.plan import Plan
from pearl_py.platform.kinds import device_kind
from pearl_py.platform.runtimes import runtime_of
from pearl_py.protocol.kernel import (
    LEARNER_UPDATE,
    PARAM_SYNC,
    REPLAY_KINDS,
    KernelKind,
)

REPLAY_KERNELS = frozenset(str(k) for k in REPLAY_KINDS)
"""Kernels of the replay's storage (insert, sample, priority update): one replay, on one device."""


def modelled_latency(plan: Plan, kernel: str) -> float:
    """Modelled seconds per call of ``kernel`` on its planned (simulated) device and variant (``plan.prediction``)."""
    p = plan.placements[kernel]
    cost = plan.prediction.cost(kernel, p.device, p.variant) if plan.prediction is not None else None
    if cost is None:
        raise UserError(f"plan: {kernel} is placed on simulated {plan.device_kind(p.device)} device {p.device!r} but "
                        f"the plan has no modelled latency for it (keep prediction.json beside plan.yaml, or make "
                        "the plan again with pearl plan)")
    return cost.at(p.replicas).latency_s


def execution_device(plan: Plan, kernel: str) -> torch.device:
    """The torch device ``kernel`` executes on as placed (the host CPU for cpu and simulated kinds)."""
    device = plan.placements[kernel].device
    return device_kind(plan.device_kind(device)).device_runtime.torch_device(device)


def kernel_devices(plan: Plan) -> dict[str, torch.device]:
    """Every placed kernel's execution device (:func:`execution_device`)."""
    return {kernel: execution_device(plan, kernel) for kernel in plan.placements}


def timing_devices(plan: Plan) -> dict[str, torch.device]:
    """The device whose clock times each kernel: where it executes, except ``param_sync``, which reads the
    learner's parameters and so is timed on the learner's device when that is a GPU (a host clock there
    would charge it the learner's queued work)."""
    devices = kernel_devices(plan)
    learner = devices.get(LEARNER_UPDATE)
    if PARAM_SYNC in devices and learner is not None and learner.type != "cpu":
        devices[PARAM_SYNC] = learner
    return devices


def learner_timing_devices(learner: torch.device) -> dict[str, torch.device]:
    """The on-policy executors' event-timed kernels (the learner's step and the copy out of its weights) on the
    learner's device; their other kernels end on the host, so the host clock times them whole."""
    return {LEARNER_UPDATE: learner, PARAM_SYNC: learner}


@dataclass(frozen=True)
class SimulatedKernel:
    """A kernel placed on a simulated device: the latency it is charged per call and how it is labelled."""

    latency_s: float
    label: str


def simulated_kernels(plan: Plan) -> dict[str, SimulatedKernel]:
    """Kernels on a simulated device (run on the host CPU), with their modelled latency per call."""
    out = {}
    for kernel, placement in plan.placements.items():
        kind = device_kind(plan.device_kind(placement.device))
        if kind.simulated:
            out[kernel] = SimulatedKernel(modelled_latency(plan, kernel), f"modelled (simulated {kind.name.upper()})")
    return out


def _variant_problem(plan: Plan, kernel: str, device: torch.device, family: str) -> str | None:
    from pearl_py.kernels import FAMILY_REGISTRIES

    registry = FAMILY_REGISTRIES.get(family)  # the algorithm family's implementations
    if registry is None:
        return None  # a family without variants (a user's): its executor builds its own kernels

    placement = plan.placements[kernel]
    declared = {str(k): k for k in KernelKind}
    kind = (plan.prediction.kinds.get(kernel, kernel) if plan.prediction is not None else kernel)
    if kind not in declared:
        return None  # a kernel of a user's own kind: the runtime does not build it by variant
    device_class = runtime_of(device).variant_class
    variants = registry.variants(declared[kind], device_class)
    if not variants:
        if placement.variant != "reference":
            return (f"plan: {kernel} is placed on {placement.device} as variant {placement.variant!r}, but pearl_py "
                    f"has one implementation of {kind} ('reference')")
        return None
    try:
        variant = registry.get(declared[kind], placement.variant, device_class)
    except KeyError:
        known = ", ".join(repr(v.name) for v in variants)
        return (f"plan: {kernel} is placed on {placement.device} as variant {placement.variant!r}, which pearl_py has "
                f"no {device_class} implementation of (it has {known})")
    ok, why = variant.available()
    if not ok:
        return f"plan: {kernel} variant {placement.variant!r} on {placement.device} cannot run on this machine: {why}"
    return None


def plan_problems(plan: Plan, device_counts: Mapping[str, int] | None = None, *, family: str) -> list[str]:
    """Every reason this machine cannot run ``plan`` as planned (empty: it can); each one line naming the kernel
    and the device. ``device_counts``: the devices here per numbered runtime (``{"cuda": 1}``; a runtime left out:
    what torch sees); ``family``: whose kernel implementations run (the algorithm's family)."""
    counts = dict(device_counts or {})
    problems: list[str] = []
    devices: dict[str, torch.device] = {}
    for kernel, placement in plan.placements.items():
        try:
            kind = device_kind(plan.device_kind(placement.device))
        except (KeyError, UserError) as exc:
            problems.append(f"plan: {kernel} is placed on {placement.device}: {exc.args[0]}")
            continue
        device = execution_device(plan, kernel)
        devices[kernel] = device
        runtime = kind.device_runtime
        if runtime.indexed:
            here = counts.setdefault(runtime.name, runtime.device_count())
            named = runtime.torch_type.upper()
            if here == 0:
                problems.append(f"plan: {kernel} is placed on {placement.device} (a {kind.name} device), but this "
                                f"machine has no {named} device (torch.{runtime.torch_type}.is_available() is False)")
                continue
            if device.index >= here:
                problems.append(f"plan: {kernel} is placed on {placement.device} ({device}), but this machine has "
                                f"{here} {named} device{'s' if here > 1 else ''} ({device.type}:0 .. "
                                f"{device.type}:{here - 1})")
                continue
        if kind.simulated:
            try:
                modelled_latency(plan, kernel)
            except UserError as exc:
                problems.append(str(exc))
                continue
        problem = _variant_problem(plan, kernel, device, family)
        if problem is not None:
            problems.append(problem)
    problems += _replay_problems(plan, devices)
    return problems


def _replay_problems(plan: Plan, devices: dict[str, torch.device]) -> list[str]:
    """The replay lives on one device: its kernels together, and beside the learner when on a GPU."""
    replay = {k: devices[k] for k in plan.placements if k in devices and k in REPLAY_KERNELS}
    if not replay:
        return []
    where = sorted(set(replay.values()), key=str)
    if len(where) > 1:
        spread = ", ".join(f"{k} on {plan.placements[k].device} ({d})" for k, d in replay.items())
        return [(f"plan: the replay's kernels are placed on {len(where)} devices ({spread}); one replay lives on "
                 "one device: place them together")]
    device = where[0]
    learner = devices.get(LEARNER_UPDATE)
    if device.type != "cpu" and learner is not None and learner != device:
        kernel = next(iter(replay))
        return [(f"plan: {kernel} is placed on {plan.placements[kernel].device} ({device}) apart from the learner "
                 f"({plan.placements[LEARNER_UPDATE].device}, {learner}): a replay on a GPU lives in the learner's "
                 "process and hands it batches on its device; place learner_update there too")]
    return []


def device_of(part: Any) -> str:
    """Where a built part of a run lives: a module's parameters' device, a replay's device (the numpy buffer: cpu)."""
    if isinstance(part, torch.nn.Module):
        return str(next(part.parameters()).device)
    return str(getattr(part, "device", "cpu"))


def check_runnable(plan: Plan, device_counts: Mapping[str, int] | None = None, *, family: str) -> None:
    """Raise :class:`UserError` with the first of :func:`plan_problems` (and how many more), if any."""
    problems = plan_problems(plan, device_counts, family=family)
    if problems:
        more = f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})" if len(problems) > 1 else ""
        raise UserError(problems[0] + more)
