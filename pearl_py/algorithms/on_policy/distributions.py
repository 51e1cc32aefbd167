"""Action distributions of stochastic policies: categorical (Discrete) and diagonal Gaussian (Box).

Each gives ``sample``, ``mode`` (the deterministic action), ``log_prob`` of actions and
``entropy``, all batched over the leading dimension. Sampling draws from torch's global
generator, so a seeded run samples the same actions.

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

    def sample(self) -> torch.Tensor:
        return torch.multinomial(self.log_probs.exp(), 1).squeeze(-1)

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

    def sample(self) -> torch.Tensor:
        return self.mean + self.log_std.exp() * torch.randn_like(self.mean)

    def mode(self) -> torch.Tensor:
        return self.mean

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        """``sum_i [-(a_i - mu_i)^2 / (2 sigma_i^2) - log sigma_i - log(2 pi) / 2]``."""
        z = (actions - self.mean) * torch.exp(-self.log_std)
        return (-0.5 * z.pow(2) - self.log_std - _HALF_LOG_2PI).sum(dim=-1)

    def entropy(self) -> torch.Tensor:
        """``sum_i [1/2 + log(2 pi)/2 + log sigma_i]``, one value per batch row."""
        return (0.5 + _HALF_LOG_2PI + self.log_std).sum(dim=-1)


Distribution = Categorical | DiagGaussian
