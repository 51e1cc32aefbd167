"""TorchReplayBuffer: the replay buffer with its storage, sampling and priorities on a torch device.

Same public interface and semantics as :class:`~pearl_py.replay.buffer.ReplayBuffer`
(the numpy buffer: ring writer, uniform or proportional prioritized sampling, IS weights
``(p_min / p_i)^beta``, priorities ``(|td| + eps)^alpha``, new items at the largest
priority seen, the same argument checks and messages), but the items and the
priorities (:class:`~pearl_py.replay.torch_tree.TorchPriorities`) live on ``device``, and
:meth:`TorchReplayBuffer.sample` returns tensors there, so a learner on that device
trains on them without a copy. Every operation is a fixed number of torch calls, whatever
the capacity, none reads a value back to the host (see :meth:`update_priorities` for
how refused updates are reported on a GPU), and the random numbers come from a
``torch.Generator`` on the device seeded with ``seed``. Checkpoints are in the numpy
buffer's ``state_dict`` format, so one moves between the two buffers.

On the CPU device (the tests' device) it runs the same code as on a GPU; on a CPU,
the numpy buffer is the faster choice.

Example::

    >>> buf = TorchReplayBuffer(capacity=1000, obs_shape=(4,), prioritized=True, seed=0, device="cpu")
    >>> obs = np.zeros((8, 4), dtype=np.float32)
    >>> buf.add(obs, np.arange(8), np.ones(8), obs, np.zeros(8, dtype=bool)).tolist()
    [0, 1, 2, 3, 4, 5, 6, 7]
    >>> batch = buf.sample(4, beta=0.4)
    >>> batch.obs.shape, batch.weights.dtype, batch.indices.device
    (torch.Size([4, 4]), torch.float32, device(type='cpu'))
    >>> buf.update_priorities(batch.indices, torch.tensor([0.5, 1.0, 2.0, 0.1]))
    >>> from pearl_py.replay import ReplayBuffer
    >>> restored = ReplayBuffer.load_state_dict(buf.state_dict())       # the numpy buffer, same items
    >>> len(restored), restored.prioritized
    (8, True)
    >>> restored.close(); buf.close()
"""
from __future__ import annotations

import copy
import functools
import math
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from pearl_py.replay import checks, kernels
from pearl_py.replay.buffer import TRANSITION_FIELDS, ReplayBase
from pearl_py.replay.staging import torch_dtype, upload
from pearl_py.replay.torch_tree import TorchPriorities
from pearl_py.replay.writer import RingWriter

MAX_PENDING_CHECKS = 64
"""Priority updates' checks left unread at most on a GPU; beyond, the oldest is waited for (bounded memory)."""

__all__ = ["TorchReplayBuffer", "TorchSampleBatch"]


@dataclass
class TorchSampleBatch:
    """A sampled batch of transitions: tensors on the buffer's device, leading dimension ``B``.

    The fields of :class:`~pearl_py.replay.buffer.SampleBatch`, with the same dtypes:
    ``dones`` is 1.0 where the episode terminated, ``indices`` (int64) are the slots
    drawn (pass them back to :meth:`TorchReplayBuffer.update_priorities`), ``weights``
    (float32) the importance-sampling weights (all ones for uniform replay).
    """

    obs: torch.Tensor
    actions: torch.Tensor
    rewards: torch.Tensor
    next_obs: torch.Tensor
    dones: torch.Tensor
    indices: torch.Tensor
    weights: torch.Tensor

    def __len__(self) -> int:
        return len(self.indices)


