"""Action distributions of stochastic policies: categorical (Discrete), diagonal Gaussian (Box), and gSDE's
state-dependent Gaussian (Box with ``use_sde``, :class:`StateDependentGaussian`).

Each gives ``sample``, ``mode`` (the deterministic action), ``log_prob`` of actions and
``entropy``, all batched over the leading dimension. ``sample(noise)`` turns given uniforms in
(0, 1) into actions, row by row (the executors pass each env's own stream,
:mod:`~pearl_py.algorithms.on_policy.noise`, so a row's action depends on nothing else):
categorical by the inverse CDF of one uniform (the first action whose cumulative probability
exceeds it), Gaussian by Box-Muller on two uniforms per action element,
``z = sqrt(-2 ln u1) cos(2 pi u2)``. Without noise, sampling draws from torch's global generator.
``noise_width(action_dim)``: the uniforms one row takes.

Example::

    >>> dist = Categorical(torch.tensor([[0.0, 1.0]]))
    >>> dist.log_prob(torch.tensor([1])), dist.mode()
    (tensor([-0.3133]), tensor([1]))
    >>> DiagGaussian(torch.zeros(1, 2), torch.zeros(2)).entropy()   # 2 * (0.5 + 0.5 log 2 pi)
    tensor([2.8379])
"""
from __future__ import annotations

import math

import torch

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


class Categorical:
    """``P(a) = softmax(logits)_a`` over ``n`` actions; actions are integer indices."""

    def __init__(self, logits: torch.Tensor) -> None:
        self.log_probs = logits - logits.logsumexp(dim=-1, keepdim=True)  # normalized: sums to 1 in probability

    @staticmethod
    def noise_width(action_dim: int) -> int:
        return 1

    def sample(self, noise: torch.Tensor | None = None) -> torch.Tensor:
        """An action per row: from ``noise`` (``(rows, 1)`` uniforms) by the inverse CDF, else torch's generator."""
        if noise is None:
            return torch.multinomial(self.log_probs.exp(), 1).squeeze(-1)
        below = self.log_probs.exp().cumsum(dim=-1) < noise[:, :1]
        return below.sum(dim=-1).clamp_(max=self.log_probs.shape[-1] - 1)   # rounding may leave the sum below 1

    def mode(self) -> torch.Tensor:
        return self.log_probs.argmax(dim=-1)

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        return self.log_probs.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)

    def entropy(self) -> torch.Tensor:
        """``-sum_a p(a) log p(a)``; an action of probability 0 adds 0 (not 0 * -inf)."""
        p = self.log_probs.exp()
        return -torch.where(p > 0, p * self.log_probs, torch.zeros_like(p)).sum(dim=-1)


class DiagGaussian:
    """Independent normals per action dimension: mean from the network, ``log_std`` a free parameter."""

    def __init__(self, mean: torch.Tensor, log_std: torch.Tensor) -> None:
        self.mean = mean
        self.log_std = log_std.expand_as(mean)

    @staticmethod
    def noise_width(action_dim: int) -> int:
        return 2 * action_dim

    def sample(self, noise: torch.Tensor | None = None) -> torch.Tensor:
        """``mean + std * z``: ``z`` by Box-Muller from ``noise`` (``(rows, 2 * action_dim)`` uniforms: the first
        half ``u1``, the second ``u2``), else from torch's generator."""
        if noise is None:
            return self.mean + self.log_std.exp() * torch.randn_like(self.mean)
        return self.mean + self.log_std.exp() * box_muller(noise, self.mean.shape[-1])

    def mode(self) -> torch.Tensor:
        return self.mean

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        """``sum_i [-(a_i - mu_i)^2 / (2 sigma_i^2) - log sigma_i - log(2 pi) / 2]``."""
        z = (actions - self.mean) * torch.exp(-self.log_std)
        return (-0.5 * z.pow(2) - self.log_std - _HALF_LOG_2PI).sum(dim=-1)

    def entropy(self) -> torch.Tensor:
        """``sum_i [1/2 + log(2 pi)/2 + log sigma_i]``, one value per batch row."""
        return (0.5 + _HALF_LOG_2PI + self.log_std).sum(dim=-1)


