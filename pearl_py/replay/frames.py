"""FrameReplayBuffer: uint8 image transitions with every distinct frame stored once.

A transition is the frame numbers of its two observations into a ring of frames (one frame: ``obs[k]``
of a ``(stack, H, W)`` stack, or the whole observation without stacking); every frame given to
:meth:`~FrameReplayBuffer.add` is first compared with the frames it most likely repeats, then looked up by a
64-bit hash among the last ``reuse_window`` frames, and written only when new. A transition whose oldest
frame was overwritten is stale: uniform sampling skips it. docs/replay.md ("Image observations") has the lookup,
the rings, staleness and the footprint.

Example::

    >>> buf = FrameReplayBuffer(capacity=1000, obs_shape=(4, 84, 84), frame_stack=4, seed=0)
    >>> stack = np.zeros((1, 4, 84, 84), np.uint8)
    >>> _ = buf.add(stack, np.array([1]), np.array([0.0]), stack, np.array([False]))
    >>> buf.frames_written                    # four identical frames in each observation: stored once
    1
    >>> buf.sample(8).obs.shape
    (8, 4, 84, 84)
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit

from pearl_py.protocol.workload import FLOAT_BYTES, ReplayWorkload
from pearl_py.replay import checks, kernels
from pearl_py.replay.buffer import ReplayBase, SampleBatch
from pearl_py.replay.pcg64 import Stream, fill_uniforms
from pearl_py.replay.storage import Layout, Storage
from pearl_py.replay.writer import RingWriter

KIND = "frames"
"""``meta["kind"]`` of a frame buffer's storage (what :mod:`pearl_py.replay.restore` dispatches on)."""

DEFAULT_TABLE = 1 << 14
"""Entries of the lookup table of recent frames (128 KiB): far more than the frames in flight per step."""

REF_BYTES = 8
"""A frame number (int64)."""

_UINT8 = np.dtype(np.uint8)

_OPTIONS = {"cache": True, "nogil": True}
_FNV_OFFSET, _FNV_PRIME = np.uint64(0xCBF29CE484222325), np.uint64(0x100000001B3)
_MAX_DRAWS = 1 << 20