class TorchReplayBuffer(ReplayBase):
    """Fixed-capacity replay of ``(obs, action, reward, next_obs, terminated)`` transitions on a torch device.

    The settings are :class:`~pearl_py.replay.buffer.ReplayBuffer`'s (``fanout``, the numpy
    buffer's tree's, is only kept for checkpoints: the priorities here are flat);
    ``device`` is a CPU or CUDA device. One writer
    at a time; not shareable across processes.
    """

    def __init__(self, capacity: int, obs_shape: tuple[int, ...], action_shape: tuple[int, ...] = (),
                 action_dtype: Any = np.int64, prioritized: bool = False, alpha: float = 0.6, fanout: int = 16,
                 seed: int = 0, device: torch.device | str = "cpu", eps: float = 1e-6, obs_dtype: Any = np.float32
                 ) -> None:
        meta = checks.buffer_settings(capacity, obs_shape, action_shape, action_dtype, prioritized, alpha, fanout,
                                      eps, obs_dtype)
        self._obs_dtype = np.dtype(meta["obs_dtype"])      # uint8 frames stay uint8 on the device (1/4 the bytes)
        obs_torch = torch.uint8 if self._obs_dtype == np.uint8 else torch.float32
        self._device = _device(device)
        self._action_dtype = np.dtype(meta["action_dtype"])
        if self._action_dtype.kind == "u" and self._action_dtype.itemsize > 1:
            raise ValueError(f"action_dtype: torch cannot gather {self._action_dtype} rows; use a signed integer dtype")
        seed = checks.non_negative_int("seed", seed)
        self._meta = meta
        self._obs_shape = tuple(meta["obs_shape"])
        self._action_shape = tuple(meta["action_shape"])
        self._writer = RingWriter(capacity, np.zeros(2, dtype=np.int64))
        rows = {
            "obs": (obs_torch, self._obs_shape),
            "actions": (torch_dtype(self._action_dtype), self._action_shape),
            "rewards": (torch.float32, ()),
            "next_obs": (obs_torch, self._obs_shape),
            "dones": (torch.float32, ()),
        }
        self._fields = {name: torch.zeros((capacity, *shape), dtype=dtype, device=self._device)
                        for name, (dtype, shape) in rows.items()}
        """The stored fields, ``capacity`` rows each (the slots the ring writer hands out)."""
        self._priorities: TorchPriorities | None = None
        self._max_seen = torch.ones((), dtype=torch.float64, device=self._device)
        """The largest ``|td| + eps`` ever given (1 before any update, as in the paper)."""
        if meta["prioritized"]:
            self._priorities = TorchPriorities(capacity, self._device)
        self._generator = torch.Generator(device=self._device)
        self._generator.manual_seed(seed)
        self._rng_state = np.random.default_rng(seed).bit_generator.state
        """The numpy buffer's generator state this buffer's checkpoints carry (see ``docs/replay.md``)."""
        self._defer_checks = self._device.type == "cuda"
        self._pending: deque[_PendingCheck] = deque()
        """Priority updates' checks whose result is on its way to the host, oldest first (on a GPU)."""
        self._steps: dict[int, torch.Tensor] = {}
        """The strata offsets of each batch size sampled so far (:meth:`_strata`)."""
        self._closed = False

    # ----------------------------------------------------------------- properties

    @property
    def device(self) -> torch.device:
        """Where the items, the priorities and the sampled batches are."""
        return self._device

    def _check_open(self, wait: bool = False) -> None:
        """Refuse work on a closed buffer, and raise the error of a refused priority update not yet reported.

        Checks are read in update order, only once their result has reached the host (never waiting for the
        device), except beyond :data:`MAX_PENDING_CHECKS` unread (the oldest is waited for) or with ``wait``.
        """
        if self._closed:
            raise ValueError("buffer is closed")
        while self._pending and (wait or len(self._pending) > MAX_PENDING_CHECKS or self._pending[0].arrived()):
            self._pending.popleft().raise_if_refused()

    # ----------------------------------------------------------------- add

    def add(self, obs: Any, actions: Any, rewards: Any, next_obs: Any, terminated: Any) -> np.ndarray:
        """Store ``N`` transitions given as host arrays (leading dimension ``N <= capacity``); returns the slots.

        Checked on the host like the numpy buffer's, then copied to the device in one transfer
        (:func:`~pearl_py.replay.staging.upload`: one pinned staging buffer, not waited for, on a GPU) and into
        the ring's slots there. Once full, the oldest items are
        overwritten; in prioritized mode new items get the largest priority seen so far.
        """
        self._check_open()
        rows = checks.transition_rows(obs, actions, rewards, next_obs, terminated, self.capacity, self._obs_shape,
                                      self._action_shape, self._action_dtype, self._obs_dtype)
        return self._add(rows, len(rows["obs"]))

    def _add(self, rows: dict[str, np.ndarray], n: int) -> np.ndarray:
        staged = dict(zip(TRANSITION_FIELDS, upload([rows[name] for name in TRANSITION_FIELDS], self._device),
                          strict=True))   # one staging buffer, one transfer; the ring's runs are copied on the device
        runs = self._writer.write(n)
        new_priority = self._max_seen.pow(self._meta["alpha"]) if self._priorities is not None else None
        done = 0
        for start, stop in runs:
            for name in TRANSITION_FIELDS:
                self._fields[name][start:stop].copy_(staged[name][done:done + stop - start])
            if self._priorities is not None:
                self._priorities.fill(start, stop, new_priority)
            done += stop - start
        return np.concatenate([np.arange(start, stop, dtype=np.int64) for start, stop in runs])

    # ----------------------------------------------------------------- sample

    def sample(self, batch_size: int, beta: float = 0.4) -> TorchSampleBatch:
        """Draw ``batch_size`` transitions with replacement (so it may exceed ``len(self)``), as device tensors.

        Prioritized buffers draw by stratified proportional sampling and return IS
        weights ``(N * P(i))^-beta / max_j w_j``; uniform buffers return unit weights.
        """
        self._check_open()
        size = self._writer.size
        batch_size, beta = checks.sample_request(batch_size, beta, size)
        return self._sample(batch_size, beta, size)

    def _sample(self, batch_size: int, beta: float, size: int) -> TorchSampleBatch:
        if self._priorities is None:
            indices = torch.randint(size, (batch_size,), generator=self._generator, device=self._device)
            weights = torch.ones(batch_size, dtype=torch.float32, device=self._device)
        else:
            indices, weights = self._draw_prioritized(self._priorities, batch_size, beta, size)
        rows = [self._fields[name].index_select(0, indices) for name in TRANSITION_FIELDS]
        return TorchSampleBatch(*rows, indices, weights)

    def _draw_prioritized(self, prios: TorchPriorities, batch_size: int, beta: float,
                          size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Stratified proportional draw: target ``j`` is ``(j + u_j) * total / B``; weights ``(p_min / p_i)^beta``.

        The paper's weight ``(N P(i))^-beta / (N p_min / total)^-beta`` is ``(p_min / p_i)^beta``:
        ``N`` and the total cancel (as in the numpy buffer).
        """
        u = torch.rand(batch_size, dtype=torch.float64, generator=self._generator, device=self._device)
        running = prios.running(size)
        indices = prios.find(running, (u + self._strata(batch_size)) * (running[-1] / batch_size))
        weights = (prios.min(size) / prios.leaves[indices]).pow(beta).float()
        return indices, weights

    # ----------------------------------------------------------------- priorities

    def update_priorities(self, indices: Any, td_errors_abs: Any) -> None:
        """Set the priorities of written slots to ``(|td_error| + eps)^alpha`` (last one wins on duplicates).

        ``indices`` and ``td_errors_abs`` are tensors (on any device) or arrays. Dtypes
        and shapes are checked at once, as the numpy buffer does. The values (indices
        written, TD errors finite and non-negative) are checked on the device, and an
        update with a bad value writes nothing; on the CPU device the error is raised
        here, on a GPU by a later call of the buffer: the first once the device has run
        the update (the host never waits for it: reading the result here, or at the next
        call, would make it wait for the learner's step), at the latest by the call that
        finds more than :data:`MAX_PENDING_CHECKS` unread, or by :meth:`state_dict`.
        """
        self._check_open()
        prios = self._priorities
        if prios is None:
            raise ValueError("indices: update_priorities needs a buffer created with prioritized=True")
        slots, slots_dtype = _values(indices)
        errors, errors_dtype = _values(td_errors_abs)
        checks.priority_update_layout(slots_dtype, tuple(slots.shape), errors_dtype, tuple(errors.shape))
        slots, errors = self._on_device((slots, torch.int64), (errors, torch.float64))
        size = self._writer.size
        valid = ((slots >= 0) & (slots < size) & (errors >= 0) & (errors < math.inf)).all()     # NaN fails both
        safe = slots.clamp(0, max(size - 1, 0))             # a refused update writes the old values back
        raw = errors + self._meta["eps"]
        prios.set(safe, torch.where(valid, raw.pow(self._meta["alpha"]), prios.leaves[safe]))
        self._max_seen.copy_(torch.where(valid, torch.maximum(self._max_seen, raw.max()), self._max_seen))
        pending = _PendingCheck(valid, slots, errors, size)
        if self._defer_checks:
            self._pending.append(pending.queued())
        else:
            pending.raise_if_refused()

    def _strata(self, batch_size: int) -> torch.Tensor:
        """``0, 1, ..., B - 1`` in float64 on the device, made once per batch size (not a launch per sample)."""
        steps = self._steps.get(batch_size)
        if steps is None:
            steps = self._steps[batch_size] = torch.arange(batch_size, dtype=torch.float64, device=self._device)
        return steps

    def _on_device(self, *values: tuple[torch.Tensor | np.ndarray, torch.dtype]) -> list[torch.Tensor]:
        """Each value as a tensor of its dtype on the buffer's device: the host arrays in one upload, tensors as
        they are (no copy when one already is on the device with its dtype)."""
        host = [array for array, _ in values if isinstance(array, np.ndarray)]
        uploaded = iter(upload(host, self._device) if host else [])
        return [(next(uploaded) if isinstance(array, np.ndarray) else array).to(self._device, dtype, non_blocking=True)
                for array, dtype in values]

    # ----------------------------------------------------------------- cost model

    def _item_bytes(self) -> int:
        return sum(field[0].numel() * field.element_size() for field in self._fields.values())

    # ----------------------------------------------------------------- checkpoints

    def state_dict(self) -> dict[str, Any]:
        """Host copies of the items, priorities and counters, in :meth:`ReplayBuffer.state_dict`'s format.

        Besides the numpy buffer's keys, ``torch_rng`` (the generator's state, uint8) and
        ``torch_rng_device`` (its device type), which :meth:`ReplayBuffer.load_state_dict` ignores.
        A refused priority update still unread is waited for and raised first.
        """
        self._check_open(wait=True)
        size = self._writer.size
        state: dict[str, Any] = {"meta": dict(self._meta), "counters": self._writer.counters.copy(),
                                 "rng": copy.deepcopy(self._rng_state)}
        for name in TRANSITION_FIELDS:
            state[name] = self._fields[name][:size].to("cpu", copy=True).numpy()
        if self._priorities is not None:
            state["priorities"] = self._priorities.leaves[:size].to("cpu", copy=True).numpy()
            state["max_seen"] = float(self._max_seen)
        state["torch_rng"] = self._generator.get_state().numpy().copy()
        state["torch_rng_device"] = self._device.type
        return state

    @classmethod
    def load_state_dict(cls, state: dict[str, Any], device: torch.device | str = "cpu") -> TorchReplayBuffer:
        """A new buffer on ``device`` holding what a ``state_dict()`` of either buffer captured.

        The generator resumes from ``torch_rng`` when the state has one from the same
        device type; otherwise (a numpy buffer's state, or another device type's) it is
        seeded from the state's numpy generator, so loading is deterministic either way.
        """
        try:
            meta, counters = state["meta"], np.asarray(state["counters"], dtype=np.int64)
            buffer = cls(meta["capacity"], tuple(meta["obs_shape"]), tuple(meta["action_shape"]),
                         meta["action_dtype"], meta["prioritized"], meta["alpha"], meta["fanout"],
                         device=device, eps=meta["eps"], obs_dtype=meta.get("obs_dtype", "<f4"))
            size = int(counters[1])
            for name in TRANSITION_FIELDS:
                field = buffer._fields[name]
                field[:size] = _host_tensor(np.asarray(state[name], dtype=_numpy_dtype(field.dtype)))
            if buffer._priorities is not None:
                buffer._priorities.leaves[:size] = _host_tensor(np.asarray(state["priorities"], dtype=np.float64))
                buffer._max_seen.fill_(float(state["max_seen"]))
            buffer._writer.counters[:] = counters
            buffer._restore_generator(state)
        except (KeyError, TypeError, IndexError, RuntimeError) as error:
            raise ValueError(f"state: not a ReplayBuffer state_dict ({error!r})") from None
        return buffer

    def _restore_generator(self, state: dict[str, Any]) -> None:
        numpy_generator = np.random.Generator(np.random.PCG64())
        try:
            numpy_generator.bit_generator.state = state["rng"]
        except ValueError as error:                                 # not a PCG64 state
            raise ValueError(f"state: rng: {error}") from None
        self._rng_state = numpy_generator.bit_generator.state
        if state.get("torch_rng_device") == self._device.type:
            self._generator.set_state(_host_tensor(np.asarray(state["torch_rng"], dtype=np.uint8)))
        else:
            self._generator.manual_seed(int(numpy_generator.integers(2**63)))

    # ----------------------------------------------------------------- lifetime

    def close(self) -> None:
        """Release the device memory (an unreported refused update is dropped). Idempotent."""
        self._closed = True
        self._fields = {}
        self._priorities = None
        self._pending.clear()


@dataclass
class _PendingCheck:
    """The outcome of a priority update's value checks: ``valid`` (a 0-d bool tensor) and what it judged."""

    valid: torch.Tensor
    indices: torch.Tensor
    td_errors_abs: torch.Tensor
    size: int
    done: torch.cuda.Event | None = None

    def queued(self) -> _PendingCheck:
        """This check with ``valid`` on its way to pinned host memory behind the update (on a GPU), not waited for."""
        if self.valid.device.type != "cuda":
            return self
        host = torch.empty((), dtype=torch.bool, pin_memory=True)
        host.copy_(self.valid, non_blocking=True)
        done = torch.cuda.Event()
        done.record(torch.cuda.current_stream(self.valid.device))   # the buffer's device, not the current one
        return _PendingCheck(host, self.indices, self.td_errors_abs, self.size, done)

    def arrived(self) -> bool:
        """Whether the result has reached the host (asks the device; never waits)."""
        return self.done is None or self.done.query()

    def raise_if_refused(self) -> None:
        """Wait for the result if it is still on its way; raise the numpy buffer's error if the update was refused.

        The culprit is looked up on the host, from the update's inputs as they are now.
        """
        if self.done is not None:
            self.done.synchronize()
        if bool(self.valid):
            return
        indices, values = self.indices.cpu().numpy(), self.td_errors_abs.cpu().numpy()
        status, position = kernels.first_problem(indices, values, self.size)
        raise checks.refused_update(status, position, indices, self.size)


def _device(value: torch.device | str) -> torch.device:
    """``value`` as a CPU or CUDA device (the priorities are float64, which not every torch backend has)."""
    try:
        device = torch.device(value)
    except (RuntimeError, TypeError):
        raise ValueError(f"device: expected a torch device such as 'cpu' or 'cuda:0', got {value!r}") from None
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"device: expected a CPU or CUDA device, got {device}")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device: {device} asked for, but CUDA is not available here")
    return device


def _values(value: Any) -> tuple[torch.Tensor | np.ndarray, np.dtype]:
    """``value`` as a tensor (kept where it is) or a numpy array, with the numpy dtype its checks go by."""
    if isinstance(value, torch.Tensor):
        return value, _numpy_dtype(value.dtype)
    array = np.asarray(value)
    return array, array.dtype


@functools.cache
def _numpy_dtype(dtype: torch.dtype) -> np.dtype:
    """The numpy dtype of a torch dtype (bfloat16, which numpy lacks, counts as float32)."""
    if dtype == torch.bfloat16:
        return np.dtype(np.float32)
    return torch.empty(0, dtype=dtype).numpy().dtype


def _host_tensor(array: np.ndarray) -> torch.Tensor:
    """A CPU tensor on ``array``'s memory (on a contiguous, writeable copy if it is neither, as torch needs)."""
    return torch.from_numpy(np.require(array, requirements=("C", "W")))


