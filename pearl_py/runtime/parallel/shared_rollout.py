"""One on-policy rollout in shared memory: every actor writes its envs' columns, the learner reads the whole.

The :class:`~pearl_py.replay.rollout.RolloutBuffer`'s arrays ``(n_steps, n_envs, ...)`` by global env index, V and
dones after the last step, and every ended episode's return and length. Actor ``i`` writes only its envs' columns,
only while the learner waits (the control block's counters order them): nothing locked or pickled. The Ray backend
holds the same arrays in process memory (``shared=False``) and moves columns through the object store.

Example::

    >>> shared = SharedRollout.create(algo, name="pearl-rollout")        # learner
    >>> actor_side = SharedRollout.attach("pearl-rollout")               # actor of envs 4..7
    >>> actor_side.put(t, range(4, 8), step)                             # every vector step
    >>> actor_side.put_last(range(4, 8), values, dones)
    >>> last_values, last_dones, episodes = shared.copy_into(rollout)    # learner, once all actors are done
    >>> learner_side.put_columns(range(4, 8), actor_side.columns(range(4, 8)))   # the Ray backend
"""
from __future__ import annotations

import numpy as np

from pearl_py.algorithms.on_policy.base import OnPolicyAlgorithm
from pearl_py.replay.rollout import RolloutBuffer
from pearl_py.replay.storage import Layout, OnSegment, Storage
from pearl_py.runtime.on_policy_collect import RolloutStep

STEP_FIELDS = ("obs", "actions", "rewards", "episode_starts", "values", "log_probs")
"""The rollout's arrays, in :meth:`RolloutBuffer.add`'s order."""
GRID_FIELDS = (*STEP_FIELDS, "episode_return", "episode_length")
"""The ``(n_steps, n_envs, ...)`` arrays."""
LAST_FIELDS = ("last_values", "last_dones")
"""The ``(n_envs,)`` arrays."""


class SharedRollout(OnSegment):
    """The arrays of one rollout in a shared-memory segment (see the module docstring)."""

    def __init__(self, storage: Storage) -> None:
        self._storage = storage
        self.arrays = {name: storage[name] for name in STEP_FIELDS}
        self.last_values, self.last_dones = storage["last_values"], storage["last_dones"]
        self.episode_return, self.episode_length = storage["episode_return"], storage["episode_length"]

    @classmethod
    def create(cls, algorithm: OnPolicyAlgorithm, name: str | None = None, shared: bool = True) -> SharedRollout:
        """A zeroed rollout: in a new shared-memory segment ``name``, or in this process's memory (``shared=False``)."""
        cfg, spec = algorithm.config, algorithm.spec
        grid = (cfg.n_steps, cfg.n_envs)
        layout = Layout.of({"obs": (np.dtype(spec.obs_dtype), grid + tuple(spec.obs_shape)),   # uint8 frames stay uint8
                            "actions": (spec.action_dtype, grid + spec.action_shape),
                            "rewards": (np.float32, grid), "episode_starts": (np.float32, grid),
                            "values": (np.float32, grid), "log_probs": (np.float32, grid),
                            "last_values": (np.float32, (cfg.n_envs,)), "last_dones": (np.float32, (cfg.n_envs,)),
                            "episode_return": (np.float64, grid), "episode_length": (np.int64, grid)})
        return cls(Storage.create(layout, shared=shared, name=name))

    def put(self, t: int, envs: range, step: RolloutStep) -> None:
        """Step ``t`` of envs ``envs``: the transitions and the episodes that ended with them."""
        columns = slice(envs.start, envs.stop)
        for name, value in zip(STEP_FIELDS, (step.obs, step.actions, step.rewards, step.episode_starts, step.values,
                                             step.log_probs)):
            self.arrays[name][t, columns] = value
        self.episode_length[t, columns] = 0
        for i, episode_return, length in step.step.ended:
            self.episode_return[t, envs.start + i] = episode_return
            self.episode_length[t, envs.start + i] = length

    def put_last(self, envs: range, values: np.ndarray, dones: np.ndarray) -> None:
        """V of envs ``envs``' observations after the last step, and whether that step ended their episodes."""
        self.last_values[envs.start:envs.stop] = values
        self.last_dones[envs.start:envs.stop] = dones

    def columns(self, envs: range) -> dict[str, np.ndarray]:
        """Copies of envs ``envs``' columns of every array (what :meth:`put_columns` takes)."""
        cols = slice(envs.start, envs.stop)
        part = {name: self._storage[name][:, cols].copy() for name in GRID_FIELDS}
        part.update({name: self._storage[name][cols].copy() for name in LAST_FIELDS})
        return part

    def put_columns(self, envs: range, part: dict[str, np.ndarray]) -> None:
        """Write envs ``envs``' columns of every array from :meth:`columns` of another rollout."""
        cols = slice(envs.start, envs.stop)
        for name in GRID_FIELDS:
            self._storage[name][:, cols] = part[name]
        for name in LAST_FIELDS:
            self._storage[name][cols] = part[name]

    def copy_into(self, rollout: RolloutBuffer) -> tuple[np.ndarray, np.ndarray, list[tuple[int, float, int]]]:
        """Fill ``rollout`` with the shared rollout; return the last values and dones (copies) and
        the episodes that ended as ``(env steps into the rollout when it ended, return, length)`` in step order,
        env order within a step (as the serial executor logs them)."""
        rollout.fill(*(self.arrays[name] for name in STEP_FIELDS))
        n_envs = self.last_values.shape[0]
        ended = [((t + 1) * n_envs, float(self.episode_return[t, e]), int(self.episode_length[t, e]))
                 for t, e in zip(*np.nonzero(self.episode_length))]
        return self.last_values.copy(), self.last_dones.copy(), ended

    def close(self) -> None:
        """Unmap; the creating process also unlinks the segment. Idempotent."""
        self.arrays = {}
        self.last_values = self.last_dones = self.episode_return = self.episode_length = None
        self._storage.close()
