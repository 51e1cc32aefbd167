"""Feature extractors for image observations: NatureCNN, a small CNN for MinAtar-sized frames, or a flatten.

Networks take the observations as stored (uint8 frames, channel-first) and divide by 255 inside
(:class:`ScaleFrames`), as Stable-Baselines3's ``preprocess_obs`` does, so replay and rings move
one byte per pixel. ``features_extractor: auto`` picks by the observation, as SB3 picks its
``CnnPolicy``: uint8 frames of rank 3 get :func:`nature_cnn` when both sides are at least 36
pixels (what its 8x8/4, 4x4/2, 3x3/1 convolutions need) and :func:`small_cnn` otherwise; other
observations are flattened (vectors: no extractor at all). An algorithm's hidden layers
(``net_arch``) follow the extractor's features.

* ``nature_cnn``: Mnih et al. (2015), "Human-level control through deep reinforcement learning",
  Nature 518: conv 32 8x8 stride 4, conv 64 4x4 stride 2, conv 64 3x3 stride 1, each ReLU, then a
  512-unit ReLU layer (SB3's ``NatureCNN``).
* ``small_cnn``: Young & Tian (2019), "MinAtar", arXiv:1903.03176: one conv of 16 3x3 filters,
  stride 1, ReLU (their DQN adds a 128-unit hidden layer: ``net_arch: [128]``).

Example::

    >>> spec = EnvSpec.from_env_id("MinAtar/Breakout-v1")
    >>> extractor = build_extractor(spec, "auto")
    >>> extractor.n_features, type(extractor.net[1]).__name__
    (1024, 'Conv2d')
    >>> q = obs_mlp(spec, "auto", (128,), spec.action_dim)        # frames -> conv -> 128 -> 3 actions
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from pearl_py.envs import EnvError, EnvSpec
from pearl_py.algorithms.networks import StateActionValue, TwinStateActionValue, mlp
from pearl_py.algorithms.obs_config import EXTRACTORS

NATURE_MIN_SIDE = 36
"""Smallest frame side NatureCNN's three convolutions leave at least one output pixel for."""


class ScaleFrames(nn.Module):
    """uint8 frames (or floats in 0..255) to float32 in [0, 1]."""

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        return frames.float() / 255.0


@dataclass
class Extractor:
    """A feature extractor: ``net`` maps a batch of observations to ``n_features`` floats each."""

    net: nn.Module
    n_features: int


def nature_cnn(shape: tuple[int, int, int], features: int = 512) -> nn.Sequential:
    """Mnih et al. (2015)'s convolutions over ``(C, H, W)`` frames and ``features`` ReLU units."""
    convs = nn.Sequential(ScaleFrames(), nn.Conv2d(shape[0], 32, 8, stride=4), nn.ReLU(),
                          nn.Conv2d(32, 64, 4, stride=2), nn.ReLU(), nn.Conv2d(64, 64, 3, stride=1), nn.ReLU(),
                          nn.Flatten())
    return nn.Sequential(*convs, nn.Linear(_width(convs, shape), features), nn.ReLU())


def small_cnn(channels: int, filters: int = 16) -> nn.Sequential:
    """Young & Tian (2019)'s MinAtar convolution: ``filters`` 3x3 filters, stride 1, ReLU, flattened."""
    return nn.Sequential(ScaleFrames(), nn.Conv2d(channels, filters, 3, stride=1), nn.ReLU(), nn.Flatten())


def resolve_extractor(spec: EnvSpec, choice: str) -> str:
    """The extractor ``choice`` names for ``spec``'s observations (``auto`` resolved); EnvError if it cannot apply."""
    if choice not in EXTRACTORS:
        raise EnvError(f"features_extractor: expected one of {', '.join(EXTRACTORS)}, got {choice!r}")
    if choice == "auto":
        if not spec.is_image:
            return "flatten"
        return "nature_cnn" if min(spec.obs_shape[1:]) >= NATURE_MIN_SIDE else "small_cnn"
    if choice != "flatten" and not spec.is_image:
        raise EnvError(f"features_extractor: {choice} needs uint8 frames (C, H, W); env {spec.env_id!r} "
                       f"observes {spec.obs_dtype} of shape {spec.obs_shape}")
    if choice == "nature_cnn" and min(spec.obs_shape[1:]) < NATURE_MIN_SIDE:
        raise EnvError(f"features_extractor: nature_cnn needs frames of at least {NATURE_MIN_SIDE}x"
                       f"{NATURE_MIN_SIDE}; env {spec.env_id!r} observes {spec.obs_shape} (use small_cnn)")
    return choice


def build_extractor(spec: EnvSpec, choice: str) -> Extractor | None:
    """The extractor for ``spec``'s observations, or None for vectors (the MLP reads them as they are)."""
    kind = resolve_extractor(spec, choice)
    if kind == "flatten":
        return None if len(spec.obs_shape) == 1 else Extractor(nn.Flatten(), spec.obs_dim)
    net = nature_cnn(spec.obs_shape) if kind == "nature_cnn" else small_cnn(spec.obs_shape[0])
    return Extractor(net, _width(net, spec.obs_shape))


def _width(net: nn.Module, shape: tuple[int, ...]) -> int:
    """Features ``net`` makes of one observation of ``shape`` (by running it on zeros)."""
    with torch.no_grad():
        return int(net(torch.zeros(1, *shape, dtype=torch.uint8)).shape[1])


def obs_mlp(spec: EnvSpec, choice: str, hidden: Sequence[int], n_out: int, **mlp_options) -> nn.Module:
    """The extractor ``choice`` for ``spec`` followed by :func:`~pearl_py.algorithms.networks.mlp` (``hidden``
    widths, ``n_out`` outputs); for vector observations exactly ``mlp(obs_dim, hidden, n_out)``."""
    extractor = build_extractor(spec, choice)
    if extractor is None:
        return mlp(spec.obs_dim, hidden, n_out, **mlp_options)
    return nn.Sequential(extractor.net, mlp(extractor.n_features, hidden, n_out, **mlp_options))


def critic(spec: EnvSpec, choice: str, hidden: Sequence[int], twin: bool = False) -> nn.Module:
    """Q(s, a) (``twin``: two of them, each with its own extractor) over the extractor ``choice``'s features."""
    def encoder() -> tuple[nn.Module | None, int]:
        extractor = build_extractor(spec, choice)
        return (None, spec.obs_dim) if extractor is None else (extractor.net, extractor.n_features)

    if twin:
        (first, width), (second, _) = encoder(), encoder()
        return TwinStateActionValue(width, spec.action_dim, hidden, None if first is None else (first, second))
    net, width = encoder()
    return StateActionValue(width, spec.action_dim, hidden, net)
