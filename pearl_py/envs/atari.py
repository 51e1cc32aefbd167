"""The zoo's Atari preprocessing (Stable-Baselines3's ``AtariWrapper`` with its defaults; its layers: docs/api.md,
"Image observations"), and the true episodes (games) of an env whose episodes are its lives.

Frames are read straight from the emulator into preallocated buffers: a step allocates only the observation it
returns. True episodes count as SB3's ``Monitor`` under the wrapper does (every frame's unclipped reward and every
frame since the last real reset), reported in the infos as :mod:`pearl_py.envs.episodes` says.

Example::

    >>> import ale_py, gymnasium
    >>> gymnasium.register_envs(ale_py)
    >>> env = AtariPreprocessing(gymnasium.make("BreakoutNoFrameskip-v4"))
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, obs.dtype
    ((1, 84, 84), dtype('uint8'))
"""
from __future__ import annotations

import inspect
from typing import Any

import gymnasium as gym
import numpy as np

from pearl_py.envs.episodes import GAME_FRAMES, GAME_OVER, GAME_RETURN

NOOP, FIRE = 0, 1
"""Action indices of NOOP and FIRE in an Atari game's minimal action set."""


class AtariPreprocessing(gym.Wrapper):
    """SB3's ``AtariWrapper(env, noop_max, frame_skip, screen_size, terminal_on_life_loss, clip_reward)``
    (its defaults), on a gymnasium Atari env that repeats no frame itself (``*NoFrameskip-v4``, or ``ALE/*`` made
    with ``frameskip=1``)."""

    def __init__(self, env: gym.Env, noop_max: int = 30, frame_skip: int = 4, screen_size: int = 84,
                 terminal_on_life_loss: bool = True, clip_reward: bool = True) -> None:
        import cv2       # of the atari extra, imported where an Atari env is made

        super().__init__(env)
        self.cv2 = cv2
        atari = env.unwrapped
        if atari.get_action_meanings()[NOOP] != "NOOP":
            raise ValueError(f"{env.spec.id}: action 0 is not NOOP, which the no-op reset needs")
        self.ale, self.actions = atari.ale, atari._action_set     # the action set AtariEnv.step indexes
        self.noop_max, self.frame_skip, self.clip_reward = noop_max, frame_skip, clip_reward
        self.terminal_on_life_loss = terminal_on_life_loss
        meanings = atari.get_action_meanings()
        self.fire_reset = "FIRE" in meanings and meanings[FIRE] == "FIRE" and len(meanings) >= 3
        self.size = screen_size
        rgb = env.observation_space.shape
        self._last2 = np.zeros((2, *rgb), np.uint8)      # the last two frames of a step, kept across steps as SB3's
        self._max = np.empty(rgb, np.uint8)
        self._grey = np.empty(rgb[:2], np.uint8)
        self.observation_space = gym.spaces.Box(0, 255, (1, screen_size, screen_size), np.uint8)
        self.lives = 0
        self.real_done = True      # the last inner step ended the game: the next reset is a real one
        self.game_return, self.game_frames = 0.0, 0
        self._ended: dict[str, Any] | None = None     # a game that ended inside a reset, for the reset's info

    # --- the layers, from the emulator up ---------------------------------------------------------------------
    def _frame(self, action: int) -> tuple[float, bool, bool]:
        """One emulator frame (gymnasium's AtariEnv step with frameskip 1), counted in the true episode."""
        reward = float(self.ale.act(self.actions[action], 1.0))
        terminated, truncated = self.ale.game_over(with_truncation=False), self.ale.game_truncated()
        self.game_return += reward
        self.game_frames += 1
        if terminated or truncated:
            self._ended = {GAME_OVER: True, GAME_RETURN: self.game_return, GAME_FRAMES: self.game_frames}
        return reward, terminated, truncated

    def _real_reset(self, **kwargs: Any) -> dict:
        """The env's reset then the no-op frames; the frame to observe is the last raw one."""
        _, info = self.env.reset(**kwargs)
        self.game_return, self.game_frames = 0.0, 0
        if self.noop_max > 0:
            for _ in range(int(self.env.unwrapped.np_random.integers(1, self.noop_max + 1))):
                _, terminated, truncated = self._frame(NOOP)
                if terminated or truncated:
                    _, info = self.env.reset(**kwargs)
                    self.game_return, self.game_frames = 0.0, 0
        self.ale.getScreenRGB(self._max)
        return info

    def _skip(self, action: int) -> tuple[float, bool, bool]:
        """``action`` on ``frame_skip`` frames (fewer when the game ends); the frame to observe is the max of the
        last two frames written."""
        total, terminated, truncated = 0.0, False, False
        for i in range(self.frame_skip):
            reward, terminated, truncated = self._frame(action)
            if i >= self.frame_skip - 2:
                self.ale.getScreenRGB(self._last2[i - self.frame_skip + 2])
            total += reward
            if terminated or truncated:
                break
        np.maximum(self._last2[0], self._last2[1], out=self._max)
        return total, terminated, truncated

    def _life_step(self, action: int) -> tuple[float, bool, bool]:
        """A skipped step where a lost life (lives still above 0) ends the episode."""
        reward, terminated, truncated = self._skip(action)
        if not self.terminal_on_life_loss:
            return reward, terminated, truncated
        self.real_done = terminated or truncated
        lives = self.ale.lives()
        terminated = terminated or 0 < lives < self.lives
        self.lives = lives
        return reward, terminated, truncated

    def _life_reset(self, **kwargs: Any) -> dict:
        """A real reset after game over; after a lost life, one no-op step instead (a real reset if it ends the
        game)."""
        if not self.terminal_on_life_loss or self.real_done:
            info = self._real_reset(**kwargs)
        else:
            _, terminated, truncated = self._skip(NOOP)
            info = {"lives": self.ale.lives()}
            if terminated or truncated:
                info = self._real_reset(**kwargs)
        self.lives = self.ale.lives()
        return info

    # --- gymnasium's interface --------------------------------------------------------------------------------
    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict]:
        self._ended = None
        info = self._life_reset(**kwargs)
        if self.fire_reset:
            for action in (FIRE, 2):
                _, terminated, truncated = self._life_step(action)
                obs = self._observation()          # step 2's frame, even when a reset follows
                if terminated or truncated:
                    self._life_reset(**kwargs)
            info = {}
        else:
            obs = self._observation()
        return obs, info | (self._ended or {})

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self._ended = None
        reward, terminated, truncated = self._life_step(int(action))
        info: dict[str, Any] = {"lives": self.ale.lives()}
        if terminated or truncated:
            info |= self._ended or {GAME_OVER: False}
        return self._observation(), float(np.sign(reward)) if self.clip_reward else reward, terminated, truncated, info

    def _observation(self) -> np.ndarray:
        """The frame to observe in grey, area-resized to ``size`` squared: ``(1, size, size)`` uint8."""
        cv2 = self.cv2
        cv2.cvtColor(self._max, cv2.COLOR_RGB2GRAY, dst=self._grey)
        return cv2.resize(self._grey, (self.size, self.size), interpolation=cv2.INTER_AREA)[None]


ZOO_WRAPPER = "stable_baselines3.common.atari_wrappers.AtariWrapper"
"""The zoo's name of the wrapper :class:`AtariPreprocessing` is."""
ZOO_DEFAULTS = {name: p.default for name, p in inspect.signature(AtariPreprocessing).parameters.items()
                if p.default is not p.empty}
"""Its keyword arguments and their defaults, SB3's, which the Atari family applies."""