def frame_capacity_default(capacity: int) -> int:
    """Frames the ring holds by default: the capacity and a quarter more for episode starts."""
    return capacity + max(capacity // 4, 64)


def stored_obs_bytes(obs_shape: tuple[int, ...], frame_stack: int, capacity: int) -> float:
    """Bytes a transition's observations take at the default sizes: its share of the frame ring (one frame of
    ``frame_capacity_default(capacity) / capacity``) and its ``2 x stack`` frame numbers and oldest number."""
    frame_bytes = math.ceil(int(np.prod(obs_shape)) / frame_stack / 8) * 8
    ring = frame_capacity_default(capacity) * (frame_bytes + REF_BYTES) / capacity    # frame and its hash
    return ring + (2 * frame_stack + 1) * REF_BYTES


@njit(**_OPTIONS)
def _hash(words):
    h = _FNV_OFFSET
    for w in words:
        h = (h ^ w) * _FNV_PRIME
    return h ^ (h >> np.uint64(29))


@njit(**_OPTIONS)
def _same(a, b):
    for i in range(a.size):
        if a[i] != b[i]:
            return False
    return True


@njit(**_OPTIONS)
def _resolve(scratch, hint, other_hint, frames, hashes, table, count, window):
    """The frame number of the frame in ``scratch`` (uint64 words): ``hint``, ``other_hint`` or a table entry
    holding the same bytes written within the last ``window`` frames, else a new frame written to the ring. The
    hints (-1: none) are compared byte for byte before any hashing: in a steady stream they are right for all
    but one frame of a transition."""
    n_frames = frames.shape[0]
    written = count[0]
    for ref in (hint, other_hint):
        if 0 <= ref < written and written - ref <= window and _same(frames[ref % n_frames], scratch):
            return ref
    h = _hash(scratch)
    slot = h & np.uint64(table.size - 1)
    ref = table[slot]
    if ref >= 0 and written - ref <= window and hashes[ref % n_frames] == h and _same(frames[ref % n_frames], scratch):
        return ref
    row = written % n_frames
    frames[row, :] = scratch
    hashes[row] = h
    table[slot] = written
    count[0] = written + 1
    return written


@njit(**_OPTIONS)
def add_frames(obs, next_obs, frames, hashes, table, count, window, obs_refs, next_refs, oldest, last_next):
    """Resolve every frame of ``obs`` and ``next_obs`` (``(N, stack, row_bytes)`` uint8) to frame numbers.

    ``frames`` is the ring viewed as uint64 words (``(F, words)``); rows are zero-padded to whole words.
    Fills ``obs_refs``, ``next_refs`` (``(N, stack)``) and ``oldest`` (the smallest number of each row).
    ``last_next``: the previous call's ``next_refs`` by row (-1: none), the hints of this call's ``obs``.
    """
    n, stack, row_bytes = obs.shape
    padded = np.zeros(frames.shape[1] * 8, np.uint8)
    scratch = padded.view(np.uint64)
    for i in range(n):
        low = np.int64(2**62)
        for k in range(stack):
            padded[:row_bytes] = obs[i, k]
            # the hints: this row's last next_obs[k], then the frame below (a reset's padding repeats it)
            ref = _resolve(scratch, last_next[i, k] if i < last_next.shape[0] else -1,
                           obs_refs[i, k - 1] if k > 0 else -1, frames, hashes, table, count, window)
            obs_refs[i, k] = ref
            low = min(low, ref)
        for k in range(stack):
            padded[:row_bytes] = next_obs[i, k]
            hint = obs_refs[i, k + 1] if k + 1 < stack else -1
            ref = _resolve(scratch, hint, -1, frames, hashes, table, count, window)
            next_refs[i, k] = ref
            low = min(low, ref)
        oldest[i] = low


@njit(**_OPTIONS)
def sample_frames(stream, size, oldest, live_from, frames, obs_refs, next_refs, actions, rewards, dones, indices,
                  out_obs, out_next, out_actions, out_rewards, out_dones):
    """Uniform draws over ``[0, size)`` skipping stale slots (``oldest < live_from``), and their rows.

    ``out_obs``/``out_next`` are ``(B, stack, words)`` uint64 views of the batch; a draw is
    ``floor(u * size)`` as :class:`~pearl_py.replay.sampler.UniformSampler`'s. Returns the draws made
    (more than ``B`` when stale slots were skipped), or -1 if ``_MAX_DRAWS`` found no live slot.
    """
    n_frames = frames.shape[0]
    u = np.empty(indices.size)
    fill_uniforms(stream, u)                         # one uniform per row; a stale draw takes the stream's next
    again = np.empty(1)
    draws = indices.size
    for j in range(indices.size):
        slot = min(np.int64(u[j] * size), size - 1)
        while oldest[slot] < live_from:
            if draws > _MAX_DRAWS:
                return -1
            fill_uniforms(stream, again)
            draws += 1
            slot = min(np.int64(again[0] * size), size - 1)
        indices[j] = slot
        for k in range(obs_refs.shape[1]):
            out_obs[j, k, :] = frames[obs_refs[slot, k] % n_frames]
            out_next[j, k, :] = frames[next_refs[slot, k] % n_frames]
        out_actions[j] = actions[slot]
        out_rewards[j] = rewards[slot]
        out_dones[j] = dones[slot]
    return draws


class FrameReplayBuffer(ReplayBase):
    """Fixed-capacity uniform replay of uint8 image transitions, each distinct frame stored once.

    ``obs_shape``: one observation, ``(stack, H, W)`` when ``frame_stack = stack > 1``, else any shape (one
    frame). ``frame_capacity``: frames the ring holds; ``reuse_window``: how far back (in frames) a frame may
    be referenced instead of written again (default: half the frames beyond the capacity). ``seed``,
    ``shared_name``: as :class:`~pearl_py.replay.ReplayBuffer`'s. Not safe for concurrent writers.
    """

    def __init__(self, capacity: int, obs_shape: tuple[int, ...], frame_stack: int = 1,
                 action_shape: tuple[int, ...] = (), action_dtype: Any = np.int64, seed: int = 0,
                 shared_name: str | None = None, frame_capacity: int | None = None, reuse_window: int | None = None,
                 table_size: int = DEFAULT_TABLE) -> None:
        meta = _settings(capacity, obs_shape, frame_stack, action_shape, action_dtype, frame_capacity, reuse_window,
                         table_size)
        storage = self._new_storage(_layout(meta), shared_name)
        storage["table"][:] = -1
        self._bind(storage, seed)

    @staticmethod
    def storage_bytes(capacity: int, obs_shape: tuple[int, ...], frame_stack: int = 1,
                      action_shape: tuple[int, ...] = (), action_dtype: Any = np.int64,
                      frame_capacity: int | None = None, reuse_window: int | None = None,
                      table_size: int = DEFAULT_TABLE) -> int:
        """Bytes of the storage a buffer of these settings allocates (computed from its layout; nothing allocated)."""
        meta = _settings(capacity, obs_shape, frame_stack, action_shape, action_dtype, frame_capacity, reuse_window,
                         table_size)
        return _layout(meta).nbytes

    @classmethod
    def attach(cls, shared_name: str, seed: int = 0) -> FrameReplayBuffer:
        """Open the shared storage another process created with ``shared_name`` (as ``ReplayBuffer.attach``)."""
        buffer = cls.__new__(cls)
        buffer._bind(Storage.attach(shared_name), seed)
        return buffer

    def _bind(self, storage: Storage, seed: int) -> None:
        meta = storage.layout.meta
        self._storage, self._meta = storage, meta
        self._stream = Stream(seed)
        self._writer = RingWriter(meta["capacity"], storage["counters"])
        self._obs_shape = tuple(meta["obs_shape"])
        self._stack = meta["frame_stack"]
        self._row_bytes = int(np.prod(self._obs_shape)) // self._stack
        self._action_shape = tuple(meta["action_shape"])
        self._action_dtype = np.dtype(meta["action_dtype"])
        self._last_next = np.empty((0, self._stack), np.int64)     # the last add's next_obs frames: the next hints

    # ----------------------------------------------------------------- properties

    @property
    def frame_capacity(self) -> int:
        return self._meta["frame_capacity"]

    prioritized = False   # uniform only: not read from the settings as ReplayBase's

    @property
    def frames_written(self) -> int:
        """Distinct frames written so far (the ring holds the last ``frame_capacity`` of them)."""
        self._check_open()
        return int(self._storage["frame_count"][0])

    def live(self) -> int:
        """Transitions sampling may return: those whose frames are all still in the ring."""
        self._check_open()
        return int(np.count_nonzero(self._storage["oldest"][:self._writer.size] >= self._live_from()))

    @property
    def nbytes(self) -> int:
        """Bytes of the whole storage (frames, frame numbers, fields, table)."""
        return self._storage.layout.nbytes

    def _live_from(self) -> int:
        return self.frames_written - self.frame_capacity

    # ----------------------------------------------------------------- add / sample

    def add(self, obs: Any, actions: Any, rewards: Any, next_obs: Any, terminated: Any) -> np.ndarray:
        """Store ``N`` transitions (the arguments of ``ReplayBuffer.add``, observations uint8); returns their slots."""
        self._check_open()
        fields = (self.capacity, self._obs_shape, self._action_shape, self._action_dtype, _UINT8)
        if not checks.exact_rows(obs, actions, rewards, next_obs, terminated, *fields):   # not a collector's arrays
            rows = checks.transition_rows(obs, actions, rewards, next_obs, terminated, *fields)
            obs, actions, rewards, next_obs, terminated = (rows[k] for k in ("obs", "actions", "rewards", "next_obs",
                                                                              "dones"))
        n = len(obs)
        shape = (n, self._stack, self._row_bytes)
        obs_refs, next_refs = np.empty((n, self._stack), np.int64), np.empty((n, self._stack), np.int64)
        oldest = np.empty(n, np.int64)
        s = self._storage
        # frames first: a refused transition below leaves at most frames no transition references (never read)
        add_frames(np.ascontiguousarray(obs).reshape(shape), np.ascontiguousarray(next_obs).reshape(shape),
                   s["frames"], s["hashes"], s["table"], s["frame_count"], self._meta["reuse_window"], obs_refs,
                   next_refs, oldest, self._last_next)
        self._last_next = next_refs
        cursor, stored = self._writer.cursor, (s["obs_refs"], s["actions"], s["rewards"], s["next_refs"], s["dones"])
        # the values checked as the rows are written; where the kernel refuses them (writing nothing), the checked
        # path names the fault, or converts what it may (0/1 floats of another dtype) for the kernel to write
        if kernels.insert(cursor, obs_refs, actions, rewards, next_refs, terminated, *stored) != kernels.OK:
            rows = checks.transition_rows(obs, actions, rewards, next_obs, terminated, *fields)
            kernels.insert(cursor, obs_refs, rows["actions"], rows["rewards"], next_refs, rows["dones"], *stored)
        slots = (cursor + np.arange(n, dtype=np.int64)) % self.capacity
        s["oldest"][slots] = oldest
        self._writer.write(n)
        return slots

    def sample(self, batch_size: int, beta: float = 0.4) -> SampleBatch:
        """``batch_size`` live transitions drawn uniformly with replacement; unit weights (``beta`` is ignored)."""
        self._check_open()
        size = self._writer.size
        batch_size, _ = checks.sample_request(batch_size, beta, size)
        s = self._storage
        words = s["frames"].shape[1]
        obs = np.empty((batch_size, self._stack, words), np.uint64)
        nxt = np.empty((batch_size, self._stack, words), np.uint64)
        actions = np.empty((batch_size, *self._action_shape), self._action_dtype)
        rewards, dones = np.empty(batch_size, np.float32), np.empty(batch_size, np.float32)
        indices = np.empty(batch_size, np.int64)
        draws = sample_frames(self._stream.array, size, s["oldest"], self._live_from(), s["frames"], s["obs_refs"],
                              s["next_refs"], s["actions"], s["rewards"], s["dones"], indices, obs, nxt, actions,
                              rewards, dones)
        if draws < 0:
            raise ValueError("batch_size: no live transition found (every stored transition's frames were "
                             "overwritten: raise frame_capacity)")
        return SampleBatch(self._observations(obs), actions, rewards, self._observations(nxt), dones, indices,
                           np.ones(batch_size, np.float32))

    def _observations(self, words: np.ndarray) -> np.ndarray:
        """``(B, stack, words)`` uint64 rows as ``(B, *obs_shape)`` uint8 observations (padding dropped)."""
        raw = words.view(np.uint8).reshape(len(words), self._stack, -1)[:, :, :self._row_bytes]
        return np.ascontiguousarray(raw).reshape(len(words), *self._obs_shape)

    def update_priorities(self, indices: Any, td_errors_abs: Any) -> None:
        raise ValueError("indices: a FrameReplayBuffer samples uniformly (prioritized image replay: ReplayBuffer)")

    def workload(self, batch_size: int) -> ReplayWorkload:
        """What a replay kernel call on ``batch_size`` items costs: the bytes a batch carries (both observations)."""
        batch_size = checks.positive_int("batch_size", batch_size)
        action_bytes = int(np.prod(self._action_shape, dtype=np.int64)) * self._action_dtype.itemsize
        item = 2 * int(np.prod(self._obs_shape)) + action_bytes + 2 * FLOAT_BYTES
        return ReplayWorkload(capacity=self.capacity, batch=batch_size, item_bytes=item, prioritized=False)

    # ----------------------------------------------------------------- checkpoints

    def state_dict(self) -> dict[str, Any]:
        """Copies of every array, the counters and the generator state."""
        self._check_open()
        state: dict[str, Any] = {"meta": dict(self._meta), "rng": self._stream.state}
        for f in self._storage.layout.fields:
            state[f.name] = self._storage[f.name].copy()
        return state

    @classmethod
    def load_state_dict(cls, state: dict[str, Any], shared_name: str | None = None) -> FrameReplayBuffer:
        """A new buffer holding what ``state_dict()`` captured (optionally in new shared storage)."""
        try:
            meta = state["meta"]
            storage = Storage.create(_layout(meta), shared=shared_name is not None, name=shared_name)
            for f in storage.layout.fields:
                storage[f.name][:] = state[f.name]
            buffer = cls.__new__(cls)
            buffer._bind(storage, 0)
            buffer._stream.state = state["rng"]
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"state: not a FrameReplayBuffer state_dict ({error!r})") from None
        return buffer

    def close(self) -> None:
        """Release the storage (unlinking a shared segment this buffer created). Idempotent."""
        self._storage.close()


