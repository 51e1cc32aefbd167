"""Parameters from the learner to the actors through shared memory, guarded by a seqlock.

The learner copies the acting tensors into one flat float32 block and bumps a version (odd while writing); an actor
copies the block when the version changed and retries if it was odd or moved meanwhile. One ``memcpy`` a side.

Example::

    >>> board = ParamBoard.create(net.state_dict(), name="pearl-params")   # learner
    >>> board.publish(net.state_dict(), tag=128)                            # after 128 updates
    >>> reader = ParamBoard.attach("pearl-params")                          # actor
    >>> reader.read_into(actor_net.state_dict())                           # True: new weights
    True
    >>> reader.tag                                                          # of the copy just read
    128
    >>> reader.read_into(actor_net.state_dict())                           # nothing new
    False
"""
from __future__ import annotations

import time
from collections.abc import Iterable

import numpy as np
import torch

from pearl_py.replay.storage import Layout, OnSegment, Storage


def pack(flat: torch.Tensor, tensors: Iterable[torch.Tensor]) -> None:
    """Copy ``tensors`` one after another into the front of the flat float32 ``flat`` (a publication's writes).
    Tensors on another device (a GPU learner's) are gathered there and copied in one transfer: a copy per tensor
    would wait for the device once per tensor."""
    tensors = list(tensors)
    offset = 0
    with torch.no_grad():
        if any(t.device != flat.device for t in tensors):
            gathered = torch.cat([t.reshape(-1) for t in tensors])
            flat[:gathered.numel()].copy_(gathered)
            return
        for tensor in tensors:
            n = tensor.numel()
            flat[offset:offset + n].copy_(tensor.reshape(-1))
            offset += n


def unpack(flat: torch.Tensor, tensors: Iterable[torch.Tensor]) -> None:
    """Copy the front of ``flat`` back into ``tensors``, in :func:`pack`'s order (a reader's copy)."""
    offset = 0
    with torch.no_grad():
        for tensor in tensors:
            n = tensor.numel()
            tensor.copy_(flat[offset:offset + n].view_as(tensor))
            offset += n


class ParamBoard(OnSegment):
    """A flat float32 copy of a state dict (fixed names and shapes) with a version counter."""

    def __init__(self, storage: Storage) -> None:
        self._storage = storage
        self._flat = torch.from_numpy(storage["flat"])
        self._version = storage["version"]
        self._tag = storage["tag"]
        self._seen = 0
        self.tag = 0
        """The ``tag`` published with the parameters last read (the learner's gradient steps)."""

    @classmethod
    def create(cls, state: dict[str, torch.Tensor], name: str, tag: int = 0) -> ParamBoard:
        size = sum(t.numel() for t in state.values())
        layout = Layout.of({"flat": (np.float32, (max(size, 1),)), "version": (np.int64, (1,)),
                            "tag": (np.int64, (1,))},
                           {"names": list(state)})
        board = cls(Storage.create(layout, shared=True, name=name))
        board.publish(state, tag)
        return board

    @property
    def version(self) -> int:
        """Number of completed publications times two (even: stable)."""
        return int(self._version[0])

    def publish(self, state: dict[str, torch.Tensor], tag: int = 0) -> None:
        """Write ``state`` (same names and shapes as at creation) and ``tag``: version odd, copy, version even."""
        self._version[0] += 1
        self._tag[0] = tag
        pack(self._flat, state.values())
        self._version[0] += 1

    def has_news(self) -> bool:
        """Whether a publication newer than the last one read has begun (:meth:`read_into` then copies it)."""
        return self.version != self._seen

    def read_into(self, state: dict[str, torch.Tensor]) -> bool:
        """Copy the newest stable publication into ``state``'s tensors; False when nothing new."""
        while True:
            before = self.version
            if before == self._seen:
                return False
            if before % 2:
                time.sleep(0)
                continue
            tag = int(self._tag[0])
            unpack(self._flat, state.values())
            if self.version == before:
                self._seen, self.tag = before, tag
                return True

    def close(self) -> None:
        self._flat = None
        self._storage.close()
