"""A table of named declarations (device runtimes, device kinds): each name registered once, an unknown name
refused naming the known ones.

Example::

    >>> kinds = Registry("device kind")
    >>> kinds.add(CPU) is CPU
    True
    >>> kinds["tpu"]
    KeyError: "unknown device kind 'tpu'; registered: cpu"
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, Protocol, TypeVar


class Named(Protocol):
    name: str


T = TypeVar("T", bound=Named)


class Registry(Generic[T]):
    """Entries by ``name``, in registration order; ``what`` names an entry in errors (``device kind``)."""

    def __init__(self, what: str) -> None:
        self.what, self._entries = what, dict[str, T]()

    def add(self, entry: T) -> T:
        """Register ``entry`` (its name must be new: a ValueError otherwise) and return it."""
        if entry.name in self._entries:
            raise ValueError(f"{self.what} {entry.name!r} is already registered")
        self._entries[entry.name] = entry
        return entry

    def __getitem__(self, name: str) -> T:
        """The entry ``name``; a KeyError naming the registered ones otherwise."""
        try:
            return self._entries[name]
        except KeyError:
            raise KeyError(f"unknown {self.what} {name!r}; registered: {', '.join(self._entries)}") from None

    def __iter__(self) -> Iterator[T]:
        """The entries registered so far (a snapshot: registering while iterating is safe)."""
        return iter(tuple(self._entries.values()))
