"""Observation and reward normalization with Stable-Baselines3's ``VecNormalize`` meaning, as a transform the
collector applies between the vector env and the algorithm.

Observations become ``clip((obs - mean) / sqrt(var + epsilon), -clip_obs, clip_obs)`` with the running moments
of every observation the collector saw; rewards are divided by the running standard deviation of the discounted
return and clipped, their mean not subtracted (docs/api.md, "Observation and reward normalization"). Training
updates the statistics (:meth:`ObsRewardNormalizer.observe`); evaluation applies them frozen
(:meth:`ObsRewardNormalizer.obs`) and leaves rewards raw.

Example::

    >>> norm = ObsRewardNormalizer(Normalize.from_config(True), obs_shape=(3,), gamma=0.99)
    >>> obs = norm.observe(np.ones((2, 3)))                 # updates, then normalizes
    >>> rewards = norm.reward(np.array([1.0, 2.0]), done=np.array([False, True]))
    >>> ObsRewardNormalizer.from_state(norm.state()).obs(np.ones((1, 3))).shape
    (1, 3)
"""
from __future__ import annotations

import ast
import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import numpy as np
import torch

Array = TypeVar("Array", np.ndarray, torch.Tensor)
Sampled = TypeVar("Sampled")
"""A replay's sample: a dataclass with ``obs``, ``next_obs`` and ``rewards`` (numpy or torch)."""


@dataclass(frozen=True)
class Normalize:
    """The config value ``normalize``: ``false`` (none), ``true`` (SB3's defaults) or a mapping of VecNormalize's
    keywords; the zoo's text form ``"{'norm_obs': True, 'norm_reward': False}"`` is read as that mapping.
    ``gamma: null`` takes the algorithm's discount (as the zoo passes its entry's ``gamma``)."""

    enabled: bool = False
    norm_obs: bool = True
    norm_reward: bool = True
    clip_obs: float = 10.0
    clip_reward: float = 10.0
    gamma: float | None = None
    epsilon: float = 1e-8

    config_type_name: ClassVar[str] = "true/false or a mapping"
    KEYS: ClassVar[tuple[str, ...]] = ("norm_obs", "norm_reward", "clip_obs", "clip_reward", "gamma", "epsilon")

    @classmethod
    def from_config(cls, value: Any) -> Normalize:
        """``ValueError`` naming the first key or value that is not VecNormalize's."""
        if isinstance(value, Normalize):
            return value
        if value is None or isinstance(value, bool):
            return cls(enabled=bool(value))
        if isinstance(value, str):
            try:
                value = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                raise ValueError(f"expected true/false or a mapping of {', '.join(cls.KEYS)}, got text {value!r}") \
                    from None
        if not isinstance(value, dict):
            raise ValueError(f"expected true/false or a mapping of {', '.join(cls.KEYS)}, got "
                             f"{type(value).__name__} {value!r}")
        for key, item in value.items():
            if key not in cls.KEYS:
                raise ValueError(f"unknown key {key!r} (VecNormalize's: {', '.join(cls.KEYS)})")
            if key.startswith("norm_"):
                if not isinstance(item, bool):
                    raise ValueError(f"{key}: expected true/false, got {item!r}")
            elif key != "gamma" or item is not None:
                _check_number(key, item)
        return cls(enabled=True, **value)

    def to_config(self) -> bool | dict[str, Any]:
        if not self.enabled:
            return False
        changed = {k: getattr(self, k) for k in self.KEYS if getattr(self, k) != getattr(Normalize, k)}
        return changed or True

    def __str__(self) -> str:
        value = self.to_config()
        return str(value).lower() if isinstance(value, bool) else str(value)


def _check_number(key: str, item: Any) -> None:
    if isinstance(item, bool) or not isinstance(item, (int, float)):
        raise ValueError(f"{key}: expected a number, got {item!r}")
    if key == "gamma" and not 0.0 <= item <= 1.0:
        raise ValueError(f"gamma: must be in [0, 1], got {item!r}")
    if key != "gamma" and not item > 0:
        raise ValueError(f"{key}: must be > 0, got {item!r}")