class StateDependentGaussian:
    """Generalized state-dependent exploration (gSDE; Raffin, Kober & Stulp, CoRL 2021; docs/api.md, "gSDE"):
    ``a = mu(s) + z(s) E`` with ``z(s)`` the policy's last hidden features (``latent``, width ``d``) and ``E`` a
    ``(d, action_dim)`` exploration matrix of independent ``N(0, sigma_jk^2)`` entries, ``sigma = exp(log_std)``
    (SB3's ``full_std``: one parameter per entry). Given ``z(s)``, each action element is normal with variance
    ``sum_j z_j^2 sigma_jk^2`` (plus 1e-6, SB3's epsilon); the variance reads the features detached (SB3's default
    ``learn_features=False``), the mean does not.

    ``sample(noise)`` builds ``E`` per row from that row's ``2 * d * action_dim`` uniforms by Box-Muller (the
    executors pass the uniforms of the step the matrix was last drawn at, so ``E`` is held between resamples).
    """

    EPSILON = 1e-6

    def __init__(self, mean: torch.Tensor, latent: torch.Tensor, log_std: torch.Tensor) -> None:
        self.mean, self.latent, self.std = mean, latent.detach(), log_std.exp()
        self.scale = torch.sqrt(self.latent.pow(2) @ self.std.pow(2) + self.EPSILON)

    @staticmethod
    def noise_width(latent_dim: int, action_dim: int) -> int:
        return 2 * latent_dim * action_dim

    def exploration_matrices(self, noise: torch.Tensor) -> torch.Tensor:
        """``(rows, d, action_dim)``: ``E = sigma * N`` with ``N`` standard normals from each row's uniforms."""
        rows, (d, k) = noise.shape[0], self.std.shape
        return self.std * box_muller(noise, d * k).view(rows, d, k)

    def draw_matrices(self, rows: int | None = None) -> torch.Tensor:
        """``E = sigma * N`` from torch's generator: ``(rows, d, action_dim)``, one per row, or (``rows`` None) one
        ``(d, action_dim)`` matrix for every row. Reparameterized: gradients reach ``log_std`` through ``E``."""
        shape = self.std.shape if rows is None else (rows, *self.std.shape)
        return self.std * torch.randn(shape, dtype=self.mean.dtype, device=self.mean.device)

    def actions(self, matrices: torch.Tensor) -> torch.Tensor:
        """``mu + z E`` per row, with ``matrices`` one ``(d, action_dim)`` for all rows or ``(rows, d, action_dim)``."""
        if matrices.dim() == 2:
            return self.mean + self.latent @ matrices
        return self.mean + torch.bmm(self.latent.unsqueeze(1), matrices).squeeze(1)

    def sample(self, noise: torch.Tensor | None = None) -> torch.Tensor:
        """``mu + z E`` per row; ``E`` from ``noise`` (``(rows, 2 d action_dim)`` uniforms), else from torch's
        generator."""
        matrices = self.draw_matrices(self.latent.shape[0]) if noise is None else self.exploration_matrices(noise)
        return self.actions(matrices)

    def mode(self) -> torch.Tensor:
        return self.mean

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        """``sum_k [-(a_k - mu_k)^2 / (2 s_k^2) - log s_k - log(2 pi) / 2]``,
        ``s_k^2 = sum_j z_j^2 sigma_jk^2 + eps``."""
        z = (actions - self.mean) / self.scale
        return (-0.5 * z.pow(2) - self.scale.log() - _HALF_LOG_2PI).sum(dim=-1)

    def entropy(self) -> torch.Tensor:
        """``sum_k [1/2 + log(2 pi)/2 + log s_k]``, one value per batch row."""
        return (0.5 + _HALF_LOG_2PI + self.scale.log()).sum(dim=-1)


def box_muller(noise: torch.Tensor, dim: int) -> torch.Tensor:
    """Standard normals ``sqrt(-2 ln u1) cos(2 pi u2)`` from ``(rows, 2 * dim)`` uniforms (u1 first, then u2)."""
    u1, u2 = noise[:, :dim], noise[:, dim:2 * dim]
    return torch.sqrt(-2.0 * torch.log(u1)) * torch.cos(_TWO_PI * u2)


_TWO_PI = 2.0 * math.pi

Distribution = Categorical | DiagGaussian | StateDependentGaussian
