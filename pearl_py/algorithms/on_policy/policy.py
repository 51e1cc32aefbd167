"""The actor-critic network of PPO and A2C: a policy MLP and a separate value MLP.

As Stable-Baselines3's ``MlpPolicy``: separate ``pi`` and ``vf`` networks of the same hidden
widths (``net_arch``, default [64, 64]) with Tanh activations, a categorical policy over
Discrete actions (the policy net outputs logits), a diagonal Gaussian over Box actions
(the policy net outputs the mean; ``log_std`` is one free parameter per action dimension,
independent of the state, initialised to ``log_std_init``), and orthogonal initialisation
with gains sqrt(2) for hidden layers, 0.01 for the policy head, 1 for the value head, zero
biases. Gaussian actions live in pearl_py's [-1, 1] action space (scaled to the env's bounds
and clipped at ``env.step``), not in the env's own units as in SB3. With ``use_sde`` (Box actions) the
policy is gSDE's state-dependent Gaussian over the policy net's last hidden features
(:class:`~.distributions.StateDependentGaussian`; ``log_std`` is then one parameter per feature and
action element, ``(latent_dim, action_dim)``, SB3's ``full_std=True``).

Example::

    >>> net = ActorCritic(obs_dim=4, action_dim=2, discrete=True, net_arch=(64, 64))
    >>> dist = net.distribution(torch.zeros(3, 4))
    >>> dist.sample().shape, net.value(torch.zeros(3, 4)).shape
    (torch.Size([3]), torch.Size([3]))
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from pearl_py.algorithms.networks import mlp
from pearl_py.algorithms.on_policy.distributions import (
    Categorical,
    DiagGaussian,
    Distribution,
    StateDependentGaussian,
)

ACTIVATIONS: dict[str, type[nn.Module]] = {"tanh": nn.Tanh, "relu": nn.ReLU, "elu": nn.ELU, "gelu": nn.GELU,
                                            "leaky_relu": nn.LeakyReLU, "silu": nn.SiLU}
"""``activation_fn`` config values (:data:`~pearl_py.algorithms.on_policy.config.ACTIVATION_NAMES`) and the modules
they name (torch's defaults, as SB3's ``nn.ELU`` etc.); the fused kernels run tanh and ReLU, the others run torch's
reference update."""

HIDDEN_GAIN = math.sqrt(2.0)
POLICY_HEAD_GAIN = 0.01
VALUE_HEAD_GAIN = 1.0


class ActorCritic(nn.Module):
    """``pi``: obs -> logits (Discrete) or Gaussian mean (Box); ``vf``: obs -> V(s); ``log_std`` for Box.

    ``encoder`` (frames: a CNN, :mod:`pearl_py.algorithms.cnn`) maps observations to ``obs_dim`` features
    that ``pi`` and ``vf`` share, as SB3's ``CnnPolicy`` shares its features extractor.
    """

    def __init__(self, obs_dim: int, action_dim: int, discrete: bool, net_arch: Sequence[int] = (64, 64),
                 activation_fn: str = "tanh", ortho_init: bool = True, log_std_init: float = 0.0,
                 encoder: nn.Module | None = None, use_sde: bool = False) -> None:
        super().__init__()
        if encoder is not None:
            self.features = encoder
        activation = ACTIVATIONS[activation_fn]
        self.discrete, self.use_sde = discrete, use_sde and not discrete
        self.pi = mlp(obs_dim, net_arch, action_dim, activation=activation)
        self.vf = mlp(obs_dim, net_arch, 1, activation=activation)
        self.latent_dim = net_arch[-1] if net_arch else obs_dim
        if not discrete:
            shape = (self.latent_dim, action_dim) if self.use_sde else (action_dim,)
            self.log_std = nn.Parameter(torch.full(shape, float(log_std_init)))
        if ortho_init:
            orthogonal_init(self.pi, POLICY_HEAD_GAIN)
            orthogonal_init(self.vf, VALUE_HEAD_GAIN)

    def encode(self, obs: torch.Tensor) -> torch.Tensor:
        """The shared features of ``obs`` (the observations themselves without an encoder)."""
        return self.features(obs) if hasattr(self, "features") else obs

    def distribution(self, obs: torch.Tensor) -> Distribution:
        return self.distribution_of(self.encode(obs))

    def distribution_of(self, features: torch.Tensor) -> Distribution:
        """The action distribution given features already encoded (:meth:`encode`)."""
        if self.use_sde:
            latent = self.pi[:-1](features)                 # the last hidden layer's output: gSDE's z(s)
            return StateDependentGaussian(self.pi[-1](latent), latent, self.log_std)
        out = self.pi(features)
        return Categorical(out) if self.discrete else DiagGaussian(out, self.log_std)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """V(s), one value per observation (shape ``(batch,)``)."""
        return self.vf(self.encode(obs)).squeeze(-1)

    def evaluate(self, obs: torch.Tensor, actions: torch.Tensor
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(values, log_probs, entropies)`` of taken ``actions``: what the losses differentiate."""
        features = self.encode(obs)
        dist = self.distribution_of(features)
        return self.vf(features).squeeze(-1), dist.log_prob(actions), dist.entropy()


def orthogonal_init(net: nn.Sequential, head_gain: float) -> None:
    """Orthogonal weights (gain sqrt(2) in hidden layers, ``head_gain`` in the last) and zero biases."""
    linears = [m for m in net if isinstance(m, nn.Linear)]
    for i, layer in enumerate(linears):
        nn.init.orthogonal_(layer.weight, gain=head_gain if i == len(linears) - 1 else HIDDEN_GAIN)
        nn.init.zeros_(layer.bias)