class RunningMoments:
    """Running mean and (population) variance of a stream of batches, merged with the parallel-variance formula
    (docs/runtime.md, "normalize on the parallel runtime"); two streams' moments merge by the same (:meth:`merge`)."""

    def __init__(self, shape: tuple[int, ...], count: float = 1e-4) -> None:
        self.mean = np.zeros(shape, np.float64)
        self.var = np.ones(shape, np.float64)
        self.count = count

    def update(self, batch: np.ndarray) -> None:
        batch = np.asarray(batch, np.float64)
        self.merge(batch.mean(axis=0), batch.var(axis=0), batch.shape[0])

    def merge(self, mean: np.ndarray, var: np.ndarray, count: float) -> None:
        delta, total = mean - self.mean, self.count + count
        self.mean = self.mean + delta * count / total
        self.var = (self.var * self.count + var * count + np.square(delta) * self.count * count / total) / total
        self.count = total

    def merge_moments(self, other: RunningMoments) -> None:
        """Merge ``other``'s moments (another stream's): afterwards these are the moments of both streams' rows."""
        if other.count:
            self.merge(other.mean, other.var, other.count)

    def vector(self) -> np.ndarray:
        """``[mean..., var..., count]`` (float64): the form shared memory carries (:meth:`load_vector`)."""
        return np.concatenate([self.mean.ravel(), self.var.ravel(), [self.count]])

    def load_vector(self, vector: np.ndarray) -> None:
        size = self.mean.size
        self.mean = np.array(vector[:size], np.float64).reshape(self.mean.shape)
        self.var = np.array(vector[size:2 * size], np.float64).reshape(self.var.shape)
        self.count = float(vector[2 * size])

    def state(self) -> dict[str, Any]:
        return {"mean": self.mean.tolist(), "var": self.var.tolist(), "count": float(self.count)}

    def load(self, state: dict[str, Any]) -> None:
        self.mean = np.asarray(state["mean"], np.float64).reshape(self.mean.shape)
        self.var = np.asarray(state["var"], np.float64).reshape(self.var.shape)
        self.count = float(state["count"])


