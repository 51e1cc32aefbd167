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
from pearl_py.algorithms.on_policy.distributions import StateDependentGaussian
from pearl_py.algorithms.on_policy.policy import ActorCritic
from pearl_py.errors import ConfigError


class ActorCriticAlgorithm(OnPolicyAlgorithm, abc.ABC):
    """Acts with SB3's ``MlpPolicy`` (categorical or diagonal Gaussian); subclasses define ``loss``."""

    acting_networks = ("policy",)
    acting_form = "actor_critic"
    sde_acting_form = "actor_critic_sde"

    def __init__(self, env: str, config: object = None, **hyperparameters: object) -> None:
        super().__init__(env, config, **hyperparameters)
        if self.config.use_sde and self.spec.discrete:
            raise ConfigError(f"use_sde: gSDE needs continuous (Box) actions; env {env!r} has discrete ones",
                              key="use_sde")

    def build_networks(self) -> dict[str, nn.Module]:
        cfg, spec = self.config, self.spec
        extractor = build_extractor(spec, cfg.features_extractor)
        width, encoder = (spec.obs_dim, None) if extractor is None else (extractor.n_features, extractor.net)
        return {"policy": ActorCritic(width, spec.action_dim, spec.discrete, cfg.net_arch,
                                      cfg.activation_fn, cfg.ortho_init, cfg.log_std_init, encoder, cfg.use_sde)}

    @property
    def noise_width(self) -> int:
        """With gSDE: the uniforms of one exploration matrix per row (``2 * latent_dim * action_dim``)."""
        if not self.config.use_sde:
            return super().noise_width
        return StateDependentGaussian.noise_width(self.latent_dim, self.spec.action_dim)

    @property
    def latent_dim(self) -> int:
        """The width of the policy's last hidden features (gSDE's ``z(s)``)."""
        cfg = self.config
        if cfg.net_arch:
            return cfg.net_arch[-1]
        extractor = build_extractor(self.spec, cfg.features_extractor)
        return self.spec.obs_dim if extractor is None else extractor.n_features

    def noise_step(self, vector_step: int) -> int:
        """With gSDE, the step the exploration matrix in use at ``vector_step`` was drawn at: each rollout's first
        step and then every ``sde_sample_freq`` steps (SB3's ``reset_noise`` schedule)."""
        if not self.config.use_sde:
            return vector_step
        n_steps, freq = self.config.n_steps, self.config.sde_sample_freq
        start, offset = divmod(vector_step, n_steps)
        return start * n_steps + (offset - offset % freq if freq > 0 else 0)

    def act(self, nets: Networks, obs: torch.Tensor, *, explore: bool, noise: torch.Tensor | None = None
            ) -> PolicyStep:
        policy = nets.online.policy
        features = policy.encode(obs)
        dist = policy.distribution_of(features)
        actions = dist.sample(noise) if explore else dist.mode()
        return PolicyStep(actions, policy.vf(features).squeeze(-1), dist.log_prob(actions))

    def value(self, nets: Networks, obs: torch.Tensor) -> torch.Tensor:
        return nets.online.policy.value(obs)