def _settings(capacity: Any, obs_shape: Any, frame_stack: Any, action_shape: Any, action_dtype: Any,
              frame_capacity: Any, reuse_window: Any, table_size: Any) -> dict[str, Any]:
    meta = checks.buffer_settings(capacity, obs_shape, action_shape, action_dtype, False, 0.6, 16, 1e-6, np.uint8)
    stack = checks.positive_int("frame_stack", frame_stack)
    shape = tuple(meta["obs_shape"])
    if stack > 1 and (not shape or shape[0] % stack):
        raise ValueError(f"frame_stack: {stack} frames need obs_shape (k * {stack}, ...), got {shape}")
    if not shape or int(np.prod(shape)) == 0:
        raise ValueError(f"obs_shape: expected a non-empty frame shape, got {shape}")
    frames = frame_capacity_default(meta["capacity"]) if frame_capacity is None else \
        checks.positive_int("frame_capacity", frame_capacity)
    if frames < 2 * stack:
        raise ValueError(f"frame_capacity: expected at least {2 * stack} (two observations' frames), got {frames}")
    window = max((frames - meta["capacity"]) // 2, 2 * stack) if reuse_window is None else \
        checks.positive_int("reuse_window", reuse_window)
    table = checks.positive_int("table_size", table_size)
    if table & (table - 1):
        raise ValueError(f"table_size: expected a power of two, got {table}")
    return {**meta, "kind": KIND, "frame_stack": stack, "frame_capacity": frames,
            "reuse_window": min(window, frames - 2 * stack + 1), "table_size": table}


def _layout(meta: dict[str, Any]) -> Layout:
    capacity, frames, stack = meta["capacity"], meta["frame_capacity"], meta["frame_stack"]
    row_bytes = int(np.prod(meta["obs_shape"])) // stack
    return Layout.of({
        "frames": (np.uint64, (frames, math.ceil(row_bytes / 8))),
        "hashes": (np.uint64, (frames,)),
        "table": (np.int64, (meta["table_size"],)),
        "frame_count": (np.int64, (1,)),
        "obs_refs": (np.int64, (capacity, stack)),
        "next_refs": (np.int64, (capacity, stack)),
        "oldest": (np.int64, (capacity,)),
        "actions": (np.dtype(meta["action_dtype"]), (capacity, *meta["action_shape"])),
        "rewards": (np.float32, (capacity,)),
        "dones": (np.float32, (capacity,)),
        "counters": (np.int64, (2,)),
    }, meta)
