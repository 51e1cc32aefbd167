"""Starting the run's server processes: the shared segments they use and their supervision.

Each ``start_*`` creates the rings a server talks through (owned by the caller, so unlinked whatever happens to the
server), starts it as a supervised :class:`Service` and registers every clean-up on the caller's ``ExitStack``.

Example::

    >>> with contextlib.ExitStack() as stack:
    ...     served, server = start_replay_server(stack, prefix, algo, control, rings, schedule=schedule, seed=0,
    ...                                  errors=tmp, resume=None, consumed=0, updates=0, prefetch=4,
    ...                                  strict=True)
    ...     batch = served.sample(64, beta=0.4, step=1024)     # the first round's first batch
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

import torch

from pearl_py.algorithms.off_policy.base import Algorithm
from pearl_py.protocol.schedule import TrainSchedule
from pearl_py.runtime.parallel.control import ControlBlock
from pearl_py.runtime.parallel.inference_server import (
    InferenceLink,
    InferenceServerSpec,
    reply_fields,
    request_fields,
    run_inference_server,
)
from pearl_py.runtime.parallel.params import ParamBoard
from pearl_py.runtime.parallel.process import Doorbell, ProcessGuard, unlink_segment
from pearl_py.runtime.parallel.replay_access import ServedReplay
from pearl_py.runtime.parallel.replay_server import (
    EPISODE_FIELDS,
    ReplayServerSpec,
    batch_fields,
    priority_fields,
    run_replay_server,
)
from pearl_py.runtime.parallel.ring import ShmRing
from pearl_py.runtime.parallel.supervisor import Service
from pearl_py.runtime.timing import KernelTimer

MIN_EPISODE_RECORDS = 1024
"""Episode ring slots at least (the server inserts at most one ended episode per free slot)."""


def _ring(stack: contextlib.ExitStack, fields: dict, capacity: int, name: str) -> ShmRing:
    ring = ShmRing.create(fields, capacity, name)
    stack.callback(ring.close)
    return ring


def start_replay_server(stack: contextlib.ExitStack, prefix: str, algorithm: Algorithm, control: ControlBlock,
                        rings: list[ShmRing], *, schedule: TrainSchedule, seed: int, errors: Path,
                        resume: Path | None, consumed: int, updates: int, prefetch: int, strict: bool,
                        timer: KernelTimer | None = None, guard: ProcessGuard | None = None
                        ) -> tuple[ServedReplay, Service]:
    """Start the replay server on ``rings``; returns the learner's side of it and the supervised process.

    ``resume``: the checkpoint whose replay the server continues; ``consumed``/``updates``:
    the transitions in that replay and the learner's gradient steps.
    """
    if prefetch < 1:
        raise ValueError(f"replay_prefetch must be >= 1, got {prefetch}")
    batches = _ring(stack, batch_fields(algorithm), prefetch, f"{prefix}-batches")
    priorities = _ring(stack, priority_fields(algorithm), prefetch + 1, f"{prefix}-priorities")
    episodes = _ring(stack, EPISODE_FIELDS, max(schedule.window, MIN_EPISODE_RECORDS), f"{prefix}-episodes")
    control.consumed, control.completed, control.applied = consumed, updates, updates
    spec = ReplayServerSpec(algorithm, seed, schedule, f"{prefix}-replay", str(resume) if resume else None,
                            tuple(r.name for r in rings), batches.name, priorities.name, episodes.name,
                            control.name, str(errors / "replay.err"), str(errors / "replay-rng.json"),
                            consumed, updates, prefetch, strict, bell=Doorbell(), learner_bell=Doorbell())
    stack.callback(unlink_segment, spec.replay)  # runs after the server is stopped: its leftover, if it crashed
    service = Service("replay server", run_replay_server, spec, spec.error_file, guard)
    stack.callback(service.close, control)
    service.start()
    served = ServedReplay(batches=batches, priorities=priorities, episodes=episodes, control=control,
                          timer=timer or KernelTimer(), replay=spec.replay, rng_file=Path(spec.rng_file),
                          prioritized=algorithm.config.prioritized_replay, inserted=consumed, check=service.check,
                          bell=spec.learner_bell, server_bell=spec.bell)
    return served, service


@dataclass(frozen=True)
class InferenceEndpoints:
    """How actor ``i`` reaches the server (``links[i]``) and the server process behind them."""

    links: list[InferenceLink]
    service: Service


def start_inference_server(stack: contextlib.ExitStack, prefix: str, algorithm: Algorithm, control: ControlBlock,
                           board: ParamBoard, *, actors: int, variant: str, device: torch.device, seed: int,
                           total_steps: int, errors: Path, guard: ProcessGuard | None = None) -> InferenceEndpoints:
    """Create one request and one reply ring (and doorbell) per actor and start the central inference server."""
    n, bell = algorithm.config.n_envs, Doorbell()
    links = [InferenceLink(_ring(stack, request_fields(algorithm), 2 * n, f"{prefix}-infer-req{i}").name,
                           _ring(stack, reply_fields(algorithm), 2 * n, f"{prefix}-infer-rep{i}").name,
                           bell, Doorbell())
             for i in range(actors)]
    spec = InferenceServerSpec(algorithm, variant, str(device), seed, total_steps, tuple(links), board.name,
                               control.name, str(errors / "inference.err"))
    service = Service("inference server", run_inference_server, spec, spec.error_file, guard)
    stack.callback(service.close, control)
    service.start()
    return InferenceEndpoints(links, service)
