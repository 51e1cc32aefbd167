"""Central batched inference: one server process acts for every actor, on the planned device.

Each actor posts its observations to its request ring and waits on its reply ring (:class:`InferenceClient`). Round
``r`` batches the ``r``-th request of every unfinished actor, in actor order, into one call with the newest
parameters: membership and order do not depend on timing, so the server's seeded random stream is drawn the same in
every run. docs/runtime.md, "Central inference".

Example (an actor's side; :func:`~pearl_py.runtime.parallel.services.start_inference_server`
creates the rings and doorbells and starts the server)::

    >>> policy = InferenceClient(spec.central, control, index=0)
    >>> policy(obs, steps=4096, progress=0.08)       # blocks for one round of the server
    array([1, 0, 0, 1])
    >>> policy.finish()                              # quota done: later rounds go on without this actor
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as np
import torch

from pearl_py import kernels
from pearl_py.algorithms.networks import Networks
from pearl_py.algorithms.off_policy.base import Algorithm
from pearl_py.protocol.kernel import INFERENCE
from pearl_py.protocol.schedule import TrainSchedule
from pearl_py.runtime.collect import PARAM_READ
from pearl_py.runtime.first_calls import warm_up
from pearl_py.runtime.kernel_devices import device_of
from pearl_py.runtime.parallel.control import ControlBlock
from pearl_py.runtime.parallel.params import ParamBoard
from pearl_py.runtime.parallel.process import Doorbell, child_process
from pearl_py.runtime.parallel.ring import ShmRing
from pearl_py.runtime.timing import KernelTimer


def request_fields(algorithm: Algorithm) -> dict[str, tuple[type, tuple[int, ...]]]:
    """One row per env: its observation, the run's global transition count and the actor's progress."""
    spec = algorithm.spec
    return {"obs": (np.dtype(spec.obs_dtype), spec.obs_shape), "steps": (np.int64, ()), "progress": (np.float64, ())}


def reply_fields(algorithm: Algorithm) -> dict[str, tuple[type, tuple[int, ...]]]:
    return {"actions": (algorithm.spec.action_dtype, algorithm.spec.action_shape)}


WAIT_S = 0.05
"""Longest doorbell wait before a waiting side looks at the stop flag again."""


@dataclass(frozen=True)
class InferenceLink:
    """What actor ``i`` needs to reach the server: its two rings and the two doorbells."""

    requests: str
    replies: str
    server: Doorbell
    """The server's doorbell (one for every actor), rung after a request or at the actor's end."""
    reply: Doorbell
    """Rung by the server after this actor's reply."""


class InferenceClient:
    """An actor's side: post ``n_envs`` observations, wait for their actions (a restarted actor first drops the
    answer to its previous generation's request, so every reply it reads answers its own observations)."""

    def __init__(self, link: InferenceLink, control: ControlBlock, index: int) -> None:
        self.requests, self.replies = ShmRing.attach(link.requests), ShmRing.attach(link.replies)
        self.link, self.control, self.index = link, control, index
        while self.replies.head < self.requests.head and not control.stopped:
            link.reply.wait(WAIT_S)
        self.replies.get(self.replies.pending())

    kernel = "inference_request"
    """What the actor's collector records a request as (the server records the ``inference`` itself)."""

    def __call__(self, obs: np.ndarray, steps: int, progress: float) -> np.ndarray | None:
        """Actions for ``obs`` from the server; None if the run stopped while waiting."""
        n = len(obs)
        self.requests.put(obs=obs, steps=np.full(n, steps), progress=np.full(n, progress))
        self.link.server.ring()
        while self.replies.pending() < n:
            if self.control.stopped:
                return None
            self.link.reply.wait(WAIT_S)
        return self.replies.get(n)["actions"]

    def finish(self) -> None:
        """This actor's quota is done: the server's rounds go on without it."""
        self.control.finish(self.index)
        self.link.server.ring()

    def close(self) -> None:
        self.requests.close()
        self.replies.close()


@dataclass(frozen=True)
class InferenceServerSpec:
    """Everything the server process needs (pickled once, at start)."""

    algorithm: Algorithm
    variant: str
    device: str
    seed: int
    total_steps: int
    links: tuple[InferenceLink, ...]
    params: str
    control: str
    error_file: str
    threads: int = 1


def run_inference_server(spec: InferenceServerSpec) -> None:
    """Process entry point: build the inference kernel on the device, serve rounds until the run stops."""
    with child_process(spec.error_file, spec.threads), contextlib.ExitStack() as stack:
        control = ControlBlock.attach(spec.control)
        stack.callback(control.close)
        board = ParamBoard.attach(spec.params)
        stack.callback(board.close)
        requests = [ShmRing.attach(link.requests) for link in spec.links]
        replies = [ShmRing.attach(link.replies) for link in spec.links]
        for ring in requests + replies:
            stack.callback(ring.close)
        InferenceServer(spec, requests, replies, board, control).serve()


class InferenceServer:
    """The server loop (see the module docstring); kernel times go to the control block's inference row."""

    def __init__(self, spec: InferenceServerSpec, requests: list[ShmRing], replies: list[ShmRing],
                 board: ParamBoard, control: ControlBlock) -> None:
        algo = spec.algorithm
        self.requests, self.replies, self.board, self.control = requests, replies, board, control
        self.links = spec.links
        self.n = algo.config.n_envs
        self.schedule = TrainSchedule.from_config(algo.config, spec.total_steps)
        device = torch.device(spec.device)
        torch.manual_seed(spec.seed)
        nets = Networks(algo.build_networks()).to(device)
        self.acting = nets.acting_state(algo.acting_networks)
        self.infer = kernels.build(kernels.KernelKind.INFERENCE, spec.variant, algo, nets,
                                   device_class=kernels.device_class(device))
        warm_up(algo, infer=self.infer)
        self.timer = KernelTimer({INFERENCE: device, PARAM_READ: device})  # CUDA events for a server on a GPU
        self.row = control.service_row(INFERENCE)
        control.set_built_on(INFERENCE, device_of(nets))

    def serve(self) -> None:
        bell = self.links[0].server
        while not self.control.stopped:
            members = self._round()
            if members:
                self._answer(members)
            else:
                bell.wait(WAIT_S)

    def _round(self) -> list[int]:
        """Actors of the next round, once each unfinished actor has posted its request ([] until then)."""
        members = []
        for i, ring in enumerate(self.requests):
            if ring.pending() >= self.n:
                members.append(i)
            elif not self.control.finished(i):
                return []
        return members

    def _answer(self, members: list[int]) -> None:
        n, timer = self.n, self.timer
        rows = [self.requests[i].get(n) for i in members]
        if self.board.has_news():
            with timer(PARAM_READ):
                self.board.read_into(self.acting)
        with timer(INFERENCE):
            actions = self.infer(np.concatenate([r["obs"] for r in rows]), explore=True,
                                 progress=float(rows[0]["progress"][0]))
        self.control.store_times(self.row, timer)  # times first: once an actor has its reply, they count it
        for k, (i, r) in enumerate(zip(members, rows)):
            self.control.note_lag(i, self.schedule.policy_lag(int(r["steps"][0]), self.board.tag))
            self.replies[i].put(actions=actions[k * n:(k + 1) * n])
            self.links[i].reply.ring()
