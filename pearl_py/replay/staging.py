"""Host arrays onto a torch device in one transfer: packed into one staging buffer, copied once, split there.

A replay insert (five fields) or a sampled batch (six) would otherwise pin and upload each array on its own: one
pinned allocation, one copy into it and one transfer per array. :func:`upload` packs the arrays' bytes into one
host buffer (page-locked for an accelerator, so the transfer does not hold the host: the pinned-memory allocator
keeps the block until the copy is done), sends it with one ``non_blocking`` copy, and returns views of the device
copy with each array's dtype and shape. On the CPU the packed buffer is the result (one host copy).

Example::

    >>> obs, actions = np.zeros((4, 3), np.float32), np.arange(4)
    >>> on_device = upload([obs, actions], torch.device("cpu"))
    >>> [(t.dtype, tuple(t.shape)) for t in on_device]
    [(torch.float32, (4, 3)), (torch.int64, (4,))]
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

ALIGN = 8
"""Each array starts at a multiple of this many bytes in the packed buffer (the largest itemsize stored), as
viewing bytes as a wider dtype needs."""


def upload(arrays: Sequence[np.ndarray], device: torch.device) -> list[torch.Tensor]:
    """``arrays`` on ``device``, each with its dtype and shape, through one staging buffer and one transfer."""
    arrays = [np.ascontiguousarray(a) for a in arrays]
    offsets, end = [], 0
    for array in arrays:
        offsets.append(end)
        end += -(-array.nbytes // ALIGN) * ALIGN
    staging = torch.empty(max(end, 1), dtype=torch.uint8, pin_memory=device.type != "cpu")
    packed = staging.numpy()
    for array, offset in zip(arrays, offsets, strict=True):
        packed[offset:offset + array.nbytes] = array.reshape(-1).view(np.uint8)
    moved = staging.to(device, non_blocking=True)
    return [moved[offset:offset + array.nbytes].view(torch_dtype(array.dtype)).view(array.shape)
            for array, offset in zip(arrays, offsets, strict=True)]


def torch_dtype(dtype: np.dtype) -> torch.dtype:
    """The torch dtype of a numpy dtype."""
    return torch.from_numpy(np.empty(0, dtype=dtype)).dtype
