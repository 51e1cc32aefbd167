"""The replay on the device the plan puts it on: numpy ``ReplayBuffer`` on a CPU, ``TorchReplayBuffer`` on a GPU.

A replay placed on a GPU keeps its items and priority tree there (docs/replay.md, "Replay on a
torch device"): batches come out as tensors on that device, the learner beside it trains on them
without a copy and hands back its ``|δ|`` tensor where it is. Both buffers take the algorithm's
settings and each other's checkpoints (one ``state_dict`` format).

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
from pearl_py.replay import ReplayBuffer, TorchReplayBuffer


def replay_on(algorithm: Algorithm, seed: int, device: torch.device) -> ReplayBuffer | TorchReplayBuffer:
    """``algorithm``'s replay (its config's settings) on ``device``: the numpy buffer on the CPU."""
    if torch.device(device).type == "cpu":
        return algorithm.make_replay(seed=seed)
    cfg = algorithm.config
    return TorchReplayBuffer(capacity=cfg.buffer_size, obs_shape=(algorithm.spec.obs_dim,),
                             action_shape=algorithm.spec.action_shape, action_dtype=algorithm.spec.action_dtype,
                             prioritized=cfg.prioritized_replay, alpha=cfg.alpha, fanout=cfg.replay_fanout,
                             seed=seed, device=device)


def replay_from_state(state: dict[str, Any], device: torch.device) -> ReplayBuffer | TorchReplayBuffer:
    """A checkpointed replay (either buffer's ``state_dict``) restored on ``device``."""
    if torch.device(device).type == "cpu":
        return ReplayBuffer.load_state_dict(state)
    return TorchReplayBuffer.load_state_dict(state, device=device)
