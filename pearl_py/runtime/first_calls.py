"""The off-policy start-up warm-up: each process calls the kernels it owns once before its clock or its first timed
call, so that one-off first-call costs (numba compiling, or loading from its cache, the run's specializations; a
torch op's first dispatch) are measured start-up and not inside the first timed ``replay_insert``,
``replay_sample`` and ``inference`` (docs/reports.md, "First calls are paid in the start-up"). Every off-policy
executor calls it where a process builds its replay or its inference (on-policy: ``kernels.on_policy.warm_up``).

Example (a process that owns both, as the serial executor)::

    >>> warm_up(algo, replay_device=torch.device("cpu"), infer=infer)
"""
from __future__ import annotations

import numpy as np
import torch

from pearl_py.algorithms.off_policy.base import Algorithm
from pearl_py.kernels.inference import Inference


def warm_up(algorithm: Algorithm, *, replay_device: torch.device | str | None = None,
            infer: Inference | None = None) -> None:
    """Call ``algorithm``'s replay kernels on a small throwaway replay of its kind and dtypes (where this process
    owns a replay on ``replay_device``; one on a GPU compiles nothing) and ``infer`` once, greedily, on zero
    observations. Neither changes the run's state: the throwaway is closed and a greedy act draws from no
    generator (the pinned runs stay bit for bit)."""
    cfg, spec = algorithm.config, algorithm.spec

    def zeros(rows: int) -> np.ndarray:  # observations as the env makes them: float32 vectors or uint8 frames
        return np.zeros((rows, *spec.obs_shape), spec.obs_dtype)

    if replay_device is not None and torch.device(replay_device).type == "cpu":
        rows = 2
        action = np.zeros((rows, *spec.action_shape), spec.action_dtype)
        with algorithm.make_replay(seed=0, capacity=max(cfg.batch_size, 64)) as throwaway:
            throwaway.add(zeros(rows), action, np.zeros(rows, np.float32), zeros(rows), np.zeros(rows, bool))
            batch = throwaway.sample(cfg.batch_size)
            if throwaway.prioritized:
                throwaway.update_priorities(batch.indices, np.ones(len(batch.indices), np.float32))
    if infer is not None:
        infer(zeros(cfg.n_envs), explore=False, progress=0.0)
