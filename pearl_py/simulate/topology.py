"""Where every call of a plan lands: physical devices, per-call cost, and the links a transfer crosses.

Actor replica ``i`` runs on member ``i mod members`` of its pool (``pool:epyc-7742x64``); inference placed with
``env_step`` runs on the actor's own device, elsewhere on member ``i mod members`` of its placement. Transfers
cross the problem's routes hop by hop; a threaded kernel costs its ``n``-thread call and holds ``n`` cores.

Example::

    >>> topo = Topology(problem, {ENV_STEP: Choice("pool:epyc-7742x2", replicas=4), ...})
    >>> topo.actor_devices(3)
    ('node1.cpu', 'node1.cpu')
    >>> topo.hops("node1.cpu", "node0.cpu", 120)
    [('node1.cpu->node0.cpu (tcp-40gbe)', 2.5027e-05)]
"""
from __future__ import annotations

from dataclasses import dataclass

from pearl_py.errors import PlanningError
from pearl_py.optimize.model import Assignment, call_cost
from pearl_py.optimize.problem import AssignmentProblem
from pearl_py.protocol.kernel import (
    ENV_STEP,
    INFERENCE,
    LEARNER_UPDATE,
    REPLAY_INSERT,
    REPLAY_SAMPLE,
)

REQUIRED = (ENV_STEP, INFERENCE, REPLAY_INSERT, REPLAY_SAMPLE, LEARNER_UPDATE)
"""The kernels an off-policy plan must place to be simulated (the on-policy simulator names its own)."""


@dataclass(frozen=True)
class Cost:
    """One call of a kernel: seconds on one unit of its device, dynamic joules, and how it is known."""

    latency_s: float
    energy_j: float
    source: str


class Topology:
    """The physical view of ``assignment`` on ``problem`` that the simulated processes use."""

    def __init__(self, problem: AssignmentProblem, assignment: Assignment,
                 required: tuple[str, ...] = REQUIRED) -> None:
        missing = [k for k in required if k not in assignment]
        if missing:
            raise PlanningError(f"simulate: the plan has no placement for {', '.join(missing)}")
        self.problem = problem
        self.assignment = assignment
        self.costs: dict[str, Cost] = {}
        self.threads: dict[str, int] = {}
        """Units one call holds (``AssignmentProblem.cores`` of one call): a threaded kernel's thread count, an env
        backend's worker threads, else 1."""
        for kernel, choice in assignment.items():
            if (kernel, choice.device, choice.variant) not in problem.options:
                raise PlanningError(f"simulate: no cost for {kernel} on {choice.device!r} as {choice.variant!r}")
            option = problem.option(kernel, choice.device, choice.variant)
            threaded = problem.threaded(kernel, choice.device, choice.variant)
            if threaded and choice.replicas not in problem.replica_choices(kernel, choice.device, choice.variant):
                raise PlanningError(f"simulate: {kernel} has no cost at {choice.replicas} threads on {choice.device!r}")
            self.threads[kernel] = problem.cores(kernel, choice.device, choice.variant,
                                                 choice.replicas if threaded else 1)
            self.costs[kernel] = Cost(*call_cost(problem, kernel, choice), option.source)
        self.actors = max(assignment[ENV_STEP].replicas, 1)
        self._edges = {(e.src, e.dst): e.bytes for e in problem.edges}

    def members(self, kernel: str) -> tuple[str, ...]:
        return self.problem.devices[self.assignment[kernel].device].physical

    def device(self, kernel: str) -> str:
        """The physical device of a non-replicated kernel (a pool's first member)."""
        return self.members(kernel)[0]

    def has(self, kernel: str) -> bool:
        return kernel in self.assignment

    def actor_devices(self, index: int) -> tuple[str, str]:
        """``(env_step device, inference device)`` of actor replica ``index``."""
        env = self.members(ENV_STEP)
        env_dev = env[index % len(env)]
        if self.assignment[INFERENCE].device == self.assignment[ENV_STEP].device:
            return env_dev, env_dev
        inf = self.members(INFERENCE)
        return env_dev, inf[index % len(inf)]

    def units(self, device: str) -> int:
        return self.problem.devices[device].units

    def edge_bytes(self, src: str, dst: str) -> float | None:
        """Bytes per transfer on the protocol edge ``src -> dst`` (``None``: no such edge)."""
        return self._edges.get((src, dst))

    def hops(self, a: str, b: str, nbytes: float | None) -> list[tuple[str, float]]:
        """``(link, seconds)`` for every hop from device ``a`` to ``b`` (none when local or no edge)."""
        if nbytes is None or a == b:
            return []
        return [(name, self.problem.links[name].transfer_s(nbytes)) for name in self.problem.route(a, b)]

    def idle_w(self, device: str) -> float:
        return self.problem.devices[device].idle_w
