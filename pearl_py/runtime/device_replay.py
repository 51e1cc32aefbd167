"""The replay on the device the plan puts it on: numpy ``ReplayBuffer`` on a CPU, ``TorchReplayBuffer`` on a GPU.

A replay on a GPU keeps its items and priority tree there (docs/replay.md, "Replay on a torch device"); both buffers
take the algorithm's settings and each other's checkpoints (one ``state_dict`` format).

Example::

    >>> replay = replay_on(algo, seed=0, device=torch.device("cuda:0"))
    >>> type(replay).__name__, replay.device
    ('TorchReplayBuffer', device(type='cuda', index=0))
    >>> replay_on(algo, seed=0, device=torch.device("cpu")).__class__.__name__
    'ReplayBuffer'
"""
from __future__ import annotations

from typing import Any

import torch

from pearl_py.algorithms.off_policy.base import Algorithm
from pearl_py.replay import TorchReplayBuffer
from pearl_py.replay.restore import Replay
from pearl_py.replay.restore import replay_from_state as replay_from_cpu_state


def replay_on(algorithm: Algorithm, seed: int, device: torch.device) -> Replay | TorchReplayBuffer:
    """``algorithm``'s replay (its config's settings) on ``device``: the numpy buffer on the CPU."""
    if torch.device(device).type == "cpu":
        return algorithm.make_replay(seed=seed)
    cfg, spec = algorithm.config, algorithm.spec
    # uint8 frames stay uint8 on the device (both observations stored: the frame ring is the CPU buffer's)
    return TorchReplayBuffer(capacity=cfg.buffer_size, obs_shape=spec.obs_shape, obs_dtype=spec.obs_dtype,
                             action_shape=spec.action_shape, action_dtype=spec.action_dtype,
                             prioritized=cfg.prioritized_replay, alpha=cfg.alpha, fanout=cfg.replay_fanout,
                             seed=seed, device=device)


def replay_from_state(state: dict[str, Any], device: torch.device) -> Replay | TorchReplayBuffer:
    """A checkpointed replay (any buffer's ``state_dict``) restored on ``device``: on the CPU as the class that
    captured it (:func:`pearl_py.replay.restore.replay_from_state`)."""
    if torch.device(device).type == "cpu":
        return replay_from_cpu_state(state)
    return TorchReplayBuffer.load_state_dict(state, device=device)

