"""The random generators of every CUDA device, for checkpoints: a resumed run draws what the interrupted one would.

``torch.get_rng_state`` is the CPU generator only; a learner or an inference server on a GPU
draws from its device's generator (TD3's target noise, DDPG's exploration noise on a GPU actor),
so a checkpoint keeps every CUDA device's state beside the CPU's.

Example::

    >>> states = cuda_rng_states()            # [] without CUDA
    >>> restore_cuda_rng_states(states)       # the devices present here, in order
"""
from __future__ import annotations

import torch

from pearl_py.errors import UserError


def cuda_rng_states() -> list[torch.Tensor]:
    """Each CUDA device's generator state, by index (empty where torch sees no CUDA device)."""
    return list(torch.cuda.get_rng_state_all()) if torch.cuda.is_available() else []


def restore_cuda_rng_states(states: list[torch.Tensor]) -> None:
    """Set the CUDA generators from :func:`cuda_rng_states`'s list; a checkpoint that kept more devices than this
    machine has cannot continue exactly (a UserError names both counts)."""
    if not states:
        return
    present = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if len(states) > present:
        raise UserError(f"resume: the checkpoint kept the random generators of {len(states)} CUDA device(s), this "
                        f"machine has {present}: the run cannot continue exactly here")
    torch.cuda.set_rng_state_all(states)
