"""Random small assignment problems for property tests (all figures drawn from a seeded RNG)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from pearl_py.optimize.problem import (
    AssignmentProblem,
    Device,
    Edge,
    Link,
    Option,
    Task,
)


def random_problem(seed: int, power_cap: bool = False, threaded: bool = False) -> AssignmentProblem:
    """2-4 kernels (one or two replicable), 2-3 devices (a CPU with 1-3 cores), 1-2 variants, links, resources;
    the first one or two kernels often form the acting stage of a policy-lag bound (``overlap`` < 1).

    ``threaded``: every non-replicable kernel's CPU options also cost 2 and 3 threads (latency 0.3-1.3x,
    energy 0.8-2.5x the one-thread call's, from their own stream: the other draws stay as they were)."""
    rng = np.random.default_rng(seed)
    lag = np.random.default_rng(seed + 10_000)  # its own stream: the other draws stay as they were
    n_tasks = int(rng.integers(2, 5))
    n_acting = int(lag.integers(0, 3))
    tasks = tuple(Task(f"k{i}", rate=float(rng.choice([1.0, 0.5, 0.25, 0.125])),
                       replicable=bool(i < 2 and rng.random() < 0.6),
                       stage="act" if i < n_acting else "train" if i == n_tasks - 1 else
                       "intake" if i == n_acting and lag.random() < 0.5 else "") for i in range(n_tasks))
    kinds = ["cpu", "gpu", "fpga"][: int(rng.integers(2, 4))]
    devices = {}
    for kind in kinds:
        idle = float(rng.uniform(5, 60))
        devices[kind] = Device(kind, kind, units=int(rng.integers(1, 4)) if kind == "cpu" else 1,
                               idle_w=idle, peak_w=idle + float(rng.uniform(10, 300)),
                               capacity={"dsp": 100.0} if kind == "fpga" else {})
    variants = ["reference", "compiled"][: int(rng.integers(1, 3))]
    options = {}
    for task in tasks:
        for kind in kinds:
            for v in variants:
                if rng.random() < 0.25 and (task.name, "cpu", "reference") != (task.name, kind, v):
                    continue  # this kernel cannot run here
                resources = {"dsp": float(rng.integers(20, 80))} if kind == "fpga" else {}
                options[(task.name, kind, v)] = Option(latency_s=float(rng.uniform(1e-5, 1e-3)),
                                                       energy_j=float(rng.uniform(1e-5, 1e-2)),
                                                       resources=resources,
                                                       instance="tree" if kind == "fpga" and rng.random() < 0.3 else "")
    if threaded:
        draw = np.random.default_rng(seed + 20_000)
        for (name, kind, v), option in sorted(options.items()):
            if kind == "cpu" and not next(t for t in tasks if t.name == name).replicable:
                options[(name, kind, v)] = replace(option, threads=tuple(
                    (option.latency_s * float(draw.uniform(0.3, 1.3)), option.energy_j * float(draw.uniform(0.8, 2.5)))
                    for _ in range(2)))
    edges = tuple(Edge(f"k{i}", f"k{i + 1}", bytes=float(rng.integers(64, 200_000)), rate=tasks[i].rate)
                  for i in range(n_tasks - 1))
    links = {f"pcie-{k}": Link(float(rng.uniform(1e-6, 2e-5)), float(rng.uniform(5e9, 30e9)))
             for k in kinds if k != "cpu"}
    routes = {}
    for a in kinds:
        for b in kinds:
            if a != b:
                routes[(a, b)] = tuple(f"pcie-{k}" for k in (a, b) if k != "cpu")
    cap = None
    if power_cap:
        cap = float(sum(d.idle_w for d in devices.values()) * rng.uniform(0.6, 1.6))
    return AssignmentProblem(tasks, devices, options, edges, links, routes,
                             serialized=bool(rng.random() < 0.2), power_cap_w=cap, name=f"random-{seed}",
                             overlap=float(lag.choice([1.0, 0.5, 0.1, 0.0])))
