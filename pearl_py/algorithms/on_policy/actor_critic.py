"""The acting side PPO and A2C share: one :class:`~.policy.ActorCritic` network named ``policy``.

Example::

    >>> algo = pearl.PPO("CartPole-v1")
    >>> nets = Networks(algo.build_networks())
    >>> algo.act(nets, torch.zeros(2, 4), explore=True).actions.shape
    torch.Size([2])
"""
from __future__ import annotations

import abc

import torch
from torch import nn

from pearl_py.algorithms.cnn import build_extractor
from pearl_py.algorithms.networks import Networks
from pearl_py.algorithms.on_policy.base import OnPolicyAlgorithm, PolicyStep
from pearl_py.algorithms.on_policy.policy import ActorCritic


class ActorCriticAlgorithm(OnPolicyAlgorithm, abc.ABC):
    """Acts with SB3's ``MlpPolicy`` (categorical or diagonal Gaussian); subclasses define ``loss``."""

    acting_networks = ("policy",)
    acting_form = "actor_critic"

    def build_networks(self) -> dict[str, nn.Module]:
        cfg, spec = self.config, self.spec
        extractor = build_extractor(spec, cfg.features_extractor)
        width, encoder = (spec.obs_dim, None) if extractor is None else (extractor.n_features, extractor.net)
        return {"policy": ActorCritic(width, spec.action_dim, spec.discrete, cfg.net_arch,
                                      cfg.activation_fn, cfg.ortho_init, cfg.log_std_init, encoder)}

    def act(self, nets: Networks, obs: torch.Tensor, *, explore: bool, noise: torch.Tensor | None = None
            ) -> PolicyStep:
        policy = nets.online.policy
        features = policy.encode(obs)
        dist = policy.distribution_of(features)
        actions = dist.sample(noise) if explore else dist.mode()
        return PolicyStep(actions, policy.vf(features).squeeze(-1), dist.log_prob(actions))

    def value(self, nets: Networks, obs: torch.Tensor) -> torch.Tensor:
        return nets.online.policy.value(obs)
