"""Ornstein-Uhlenbeck action noise (DDPG/TD3 ``noise_type: ornstein-uhlenbeck``), one process per env.

The discretised Ornstein-Uhlenbeck process (Uhlenbeck & Ornstein, Phys. Rev. 36, 823, 1930), as
Stable-Baselines3's ``OrnsteinUhlenbeckActionNoise`` steps it (mean 0, ``theta`` 0.15, ``dt`` 1e-2)::

    x_{t+1} = x_t + theta * (0 - x_t) * dt + sigma * sqrt(dt) * n_t,    n_t ~ N(0, I),   x_0 = 0

with ``sigma = noise_std`` in pearl_py's [-1, 1] action units. Each call returns every env's next
``x`` (the action is ``clip(actor(s) + x, -1, 1)``, as SB3 adds noise to its scaled action);
:meth:`OrnsteinUhlenbeckNoise.reset` sets the state of the envs whose episode ended back to 0 (SB3
resets each env's noise at its episode end). ``n_t`` of env ``i`` is Box-Muller on that env's own
counter-based uniforms at its ``t``-th draw (:mod:`pearl_py.algorithms.on_policy.noise`), so a seeded
run is deterministic and an env's noise does not depend on how the envs are split.

Nothing of it is checkpointed, by design: a resumed session (``--resume``) makes its collector anew, whose envs
start new episodes from the session's seed (``runtime.checkpoints.session_seed``; envs are not checkpointed), so
its noise starts at 0, as at every episode start, from that seed's streams.

Example::

    >>> ou = OrnsteinUhlenbeckNoise(sigma=0.5, action_dim=1, seed=0, envs=range(2))
    >>> ou().shape
    (2, 1)
    >>> ou.reset(np.array([True, False])); ou.state[0]
    array([0.], dtype=float32)
"""
from __future__ import annotations

import math

import numpy as np
import torch

from pearl_py.algorithms.on_policy.distributions import box_muller
from pearl_py.algorithms.on_policy.noise import EnvStreams

THETA = 0.15
"""Rate of mean reversion (SB3's default)."""
DT = 1e-2
"""Time step of the discretisation (SB3's default)."""


class OrnsteinUhlenbeckNoise:
    """The Ornstein-Uhlenbeck state of envs ``envs`` (global indices), each ``action_dim`` wide."""

    def __init__(self, sigma: float, action_dim: int, seed: int, envs: range,
                 theta: float = THETA, dt: float = DT) -> None:
        self.sigma, self.action_dim, self.theta, self.dt = sigma, action_dim, theta, dt
        self.streams = EnvStreams(seed, envs)
        self.state = np.zeros((len(envs), action_dim), np.float32)
        self.draws = 0

    def __call__(self) -> np.ndarray:
        """Every env's next noise ``(envs, action_dim)`` (float32); the state moves on to it."""
        u = self.streams.uniforms(self.draws, 2 * self.action_dim)
        normals = box_muller(torch.from_numpy(u), self.action_dim).numpy()
        self.draws += 1
        self.state = (self.state + self.theta * (0.0 - self.state) * self.dt
                      + self.sigma * math.sqrt(self.dt) * normals).astype(np.float32)
        return self.state

    def reset(self, ended: np.ndarray) -> None:
        """The state of envs whose episode ended (``ended``: a bool per env) back to 0."""
        self.state[ended] = 0.0
