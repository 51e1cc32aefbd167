"""Open a replay by what its storage says it is: a :class:`ReplayBuffer` or a :class:`FrameReplayBuffer`.

Executors that attach to a replay another process created, or rebuild one from a checkpoint,
call these instead of naming the class (``meta["kind"]`` of the storage header or the state).

Example::

    >>> owner = FrameReplayBuffer(100, (4, 10, 10), shared_name="pearl_demo")
    >>> view = attach_replay("pearl_demo", seed=1)
    >>> type(view).__name__
    'FrameReplayBuffer'
"""
from __future__ import annotations

from typing import Any

from pearl_py.replay.buffer import ReplayBuffer
from pearl_py.replay.frames import KIND, FrameReplayBuffer
from pearl_py.replay.storage import Storage

Replay = ReplayBuffer | FrameReplayBuffer


def attach_replay(shared_name: str, seed: int = 0) -> Replay:
    """The replay in the shared segment ``shared_name``, as the class that created it."""
    if not isinstance(shared_name, str) or not shared_name:
        raise ValueError(f"shared_name: expected a non-empty string, got {shared_name!r}")
    with Storage.attach(shared_name) as probe:
        kind = probe.layout.meta.get("kind")
    cls = FrameReplayBuffer if kind == KIND else ReplayBuffer
    return cls.attach(shared_name, seed)


def replay_from_state(state: dict[str, Any], shared_name: str | None = None) -> Replay:
    """The replay a ``state_dict()`` captured, as the class that captured it."""
    meta = state.get("meta", {}) if isinstance(state, dict) else {}
    cls = FrameReplayBuffer if meta.get("kind") == KIND else ReplayBuffer
    return cls.load_state_dict(state, shared_name=shared_name)
