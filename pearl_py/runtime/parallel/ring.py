"""A single-producer, single-consumer ring of fixed-shape records in shared memory.

Actors write transitions into their own ring and the replay owner drains it; no
pickling, no locks. The producer only advances ``head``, the consumer only ``tail``;
each writes its data before moving its counter (stores are not reordered on x86-64,
where this runtime is tested; aligned 8-byte counters are read whole).

Example::

    >>> ring = ShmRing.create({"x": (np.float32, (2,)), "done": (np.bool_, ())}, capacity=4, name="demo")
    >>> peer = ShmRing.attach("demo")               # e.g. in another process
    >>> peer.put(x=np.ones((3, 2)), done=np.zeros(3, bool))
    >>> ring.pending(), ring.get(2)["x"].shape
    (3, (2, 2))
    >>> peer.close(); ring.close()                  # the creator unlinks the segment
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pearl_py.replay.storage import Layout, Storage


class ShmRing:
    """Records ``{field: (dtype, shape)}`` in a ring of ``capacity`` slots; ``head``/``tail`` count records."""

    def __init__(self, storage: Storage) -> None:
        self._storage = storage
        self.fields = tuple(f.name for f in storage.layout.fields if f.name != "cursor")
        self.capacity = int(storage.layout.meta["capacity"])
        self._cursor = storage["cursor"]
        self._arrays = {name: storage[name] for name in self.fields}
        self._name = storage.name

    @classmethod
    def create(cls, fields: dict[str, tuple[Any, tuple[int, ...]]], capacity: int, name: str) -> ShmRing:
        """A new ring in a shared-memory segment called ``name`` (owned by this process)."""
        arrays = {k: (dtype, (capacity, *shape)) for k, (dtype, shape) in fields.items()}
        arrays["cursor"] = (np.int64, (2,))
        return cls(Storage.create(Layout.of(arrays, {"capacity": capacity}), shared=True, name=name))

    @classmethod
    def attach(cls, name: str) -> ShmRing:
        return cls(Storage.attach(name))

    @property
    def name(self) -> str:
        return self._name

    @property
    def head(self) -> int:
        """Records written so far (the producer's count)."""
        return int(self._cursor[0])

    @property
    def tail(self) -> int:
        """Records consumed so far."""
        return int(self._cursor[1])

    def pending(self) -> int:
        return self.head - self.tail

    def free(self) -> int:
        return self.capacity - self.pending()

    def put(self, **rows: np.ndarray) -> None:
        """Append ``n`` records (every field given, leading dimension ``n <= free()``)."""
        self._check_open()
        n = len(rows[self.fields[0]])
        if n > self.free():
            raise ValueError(f"ring {self.name}: {n} records do not fit in {self.free()} free slots")
        head = self.head
        first = head % self.capacity
        if first + n <= self.capacity:  # no wrap: one slice per field (the actor's every step)
            for name, array in self._arrays.items():
                array[first:first + n] = rows[name]
        else:
            for name, array in self._arrays.items():
                self._copy_in(array, head, np.asarray(rows[name]))
        self._cursor[0] = head + n

    def get(self, n: int) -> dict[str, np.ndarray]:
        """Remove and return (copies of) the oldest ``min(n, pending())`` records."""
        self._check_open()
        tail = self.tail
        n = min(n, self.head - tail)
        out = {name: self._copy_out(array, tail, n) for name, array in self._arrays.items()}
        self._cursor[1] = tail + n
        return out

    def peek(self, field: str) -> Any:
        """The oldest pending record's ``field``, left in the ring (the caller checks ``pending()`` first)."""
        self._check_open()
        if self.head == self.tail:
            raise ValueError(f"ring {self.name}: nothing pending to peek at")
        return self._arrays[field][self.tail % self.capacity].copy()

    def _check_open(self) -> None:
        if not self._arrays:
            raise ValueError(f"ring {self.name} is closed")

    def _copy_in(self, array: np.ndarray, start: int, data: np.ndarray) -> None:
        first = start % self.capacity
        split = min(len(data), self.capacity - first)
        array[first:first + split] = data[:split]
        array[:len(data) - split] = data[split:]

    def _copy_out(self, array: np.ndarray, start: int, n: int) -> np.ndarray:
        first = start % self.capacity
        if first + n <= self.capacity:
            return array[first:first + n].copy()
        return np.concatenate([array[first:], array[:first + n - self.capacity]])

    def close(self) -> None:
        """Unmap; the creating process also unlinks the segment. Idempotent."""
        self._arrays = {}
        self._storage.close()
