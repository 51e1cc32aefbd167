"""Preallocated replay storage: named numpy arrays in private memory or in one shared-memory segment.

A :class:`Layout` lists the arrays (name, dtype, shape) and where each sits in one
block of bytes. :class:`Storage` allocates the block, either as ordinary numpy
memory or as a ``multiprocessing.shared_memory`` segment whose first bytes hold the
layout as JSON, so another process can :meth:`Storage.attach` by name alone.

Example::

    >>> layout = Layout.of({"obs": (np.float32, (8, 4)), "count": (np.int64, (2,))}, meta={"capacity": 8})
    >>> with Storage.create(layout, shared=True) as owner:
    ...     owner["count"][0] = 3
    ...     with Storage.attach(owner.name) as other:
    ...         int(other["count"][0]), other.layout.meta["capacity"]
    (3, 8)
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from multiprocessing import resource_tracker, shared_memory
from typing import Any

import numpy as np

_ALIGN = 64
_HEADER_LEN_BYTES = 8


@dataclass(frozen=True)
class Field:
    """One array of the block: its dtype, full shape and byte offset."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    offset: int

    @property
    def nbytes(self) -> int:
        return int(np.dtype(self.dtype).itemsize * np.prod(self.shape, dtype=np.int64))


@dataclass(frozen=True)
class Layout:
    """Arrays of a block plus free-form JSON-able ``meta`` (what the owner needs to rebuild itself)."""

    fields: tuple[Field, ...]
    meta: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, arrays: dict[str, tuple[Any, tuple[int, ...]]], meta: dict[str, Any] | None = None) -> Layout:
        """Lay out ``{name: (dtype, shape)}`` back to back, each array 64-byte aligned."""
        fields, offset = [], 0
        for name, (dtype, shape) in arrays.items():
            spec = Field(name, np.dtype(dtype).str, tuple(int(s) for s in shape), offset)
            fields.append(spec)
            offset += -(-spec.nbytes // _ALIGN) * _ALIGN
        return cls(tuple(fields), dict(meta or {}))

    @property
    def nbytes(self) -> int:
        return max((f.offset + f.nbytes for f in self.fields), default=0)

    def to_json(self) -> bytes:
        fields = [[f.name, f.dtype, list(f.shape), f.offset] for f in self.fields]
        return json.dumps({"fields": fields, "meta": self.meta}).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> Layout:
        data = json.loads(raw.decode())
        fields = tuple(Field(n, d, tuple(s), o) for n, d, s, o in data["fields"])
        return cls(fields, data["meta"])


def _open_untracked(name: str) -> shared_memory.SharedMemory:
    """Attach to an existing segment without handing it to this process's resource tracker.

    Before Python 3.13 attaching registers the segment with the tracker, which then
    unlinks it when the attaching process exits (CPython issue 82300); only the
    owner may unlink.
    """
    if sys.version_info >= (3, 13):
        return shared_memory.SharedMemory(name=name, track=False)
    register = resource_tracker.register
    resource_tracker.register = lambda *args, **kwargs: None
    try:
        return shared_memory.SharedMemory(name=name)
    finally:
        resource_tracker.register = register


class Storage:
    """The arrays of a :class:`Layout`, indexable by field name; a context manager.

    ``owner`` storages free (and, when shared, unlink) the memory on :meth:`close`;
    attached ones only unmap it.
    """

    def __init__(self, layout: Layout, buffer: memoryview | np.ndarray, offset: int,
                 segment: shared_memory.SharedMemory | None, owner: bool) -> None:
        self.layout = layout
        self.owner = owner
        self._segment = segment
        self._arrays = {
            f.name: np.ndarray(f.shape, dtype=np.dtype(f.dtype), buffer=buffer, offset=offset + f.offset)
            for f in layout.fields
        }

    @classmethod
    def create(cls, layout: Layout, shared: bool = False, name: str | None = None) -> Storage:
        """Allocate zeroed arrays; ``shared`` puts them in a new segment (named ``name`` if given)."""
        if not shared:                  # 64-byte aligned like a segment (which starts on a page)
            block = np.zeros(max(layout.nbytes, 1) + _ALIGN, dtype=np.uint8)
            return cls(layout, block, -block.ctypes.data % _ALIGN, None, owner=True)
        header = layout.to_json()
        data_offset = -(-(_HEADER_LEN_BYTES + len(header)) // _ALIGN) * _ALIGN
        segment = shared_memory.SharedMemory(name=name, create=True, size=data_offset + max(layout.nbytes, 1))
        segment.buf[:_HEADER_LEN_BYTES] = len(header).to_bytes(_HEADER_LEN_BYTES, "little")
        segment.buf[_HEADER_LEN_BYTES:_HEADER_LEN_BYTES + len(header)] = header
        return cls(layout, segment.buf, data_offset, segment, owner=True)

    @classmethod
    def attach(cls, name: str) -> Storage:
        """Map the segment another process created with ``create(..., shared=True)``."""
        try:
            segment = _open_untracked(name)
        except FileNotFoundError:
            raise ValueError(f"shared_name: no shared replay storage named {name!r}") from None
        length = int.from_bytes(bytes(segment.buf[:_HEADER_LEN_BYTES]), "little")
        layout = Layout.from_json(bytes(segment.buf[_HEADER_LEN_BYTES:_HEADER_LEN_BYTES + length]))
        data_offset = -(-(_HEADER_LEN_BYTES + length) // _ALIGN) * _ALIGN
        return cls(layout, segment.buf, data_offset, segment, owner=False)

    @property
    def name(self) -> str | None:
        """Name of the shared-memory segment, or ``None`` for private memory."""
        return None if self._segment is None else self._segment.name

    @property
    def closed(self) -> bool:
        return self._arrays is None

    def __getitem__(self, key: str) -> np.ndarray:
        if self._arrays is None:
            raise ValueError("storage is closed")
        return self._arrays[key]

    def close(self) -> None:
        """Drop the arrays, unmap the segment and, if this storage created it, unlink it. Idempotent."""
        if self._arrays is None:
            return
        self._arrays = None
        segment, self._segment = self._segment, None
        if segment is None:
            return
        if self.owner:
            segment.unlink()
        try:
            segment.close()
        except BufferError:
            pass  # views handed out are still alive; the mapping goes when they do

    def __enter__(self) -> Storage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class OnSegment:
    """What every view over one named :class:`Storage` segment shares: attaching by name (in another process) and
    the segment's name. A subclass keeps its segment in ``_storage`` and takes it as its first argument.

    Example::

        >>> board = ParamBoard.attach(name)   # ParamBoard(OnSegment)
    """

    _storage: Storage

    @classmethod
    def attach(cls, name: str) -> Any:
        """The view over the existing segment ``name``."""
        return cls(Storage.attach(name))

    @property
    def name(self) -> str:
        return self._storage.name