class ObsRewardNormalizer:
    """The transform of one run: its settings, the observation moments and the discounted-return moments.

    The seam: :meth:`observe` (update with a batch of observations, then normalize it), :meth:`obs` (normalize
    with the statistics frozen), :meth:`reward` (update the return moments, then scale), :meth:`state` and
    :meth:`from_state`/:meth:`load` (plain lists and numbers). ``returns`` (the running discounted return per env) is
    not state: a resumed run starts its episodes anew. A parallel run's actors also keep the moments of what they
    updated with since :meth:`track`, which the learner merges exactly (:meth:`take_share`, :meth:`merge_share`,
    :meth:`take_published`; docs/runtime.md, "normalize on the parallel runtime").
    """

    def __init__(self, settings: Normalize, obs_shape: tuple[int, ...], gamma: float) -> None:
        self.settings = settings
        self.gamma = settings.gamma if settings.gamma is not None else gamma
        self.obs_moments = RunningMoments(tuple(obs_shape))
        self.return_moments = RunningMoments(())
        self.returns: np.ndarray | None = None
        self.seen: tuple[RunningMoments, RunningMoments] | None = None
        """With :meth:`track`: the observation and return moments of only the rows updated with since (from count 0)."""

    def track(self, share: np.ndarray | None = None) -> None:
        """From now on also keep the moments of only what this copy updates with (``seen``): from count 0, or
        continuing ``share`` (a :meth:`share` of before: a restarted off-policy actor's slot)."""
        self.seen = self._empty()
        if share is not None:
            _load_moments(self.seen, share)

    def share(self) -> np.ndarray:
        """The ``seen`` moments since :meth:`track` as a :meth:`vector` (they go on counting)."""
        return _moments_vector(self.seen)

    def take_share(self) -> np.ndarray:
        """The ``seen`` moments since :meth:`track` (or the last take) as a :meth:`vector`; they restart from 0."""
        share = self.share()
        self.track()
        return share

    def merge_share(self, share: np.ndarray) -> None:
        """Merge another copy's share (:meth:`take_share`) into these statistics (exact: the merge formula)."""
        moments = self._empty()
        _load_moments(moments, share)
        self._merge(moments)

    def take_published(self, published: np.ndarray) -> None:
        """Act with the ``published`` statistics (a :meth:`vector`) merged with this copy's share not taken yet (an
        actor's statistics: its envs' reset observations before its first report, after a restart too)."""
        self.load_vector(published)
        if self.seen is not None:
            self._merge(self.seen)

    def _merge(self, moments: tuple[RunningMoments, RunningMoments]) -> None:
        self.obs_moments.merge_moments(moments[0])
        self.return_moments.merge_moments(moments[1])

    def vector(self) -> np.ndarray:
        """The observation then the return moments as one float64 vector (shared memory, Ray's object store)."""
        return _moments_vector((self.obs_moments, self.return_moments))

    def load_vector(self, vector: np.ndarray) -> None:
        """These statistics from a :meth:`vector` (an actor takes the published statistics)."""
        _load_moments((self.obs_moments, self.return_moments), vector)

    def _empty(self) -> tuple[RunningMoments, RunningMoments]:
        return RunningMoments(self.obs_moments.mean.shape, count=0.0), RunningMoments((), count=0.0)

    def begin(self, obs: np.ndarray) -> np.ndarray:
        """The envs were reset to ``obs``: discounted returns restart at 0; :meth:`observe` ``obs``."""
        self.returns = None
        return self.observe(obs)

    def observe(self, obs: np.ndarray) -> np.ndarray:
        """Update the observation moments with ``obs`` (a batch), then normalize it (training)."""
        if self.settings.norm_obs:
            self.obs_moments.update(obs)
            if self.seen is not None:
                self.seen[0].update(obs)
        return self.obs(obs)

    def obs(self, obs: Array) -> Array:
        """``obs`` (numpy, or a torch tensor: a replay's sample) normalized with the statistics as they are (float32;
        unchanged without ``norm_obs``)."""
        if not self.settings.norm_obs:
            return obs
        s, m = self.settings, self.obs_moments
        if isinstance(obs, torch.Tensor):
            mean, std = (torch.as_tensor(a, device=obs.device) for a in (m.mean, np.sqrt(m.var + s.epsilon)))
            return ((obs.double() - mean) / std).clamp(-s.clip_obs, s.clip_obs).float()
        return np.clip((obs - m.mean) / np.sqrt(m.var + s.epsilon), -s.clip_obs, s.clip_obs).astype(np.float32)

    def scaled_reward(self, rewards: Array) -> Array:
        """``rewards`` scaled by the return moments as they are (no update: a replay's sample), clipped."""
        if not self.settings.norm_reward:
            return rewards
        s = self.settings
        scaled = rewards / float(np.sqrt(self.return_moments.var + s.epsilon))
        return scaled.clamp(-s.clip_reward, s.clip_reward) if isinstance(scaled, torch.Tensor) \
            else np.clip(scaled, -s.clip_reward, s.clip_reward).astype(np.float32)

    def sample(self, batch: Sampled) -> Sampled:
        """A replay's sample of the env's transitions as the learner sees them: observations, next observations and
        rewards through the statistics as they are (SB3's off-policy replay normalizes its samples so)."""
        return dataclasses.replace(batch, obs=self.obs(batch.obs), next_obs=self.obs(batch.next_obs),
                                   rewards=self.scaled_reward(batch.rewards))

    def reward(self, rewards: np.ndarray, done: np.ndarray) -> np.ndarray:
        """Training rewards: the return moments updated with this step's discounted returns, ``rewards`` scaled by
        their standard deviation and clipped; ended episodes' returns restart at 0 (float32; unchanged without
        ``norm_reward``)."""
        if not self.settings.norm_reward:
            return rewards
        if self.returns is None:
            self.returns = np.zeros(len(rewards))
        self.returns = self.returns * self.gamma + rewards
        self.return_moments.update(self.returns)
        if self.seen is not None:
            self.seen[1].update(self.returns)
        scaled = self.scaled_reward(rewards)
        self.returns[done] = 0.0
        return scaled

    def state(self) -> dict[str, Any]:
        return {"settings": dataclasses.asdict(self.settings), "gamma": self.gamma,
                "obs": self.obs_moments.state(), "return": self.return_moments.state()}

    def load(self, state: dict[str, Any]) -> None:
        self.obs_moments.load(state["obs"])
        self.return_moments.load(state["return"])

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> ObsRewardNormalizer:
        obs_shape = np.asarray(state["obs"]["mean"]).shape
        norm = cls(Normalize(**state["settings"]), obs_shape, state["gamma"])
        norm.load(state)
        return norm


def _moments_vector(moments: tuple[RunningMoments, ...]) -> np.ndarray:
    return np.concatenate([m.vector() for m in moments])


def _load_moments(moments: tuple[RunningMoments, ...], vector: np.ndarray) -> None:
    for m in moments:
        size = m.vector().size
        m.load_vector(vector[:size])
        vector = vector[size:]
