"""A user's own gymnasium env in their own module: importing the module registers ``UserChain-v0``.

A chain of ``LENGTH`` cells; action 1 moves right, 0 left; reaching the right end gives reward 1 and ends the
episode. Its observation is a Discrete cell index (pearl_py one-hot encodes it, as SB3 does).
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np


class UserChain(gym.Env):
    LENGTH = 5

    def __init__(self, length: int = LENGTH) -> None:
        self.length = length
        self.observation_space = gym.spaces.Discrete(length)
        self.action_space = gym.spaces.Discrete(2)
        self.cell = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[int, dict]:
        super().reset(seed=seed)
        self.cell = 0
        return self.cell, {}

    def step(self, action) -> tuple[int, float, bool, bool, dict]:
        self.cell = int(np.clip(self.cell + (1 if int(action) == 1 else -1), 0, self.length - 1))
        done = self.cell == self.length - 1
        return self.cell, float(done), done, False, {}


if "UserChain-v0" not in gym.registry:
    gym.register("UserChain-v0", entry_point=UserChain, max_episode_steps=50)
