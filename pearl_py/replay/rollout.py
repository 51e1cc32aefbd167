"""RolloutBuffer: the storage of an on-policy rollout, ``n_steps x n_envs`` preallocated numpy arrays.

Filled step by step (:meth:`RolloutBuffer.add`, the ``rollout_insert`` kernel), then its
advantages and returns are computed once (:meth:`RolloutBuffer.compute_advantages`, the
``advantage`` kernel, GAE(lambda)), then the learner reads it in shuffled minibatches
(:meth:`RolloutBuffer.minibatch_indices`, a permutation from the buffer's own seeded generator)
for some epochs, and the next rollout overwrites it (:meth:`RolloutBuffer.reset`).

Example::

    >>> buf = RolloutBuffer(n_steps=2, n_envs=3, obs_shape=(4,), action_shape=(), action_dtype=np.int64, seed=0)
    >>> for _ in range(2):
    ...     buf.add(np.zeros((3, 4)), np.zeros(3), np.ones(3), np.zeros(3), np.zeros(3), np.zeros(3))
    >>> buf.compute_advantages(np.zeros(3), np.zeros(3), gamma=0.99, gae_lambda=0.95)
    >>> [len(buf.sample(indices).advantages) for indices in buf.minibatch_indices(4)]
    [4, 2]
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from pearl_py.replay.gae import gae

STEP_FIELDS = ("obs", "actions", "rewards", "episode_starts", "values", "log_probs")
"""The arrays a vector step stores (:meth:`RolloutBuffer.add`); advantages and returns are computed."""


@dataclass(frozen=True)
class RolloutSample:
    """A minibatch of a rollout (numpy arrays, first axis the transitions)."""

    obs: np.ndarray
    actions: np.ndarray
    old_values: np.ndarray
    old_log_probs: np.ndarray
    advantages: np.ndarray
    returns: np.ndarray


class RolloutBuffer:
    """One rollout: observations, actions, rewards, episode starts, values and log-probs per (step, env)."""

    def __init__(self, n_steps: int, n_envs: int, obs_shape: tuple[int, ...], action_shape: tuple[int, ...],
                 action_dtype: type, seed: int = 0, obs_dtype: type | str = np.float32) -> None:
        if n_steps < 1 or n_envs < 1:
            raise ValueError(f"a rollout needs n_steps >= 1 and n_envs >= 1, got {n_steps} x {n_envs}")
        self.n_steps, self.n_envs = n_steps, n_envs
        grid = (n_steps, n_envs)
        # obs (uint8 frames stay uint8), actions, rewards, episode_starts (1 where the observation is the first of an episode: the previous
        # step ended one), values, log_probs, advantages, returns: one item per (step, env)
        for name, (dtype, shape) in self.fields(obs_shape, action_shape, action_dtype, obs_dtype).items():
            setattr(self, name, np.zeros(grid + shape, dtype=dtype))
        self.rng = np.random.default_rng(seed)
        self.pos = 0
        self.ready = False
        """True once the advantages of a full rollout are computed (minibatches may be read)."""

    @staticmethod
    def fields(obs_shape: tuple[int, ...], action_shape: tuple[int, ...], action_dtype: Any,
               obs_dtype: Any = np.float32) -> dict[str, Any]:
        """``{name: (dtype, shape of one (step, env) item)}`` of the arrays a rollout holds, in order."""
        one = ()
        return {"obs": (np.dtype(obs_dtype), tuple(obs_shape)), "actions": (np.dtype(action_dtype), tuple(action_shape)),
                **{name: (np.float32, one) for name in ("rewards", "episode_starts", "values", "log_probs",
                                                        "advantages", "returns")}}

    @classmethod
    def item_bytes(cls, obs_shape: tuple[int, ...], action_shape: tuple[int, ...], action_dtype: Any,
                   obs_dtype: Any = np.float32) -> int:
        """Bytes one (step, env) item takes in a rollout (``n_steps * n_envs`` of them)."""
        return sum(np.dtype(dtype).itemsize * math.prod(shape)
                   for dtype, shape in cls.fields(obs_shape, action_shape, action_dtype, obs_dtype).values())

    @property
    def size(self) -> int:
        """Transitions in a full rollout."""
        return self.n_steps * self.n_envs

    @property
    def full(self) -> bool:
        return self.pos == self.n_steps

    def reset(self) -> None:
        """Start the next rollout (the arrays are overwritten, not reallocated)."""
        self.pos = 0
        self.ready = False

    def add(self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray, episode_starts: np.ndarray,
            values: np.ndarray, log_probs: np.ndarray) -> None:
        """Store one vector step: ``(n_envs, ...)`` arrays; ``rewards`` already hold any truncation bootstrap."""
        if self.full:
            raise RuntimeError(f"rollout is full ({self.n_steps} steps): reset() before adding")
        for name, value in zip(STEP_FIELDS, (obs, actions, rewards, episode_starts, values, log_probs)):
            getattr(self, name)[self.pos] = value
        self.pos += 1

    def fill(self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray, episode_starts: np.ndarray,
             values: np.ndarray, log_probs: np.ndarray) -> None:
        """A whole rollout at once: ``(n_steps, n_envs, ...)`` arrays, as ``n_steps`` calls of :meth:`add` would store
        them (a parallel run's learner copying the rollout its actors wrote)."""
        self.reset()
        for name, value in zip(STEP_FIELDS, (obs, actions, rewards, episode_starts, values, log_probs)):
            getattr(self, name)[...] = value
        self.pos = self.n_steps

    def compute_advantages(self, last_values: np.ndarray, last_dones: np.ndarray, gamma: float,
                           gae_lambda: float) -> None:
        """GAE(lambda) advantages and TD(lambda) returns of the full rollout (:func:`~.gae.gae`).

        ``last_values``: V of the observations after the last step; ``last_dones``: whether that
        step ended each env's episode.
        """
        if not self.full:
            raise RuntimeError(f"rollout holds {self.pos} of {self.n_steps} steps: advantages need all of them")
        self.advantages[:], self.returns[:] = gae(self.rewards, self.values, self.episode_starts, last_values,
                                                  last_dones, gamma, gae_lambda)
        self.ready = True

    def minibatch_indices(self, batch_size: int) -> Iterator[np.ndarray]:
        """One epoch: flat indices of every transition once, in a fresh random order, ``batch_size`` at a
        time (the last minibatch holds the remainder when ``batch_size`` does not divide the rollout)."""
        if not self.ready:
            raise RuntimeError("compute_advantages() before reading minibatches")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        order = self.rng.permutation(self.size)
        for start in range(0, self.size, batch_size):
            yield order[start:start + batch_size]

    def sample(self, indices: np.ndarray) -> RolloutSample:
        """The transitions at flat ``indices`` (step-major: index ``t * n_envs + env``)."""
        def flat(a: np.ndarray) -> np.ndarray:
            return a.reshape((self.size,) + a.shape[2:])[indices]

        return RolloutSample(flat(self.obs), flat(self.actions), flat(self.values), flat(self.log_probs),
                             flat(self.advantages), flat(self.returns))
