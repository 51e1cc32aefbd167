"""``OnPolicyAlgorithm``: define an on-policy algorithm by its networks, its loss and its act function.

A subclass says *what* the algorithm computes; the learner (:mod:`.learner`) and the
executors own devices, optimizers, schedules and loops. A new algorithm needs::

    class VPG(OnPolicyAlgorithm):
        name = "vpg"
        Config = OnPolicyConfig                  # or a frozen dataclass deriving it
        acting_networks = ("pi", "v")            # what actors need (moved by param_sync)

        def build_networks(self):                # shapes from self.spec, widths from self.config
            return {"pi": ..., "v": ...}

        def act(self, nets, obs, *, explore, noise=None):   # a sampled (explore) or deterministic action,
            return PolicyStep(actions, values, log_probs)      # with V(obs) and its log-probability; sampled
                                                               # from noise (per-row uniforms) when given

        def loss(self, nets, batch, *, progress_remaining):
            return LossTerms(policy_loss, value_loss, entropy, log_probs)

The training loop these run in (any executor)::

    obs = envs.reset()
    while steps < total_steps:
        for n_steps:
            step = act(nets, obs, explore=True, noise=u)        # inference (u: every env's own uniforms)
            next_obs, rewards, ... = envs.step(step.actions)    # env_step
            rewards += gamma * V(final obs) where truncated
            rollout.add(obs, step.actions, rewards, ...)        # rollout_insert
        rollout.compute_advantages(V(next_obs), ...)            # advantage: GAE(lambda)
        for epoch, for minibatch (normalized advantages):       # learner_update
            terms = loss(nets, batch); minimise terms.policy_loss + vf_coef * terms.value_loss
                                                  - ent_coef * terms.entropy, clipped to max_grad_norm
        actors get the new weights                              # param_sync

``loss_form`` and ``acting_form`` name the math ``loss`` and ``act`` compute (PPO's
``"ppo_clip"``, A2C's ``"a2c_pg"``; ``"actor_critic"``: the MLP actor-critic of
:mod:`.actor_critic`) for kernel variants that implement them by hand, as the off-policy
family's ``Loss.form`` and ``acting_form`` do; a subclass that overrides ``loss`` or ``act``
below the declaring class declares ``"custom"``, which only the generic variants run.
"""
from __future__ import annotations

import abc
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import torch
from torch import nn

from pearl_py.algorithms.core import BaseAlgorithm, declared_form
from pearl_py.algorithms.networks import Networks
from pearl_py.algorithms.on_policy.config import OnPolicyConfig
from pearl_py.algorithms.optimizers import Adam

if TYPE_CHECKING:
    from pearl_py.algorithms.on_policy.learner import RolloutBatch
    from pearl_py.protocol import ProtocolGraph
    from pearl_py.replay.rollout import RolloutBuffer


@dataclass(frozen=True)
class PolicyStep:
    """What ``act`` returns for a batch of observations (one row each).

    ``actions``: indices (Discrete) or values in pearl_py's [-1, 1] space, unclipped (Box);
    ``values``: V(obs); ``log_probs``: log-probability of ``actions`` under the policy.
    """

    actions: torch.Tensor
    values: torch.Tensor
    log_probs: torch.Tensor


@dataclass(frozen=True)
class LossTerms:
    """The pieces of one minibatch's loss; the learner minimises
    ``policy_loss + vf_coef * value_loss - ent_coef * entropy``.

    ``entropy``: mean policy entropy over the batch; ``log_probs``: the current policy's
    log-probabilities of the batch's actions (the learner's approximate KL to the rollout's
    policy comes from them); ``clip_fraction``: share of clipped ratios, for algorithms that clip.
    """

    policy_loss: torch.Tensor
    value_loss: torch.Tensor
    entropy: torch.Tensor
    log_probs: torch.Tensor
    clip_fraction: torch.Tensor | None = None


