"""Experience replay: uniform and prioritized, batched, vectorized and shareable across processes.

Structured like TorchRL's replay: :mod:`~pearl_py.replay.storage` (preallocated
arrays, optionally in shared memory), :mod:`~pearl_py.replay.writer` (ring, wraps at
capacity) and :mod:`~pearl_py.replay.sampler` (uniform, or proportional on the
n-ary priority tree of :mod:`~pearl_py.replay.segment_tree`), composed by
:class:`ReplayBuffer`. :class:`TorchReplayBuffer` is the same buffer with its items and
priority tree on a torch device (a GPU), returning batches there. On-policy rollouts:
:class:`RolloutBuffer`. See ``docs/replay.md``.

Example::

    >>> import numpy as np
    >>> from pearl_py.replay import ReplayBuffer
    >>> with ReplayBuffer(capacity=100, obs_shape=(3,), action_shape=(1,), action_dtype=np.float32) as buf:
    ...     _ = buf.add(np.ones((2, 3)), np.zeros((2, 1)), [1.0, 0.0], np.ones((2, 3)), [False, True])
    ...     buf.sample(5).dones.shape
    (5,)
"""
from pearl_py.replay.buffer import ReplayBuffer, SampleBatch
from pearl_py.replay.rollout import RolloutBuffer, RolloutSample
from pearl_py.replay.sampler import PrioritizedSampler, UniformSampler
from pearl_py.replay.segment_tree import PriorityTree
from pearl_py.replay.storage import Layout, Storage
from pearl_py.replay.torch_buffer import TorchReplayBuffer, TorchSampleBatch
from pearl_py.replay.torch_tree import TorchPriorities
from pearl_py.replay.writer import RingWriter

__all__ = [
    "Layout", "PrioritizedSampler", "PriorityTree", "ReplayBuffer", "RingWriter", "RolloutBuffer", "RolloutSample",
    "SampleBatch", "Storage", "TorchPriorities", "TorchReplayBuffer", "TorchSampleBatch", "UniformSampler",
]
