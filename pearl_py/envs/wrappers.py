"""Observation wrappers and the random-frame env that the env families' preprocessing uses.

Example::

    >>> import gymnasium as gym
    >>> OneHotObservation(gym.make("FrozenLake-v1")).observation_space.shape
    (16,)
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np


class OneHotObservation(gym.ObservationWrapper):
    """A Discrete observation ``i`` of ``n`` as the float32 one-hot vector ``e_(i - start)`` of length ``n``
    (Stable-Baselines3's ``preprocess_obs`` for Discrete spaces)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        space = env.observation_space
        self.start, self.n = int(space.start), int(space.n)
        self.observation_space = gym.spaces.Box(0.0, 1.0, (self.n,), np.float32)

    def observation(self, observation: int) -> np.ndarray:
        out = np.zeros(self.n, np.float32)
        out[int(observation) - self.start] = 1.0
        return out


class ChannelFirstFrames(gym.ObservationWrapper):
    """Boolean or 0..1 ``(H, W, C)`` planes (MinAtar's) as ``(C, H, W)`` uint8 frames of 0 and 255."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        h, w, c = env.observation_space.shape
        self.observation_space = gym.spaces.Box(0, 255, (c, h, w), np.uint8)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(np.moveaxis(observation, -1, 0)).astype(np.uint8) * np.uint8(255)


class StackedFrames(gym.Wrapper):
    """The last ``k`` ``(C, H, W)`` frames stacked channel-first, oldest first: ``(k * C, H, W)``, zeros before
    an episode's first frame (Stable-Baselines3's ``VecFrameStack``, which the zoo's ``frame_stack`` adds).

    The stack is one preallocated array: a step shifts it by one frame in place and writes the new frame; the
    observation returned is its one copy (the caller may keep it, as a vector env keeps a final observation).
    """

    def __init__(self, env: gym.Env, k: int) -> None:
        super().__init__(env)
        space = env.observation_space
        self.planes = space.shape[0]
        self.stack = np.zeros((k * self.planes, *space.shape[1:]), space.dtype)
        self.observation_space = gym.spaces.Box(np.concatenate([space.low] * k), np.concatenate([space.high] * k),
                                                dtype=space.dtype)

    def _push(self, frame: np.ndarray) -> np.ndarray:
        self.stack[:-self.planes] = self.stack[self.planes:]
        self.stack[-self.planes:] = frame
        return self.stack.copy()

    def reset(self, **kwargs) -> tuple[np.ndarray, dict]:
        frame, info = self.env.reset(**kwargs)
        self.stack[:] = 0
        return self._push(frame), info

    def step(self, action) -> tuple[np.ndarray, float, bool, bool, dict]:
        frame, *rest = self.env.step(action)
        return self._push(frame), *rest


class RandomFrames(gym.Env):
    """Uniform random uint8 frames of ``shape``; reward 1 for action 0 (discrete) or ``-|a|^2`` (continuous).

    Nothing to learn beyond the reward rule: it exercises CNN workloads (micro-benchmarks, tests) without
    an optional env package. Episodes end after ``EPISODE`` steps (a time limit: truncated).
    """

    EPISODE = 32

    def __init__(self, shape: tuple[int, int, int], continuous: bool = False) -> None:
        self.observation_space = gym.spaces.Box(0, 255, shape, np.uint8)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32) if continuous else gym.spaces.Discrete(3)
        self.continuous = continuous

    def _frame(self) -> np.ndarray:
        return self.np_random.integers(0, 256, self.observation_space.shape, dtype=np.uint8)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        return self._frame(), {}

    def step(self, action) -> tuple[np.ndarray, float, bool, bool, dict]:
        reward = -float(np.sum(np.square(action))) if self.continuous else float(action == 0)
        return self._frame(), reward, False, False, {}
