"""An env whose observations and rewards do not depend on the actions, and that writes down every observation the
collector counts: importing the module registers ``RecordingClock-v0`` (tests of ``normalize``'s statistics).

Each episode draws its length (3 to 8 steps) and a phase from the env's generator at reset; the observation at
step ``t`` is ``[phase + t / 2, 3 sin(t) + phase]`` and the reward ``phase + t / 10``. With ``record`` (a folder),
each env object appends to its own file ``<pid>-<object id>.txt`` one line ``obs a b`` per reset observation and
per observation of a step that does not end the episode (what SB3's VecNormalize updates with: an ended episode's
last observation is replaced by the next reset's), and ``reward r done`` per step, in the order it made them.
"""
from __future__ import annotations

import os
from pathlib import Path

import gymnasium as gym
import numpy as np


class RecordingClock(gym.Env):
    def __init__(self, record: str = "") -> None:
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.file = Path(record) / f"{os.getpid()}-{id(self)}.txt" if record else None
        self.t, self.length, self.phase = 0, 0, 0.0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t, self.length = 0, int(self.np_random.integers(3, 9))
        self.phase = float(self.np_random.normal())
        obs = self._obs()
        self._write(f"obs {float(obs[0])!r} {float(obs[1])!r}")
        return obs, {}

    def step(self, action) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        reward, done, obs = self.phase + self.t / 10, self.t >= self.length, self._obs()
        self._write(f"reward {reward!r} {int(done)}")
        if not done:
            self._write(f"obs {float(obs[0])!r} {float(obs[1])!r}")
        return obs, reward, done, False, {}

    def _obs(self) -> np.ndarray:
        return np.array([self.phase + self.t / 2, 3 * np.sin(self.t) + self.phase], np.float32)

    def _write(self, line: str) -> None:
        if self.file is not None:
            with self.file.open("a") as out:
                out.write(line + "\n")


if "RecordingClock-v0" not in gym.registry:
    gym.register("RecordingClock-v0", entry_point=RecordingClock)
