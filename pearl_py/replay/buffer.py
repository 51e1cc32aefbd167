"""ReplayBuffer: storage + writer + sampler behind one validated, batched interface.

Public methods validate their arguments (``ValueError`` naming the argument, buffer
untouched) and then call a private ``_run``-style method that trusts them. Storage is
preallocated numpy arrays, optionally in a shared-memory segment another process can
:meth:`ReplayBuffer.attach` to by name; the ring writer wraps around at capacity; the
sampler is uniform or proportional-prioritized on an n-ary priority tree (sums and minima).

Example::

    >>> buf = ReplayBuffer(capacity=1000, obs_shape=(4,), prioritized=True, seed=0)
    >>> obs = np.zeros((8, 4), dtype=np.float32)
    >>> buf.add(obs, np.arange(8), np.ones(8), obs, np.zeros(8, dtype=bool)).tolist()
    [0, 1, 2, 3, 4, 5, 6, 7]
    >>> batch = buf.sample(4, beta=0.4)
    >>> batch.obs.shape, batch.weights.dtype
    ((4, 4), dtype('float32'))
    >>> buf.update_priorities(batch.indices, np.array([0.5, 1.0, 2.0, 0.1]))
    >>> len(buf), buf.workload(64).tree_depth
    (8, 3)
    >>> buf.close()
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from pearl_py.protocol.workload import ReplayWorkload
from pearl_py.replay import checks, kernels
from pearl_py.replay.pcg64 import Stream
from pearl_py.replay.sampler import PrioritizedSampler, UniformSampler
from pearl_py.replay.segment_tree import PriorityTree
from pearl_py.replay.storage import Layout, Storage
from pearl_py.replay.writer import RingWriter

TRANSITION_FIELDS = ("obs", "actions", "rewards", "next_obs", "dones")
"""The stored fields of a transition, in the order samplers and checkpoints use."""
_F32 = np.dtype(np.float32)


@dataclass
class SampleBatch:
    """A sampled batch of transitions (numpy arrays, leading dimension ``B``).

    ``dones`` is 1.0 where the episode terminated; ``indices`` are the slots drawn
    (pass them back to :meth:`ReplayBuffer.update_priorities`); ``weights`` are the
    importance-sampling weights (all ones for uniform replay).
    """

    obs: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    next_obs: np.ndarray
    dones: np.ndarray
    indices: np.ndarray
    weights: np.ndarray

    def __len__(self) -> int:
        return len(self.indices)


_Buffer = TypeVar("_Buffer", bound="ReplayBase")


class ReplayBase:
    """What the replay buffers share: settings in ``_meta``, the ring writer, the cost model's workload, the
    context manager and, for the numpy ones, the storage (a subclass without ``_storage`` overrides
    ``_check_open``); a subclass gives its ``_item_bytes``."""

    _meta: dict[str, Any]
    _writer: RingWriter
    _storage: Storage

    @staticmethod
    def _new_storage(layout: Layout, shared_name: str | None) -> Storage:
        """Zeroed storage of ``layout``: private, or a new shared segment named ``shared_name``."""
        if shared_name is not None and (not isinstance(shared_name, str) or not shared_name):
            raise ValueError(f"shared_name: expected a non-empty string or None, got {shared_name!r}")
        return Storage.create(layout, shared=shared_name is not None, name=shared_name)

    @property
    def shared_name(self) -> str | None:
        """Name of the shared-memory segment holding the storage, or ``None``."""
        return self._storage.name

    def _check_open(self) -> None:
        if self._storage.closed:
            raise ValueError("buffer is closed")

    @property
    def capacity(self) -> int:
        return self._meta["capacity"]

    @property
    def prioritized(self) -> bool:
        return self._meta["prioritized"]

    def __len__(self) -> int:
        self._check_open()
        return self._writer.size

    def workload(self, batch_size: int) -> ReplayWorkload:
        """What a replay kernel call on ``batch_size`` items costs, in the cost models' terms."""
        self._check_open()
        batch_size = checks.positive_int("batch_size", batch_size)
        return ReplayWorkload(capacity=self.capacity, batch=batch_size, item_bytes=self._item_bytes(),
                              prioritized=self.prioritized, fanout=self._meta["fanout"])

    def __enter__(self: _Buffer) -> _Buffer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ReplayBuffer(ReplayBase):
    """Fixed-capacity replay of ``(obs, action, reward, next_obs, terminated)`` transitions.

    ``prioritized`` selects proportional prioritized replay with exponent ``alpha``,
    offset ``eps`` and a sum tree of the given ``fanout`` (16 by default, PEARL's choice
    and the fastest here; 2 is the classic binary tree). ``seed`` seeds the buffer's
    own sampling generator. ``shared_name`` puts the storage in a new shared-memory
    segment of that name (this buffer owns it and unlinks it on :meth:`close`).
    Not thread- or process-safe for concurrent writers: one writer at a time.
    """

    def __init__(self, capacity: int, obs_shape: tuple[int, ...], action_shape: tuple[int, ...] = (),
                 action_dtype: Any = np.int64, prioritized: bool = False, alpha: float = 0.6, fanout: int = 16,
                 seed: int = 0, shared_name: str | None = None, eps: float = 1e-6, obs_dtype: Any = np.float32) -> None:
        meta = checks.buffer_settings(capacity, obs_shape, action_shape, action_dtype, prioritized, alpha, fanout,
                                      eps, obs_dtype)
        self._bind(self._new_storage(_layout(meta), shared_name), seed, fresh=True)

    @staticmethod
    def storage_bytes(capacity: int, obs_shape: tuple[int, ...], action_shape: tuple[int, ...] = (),
                      action_dtype: Any = np.int64, prioritized: bool = False, fanout: int = 16,
                      obs_dtype: Any = np.float32) -> int:
        """Bytes of the storage a buffer of these settings allocates (computed from its layout; nothing allocated)."""
        meta = checks.buffer_settings(capacity, obs_shape, action_shape, action_dtype, prioritized, 0.6, fanout, 1e-6,
                                      obs_dtype)
        return _layout(meta).nbytes

    @classmethod
    def attach(cls, shared_name: str, seed: int = 0) -> ReplayBuffer:
        """Open the shared storage another process created with ``shared_name``.

        Both buffers see the same items, counters and priorities; each samples with
        its own generator (give every process its own ``seed``). Closing an attached
        buffer unmaps the storage but does not unlink it.
        """
        if not isinstance(shared_name, str) or not shared_name:
            raise ValueError(f"shared_name: expected a non-empty string, got {shared_name!r}")
        buffer = cls.__new__(cls)
        buffer._bind(Storage.attach(shared_name), seed, fresh=False)
        return buffer

    def _bind(self, storage: Storage, seed: int, fresh: bool) -> None:
        meta = storage.layout.meta
        self._storage = storage
        self._meta = meta
        self._stream = Stream(seed)
        self._writer = RingWriter(meta["capacity"], storage["counters"])
        self._sampler: UniformSampler | PrioritizedSampler = UniformSampler()
        if meta["prioritized"]:
            capacity, fanout = meta["capacity"], meta["fanout"]
            tree = PriorityTree(capacity, fanout, storage["tree"], initialized=not fresh)
            if fresh:
                storage["max_seen"][0] = 1.0
            self._sampler = PrioritizedSampler(tree, storage["max_seen"], meta["alpha"], meta["eps"])
        self._obs_shape = tuple(meta["obs_shape"])
        self._obs_dtype = np.dtype(meta.get("obs_dtype", _F32.str))
        self._action_shape = tuple(meta["action_shape"])
        self._action_dtype = np.dtype(meta["action_dtype"])
        self._sources = tuple(storage[name] for name in TRANSITION_FIELDS)

    # ----------------------------------------------------------------- add

    def add(self, obs: Any, actions: Any, rewards: Any, next_obs: Any, terminated: Any) -> np.ndarray:
        """Store ``N`` transitions (leading dimension ``N <= capacity``); returns the ``N`` slots written.

        Once full, the oldest items are overwritten. In prioritized mode new items
        get the largest priority seen so far.
        """
        self._check_open()
        # the collectors' arrays: values checked and written in one compiled pass; anything else, or values the
        # pass refuses (it writes nothing then), goes through the checked path, which converts or names the fault
        if checks.exact_rows(obs, actions, rewards, next_obs, terminated, self.capacity, self._obs_shape,
                             self._action_shape, self._action_dtype, self._obs_dtype) and kernels.insert(
                self._writer.cursor, obs, actions, rewards, next_obs, terminated, *self._sources) == kernels.OK:
            return self._written(self._writer.write(len(obs)))
        rows = checks.transition_rows(obs, actions, rewards, next_obs, terminated, self.capacity, self._obs_shape,
                                      self._action_shape, self._action_dtype, self._obs_dtype)
        return self._add(rows, len(rows["obs"]))

    def _add(self, rows: dict[str, np.ndarray], n: int) -> np.ndarray:
        runs = self._writer.write(n)
        done = 0
        for start, stop in runs:
            for name in TRANSITION_FIELDS:
                self._storage[name][start:stop] = rows[name][done:done + stop - start]
            done += stop - start
        return self._written(runs)

    def _written(self, runs: list[tuple[int, int]]) -> np.ndarray:
        """The slots of the ``[start, stop)`` runs just written, their priorities set first (prioritized mode)."""
        if isinstance(self._sampler, PrioritizedSampler):
            for start, stop in runs:
                self._sampler.on_write(start, stop, self._writer.size)
        if len(runs) == 1:
            return np.arange(*runs[0], dtype=np.int64)
        return np.concatenate([np.arange(start, stop, dtype=np.int64) for start, stop in runs])

    # ----------------------------------------------------------------- sample

    def sample(self, batch_size: int, beta: float = 0.4) -> SampleBatch:
        """Draw ``batch_size`` transitions with replacement (so it may exceed ``len(self)``).

        Prioritized buffers draw by stratified proportional sampling and return IS
        weights ``(N * P(i))^-beta / max_j w_j``; uniform buffers return unit weights.
        """
        self._check_open()
        size = self._writer.size
        batch_size, beta = checks.sample_request(batch_size, beta, size)
        return self._sample(batch_size, beta, size)

    def _sample(self, batch_size: int, beta: float, size: int) -> SampleBatch:
        rows = (batch_size,)
        obs = np.empty(rows + self._obs_shape, self._obs_dtype)
        next_obs = np.empty(rows + self._obs_shape, self._obs_dtype)
        actions = np.empty(rows + self._action_shape, self._action_dtype)
        rewards, dones = np.empty(batch_size, _F32), np.empty(batch_size, _F32)
        indices, weights = self._sampler.sample(batch_size, size, beta, self._stream.array, self._sources,
                                                (obs, actions, rewards, next_obs, dones))
        return SampleBatch(obs, actions, rewards, next_obs, dones, indices, weights)

    # ----------------------------------------------------------------- priorities

    def update_priorities(self, indices: Any, td_errors_abs: Any) -> None:
        """Set the priorities of written slots to ``(|td_error| + eps)^alpha`` (last one wins on duplicates)."""
        sampler = self._sampler
        if not isinstance(sampler, PrioritizedSampler):          # also what a closed buffer has
            self._check_open()
            raise ValueError("indices: update_priorities needs a buffer created with prioritized=True")
        slots, td_errors_abs = checks.priority_update(indices, td_errors_abs)
        size = self._writer.size
        status, position = sampler.update(slots, td_errors_abs, size)
        if status != kernels.OK:
            raise checks.refused_update(status, position, indices, size)

    # ----------------------------------------------------------------- cost model

    def _item_bytes(self) -> int:
        return sum(self._storage[name][0].nbytes for name in TRANSITION_FIELDS)

    # ----------------------------------------------------------------- checkpoints

    def state_dict(self) -> dict[str, Any]:
        """Copies of the written items, priorities, counters and generator state."""
        self._check_open()
        size = self._writer.size
        state: dict[str, Any] = {"meta": dict(self._meta), "counters": self._storage["counters"].copy(),
                                 "rng": self._stream.state}
        for name in TRANSITION_FIELDS:
            state[name] = self._storage[name][:size].copy()
        if isinstance(self._sampler, PrioritizedSampler):
            state["priorities"] = self._sampler.tree.leaves[:size].copy()
            state["max_seen"] = float(self._sampler.max_seen[0])
        return state

    @classmethod
    def load_state_dict(cls, state: dict[str, Any], shared_name: str | None = None) -> ReplayBuffer:
        """A new buffer holding what ``state_dict()`` captured (optionally in new shared storage)."""
        try:
            meta, counters = state["meta"], np.asarray(state["counters"], dtype=np.int64)
            buffer = cls(meta["capacity"], tuple(meta["obs_shape"]), tuple(meta["action_shape"]),
                         meta["action_dtype"], meta["prioritized"], meta["alpha"], meta["fanout"],
                         shared_name=shared_name, eps=meta["eps"], obs_dtype=meta.get("obs_dtype", _F32.str))
            size = int(counters[1])
            for name in TRANSITION_FIELDS:
                buffer._storage[name][:size] = state[name]
            if meta["prioritized"]:
                tree = buffer._sampler.tree
                tree.leaves[:size] = state["priorities"]
                tree.rebuild(size)
                buffer._sampler.max_seen[0] = state["max_seen"]
            buffer._storage["counters"][:] = counters
            buffer._stream.state = state["rng"]
        except (KeyError, TypeError, IndexError) as error:
            raise ValueError(f"state: not a ReplayBuffer state_dict ({error!r})") from None
        return buffer

    # ----------------------------------------------------------------- lifetime

    def close(self) -> None:
        """Release the storage; unlinks the shared segment if this buffer created it. Idempotent."""
        self._sampler = UniformSampler()
        self._writer = RingWriter(self.capacity, np.zeros(2, dtype=np.int64))
        self._sources = ()
        self._storage.close()


def _layout(meta: dict[str, Any]) -> Layout:
    capacity = meta["capacity"]
    obs_shape, action_shape = tuple(meta["obs_shape"]), tuple(meta["action_shape"])
    arrays: dict[str, tuple[Any, tuple[int, ...]]] = {
        "obs": (np.dtype(meta.get("obs_dtype", _F32.str)), (capacity, *obs_shape)),
        "actions": (np.dtype(meta["action_dtype"]), (capacity, *action_shape)),
        "rewards": (np.float32, (capacity,)),
        "next_obs": (np.dtype(meta.get("obs_dtype", _F32.str)), (capacity, *obs_shape)),
        "dones": (np.float32, (capacity,)),
        "counters": (np.int64, (2,)),
    }
    if meta["prioritized"]:
        arrays.update(PrioritizedSampler.arrays(capacity, meta["fanout"]))
    return Layout.of(arrays, meta)