class OnPolicyAlgorithm(BaseAlgorithm):
    """Base of every on-policy algorithm. Subclasses define networks, ``loss`` and ``act``.

    ``Algo(env_id, config=None, **hyperparameters)``: hyperparameters are validated like a config
    file (``ConfigError`` naming the key). ``discrete_actions``: None, both kinds of action space.
    """

    family = "on_policy"
    Config: ClassVar[type[OnPolicyConfig]] = OnPolicyConfig
    loss_form: ClassVar[str] = "custom"
    acting_form: ClassVar[str] = "custom"

    # -- what a subclass defines ------------------------------------------------------------
    @abc.abstractmethod
    def build_networks(self) -> dict[str, nn.Module]:
        """Fresh networks by name, shaped by ``self.spec`` and ``self.config``."""

    @abc.abstractmethod
    def act(self, nets: Networks, obs: torch.Tensor, *, explore: bool, noise: torch.Tensor | None = None
            ) -> PolicyStep:
        """Actions for a batch of observations, sampled (``explore``) or deterministic, with values and log-probs.

        ``noise``: ``(rows, noise_width)`` uniforms in (0, 1); a sampled action must be a function of its row's
        (the executors pass every env's own stream, so a run is the same however its envs are split over
        actors). None: sample from torch's generator.
        """

    @abc.abstractmethod
    def loss(self, nets: Networks, batch: RolloutBatch, *, progress_remaining: float) -> LossTerms:
        """The loss terms of one minibatch (advantages already normalized when the config asks).

        ``progress_remaining``: 1 at the start of training, 0 at the end, for schedules.
        """

    # -- what a subclass may override -------------------------------------------------------
    def value(self, nets: Networks, obs: torch.Tensor) -> torch.Tensor:
        """V(obs), for the bootstrap of truncated episodes and of the rollout's end (default: from ``act``)."""
        return self.act(nets, obs, explore=False).values

    def make_optimizer(self, parameters: Iterable[nn.Parameter], learning_rate: float) -> torch.optim.Optimizer:
        """One optimizer over every network (default: Adam with the config's ``adam_eps``)."""
        return Adam(parameters, lr=learning_rate, eps=self.config.adam_eps)

    def stop_early(self, approx_kl: torch.Tensor) -> bool:
        """Whether to end this rollout's learning before the step that ``approx_kl`` would follow."""
        return False

    # -- what every algorithm gets ----------------------------------------------------------
    @property
    def noise_width(self) -> int:
        """Uniforms one row of ``act`` takes to sample (1 for a categorical policy, 2 per action element for a
        Gaussian one: Box-Muller)."""
        return 1 if self.spec.discrete else 2 * self.spec.action_dim

    def noise_step(self, vector_step: int) -> int:
        """The vector step whose uniforms the envs act with at ``vector_step`` (the same step by default; a policy
        that holds its exploration noise for several steps, as gSDE, maps them to the step it drew it at)."""
        return vector_step

    def declared_loss_form(self) -> str:
        """``loss_form``, or ``"custom"`` when ``loss`` was overridden below the class that declared it."""
        return declared_form(type(self), "loss_form", "loss")

    def make_rollout(self, seed: int) -> RolloutBuffer:
        from pearl_py.replay.rollout import RolloutBuffer

        cfg = self.config
        return RolloutBuffer(cfg.n_steps, cfg.n_envs, self.spec.obs_shape, self.spec.action_shape,
                             self.spec.action_dtype, seed=seed, obs_dtype=self.spec.obs_dtype)

    def greedy_actions(self, nets: Networks, obs: np.ndarray, device: torch.device) -> np.ndarray:
        """Deterministic actions for evaluation, as a numpy array."""
        with torch.no_grad():
            t = torch.as_tensor(obs, dtype=torch.float32, device=device)
            return self.act(nets, t, explore=False).actions.cpu().numpy()

    def sampled_actions(self, nets: Networks, obs: np.ndarray, device: torch.device) -> np.ndarray:
        """Actions sampled from the policy (a saved policy's non-deterministic ``predict``)."""
        with torch.no_grad():
            return self.act(nets, torch.as_tensor(obs, device=device), explore=True).actions.cpu().numpy()

    def protocol(self, serialized: bool = False) -> ProtocolGraph:
        """The kernels of this algorithm with their workloads, rates and data edges (synchronous unless
        ``serialized``: :func:`pearl_py.algorithms.on_policy.derive.derive_protocol`)."""
        from pearl_py.algorithms.on_policy.derive import derive_protocol

        return derive_protocol(self, serialized=serialized)
