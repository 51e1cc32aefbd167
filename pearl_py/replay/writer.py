"""Ring writer: which slots a batch of new items goes to, wrapping around at capacity.

The cursor and the fill level live in a two-element int64 array (``counters``) so
they can sit in shared memory next to the data they describe.

Example::

    >>> writer = RingWriter(capacity=4, counters=np.zeros(2, dtype=np.int64))
    >>> writer.write(3)
    [(0, 3)]
    >>> writer.write(3)             # wraps: slots 3, then 0 and 1
    [(3, 4), (0, 2)]
    >>> writer.cursor, writer.size
    (2, 4)
"""
from __future__ import annotations

import numpy as np

_CURSOR, _SIZE = 0, 1


class RingWriter:
    """Hands out slots oldest-first once the ring is full (FIFO eviction)."""

    def __init__(self, capacity: int, counters: np.ndarray) -> None:
        self.capacity = capacity
        self.counters = counters

    @property
    def cursor(self) -> int:
        """Slot the next item goes to."""
        return self.counters.item(_CURSOR)

    @property
    def size(self) -> int:
        """Number of slots written so far (at most ``capacity``)."""
        return self.counters.item(_SIZE)

    def write(self, n: int) -> list[tuple[int, int]]:
        """Claim ``n <= capacity`` slots; returns them as one or two ``[start, stop)`` runs."""
        start = self.cursor
        stop = start + n
        runs = [(start, min(stop, self.capacity))]
        if stop > self.capacity:
            runs.append((0, stop - self.capacity))
        self.counters[_CURSOR] = stop % self.capacity
        self.counters[_SIZE] = min(self.size + n, self.capacity)
        return runs
