"""``OnPolicyAlgorithm``: define an on-policy algorithm by its networks, its loss and its act function.

A subclass says *what* the algorithm computes; the learner (:mod:`.learner`) and the
executors own devices, optimizers, schedules and loops. A new algorithm needs::

    class VPG(OnPolicyAlgorithm):
        name = "vpg"
        Config = OnPolicyConfig                  # or a frozen dataclass deriving it
        acting_networks = ("pi", "v")            # what actors need (moved by param_sync)

        def build_networks(self):                # shapes from self.spec, widths from self.config
            return {"pi": ..., "v": ...}

        def act(self, nets, obs, *, explore):    # a sampled (explore) or deterministic action,
            return PolicyStep(actions, values, log_probs)    # with V(obs) and its log-probability

        def loss(self, nets, batch, *, progress_remaining):
            return LossTerms(policy_loss, value_loss, entropy, log_probs)

The training loop these run in (any executor)::

    obs = envs.reset()
    while steps < total_steps:
        for n_steps:
            step = act(nets, obs, explore=True)                 # inference
            next_obs, rewards, ... = envs.step(step.actions)    # env_step
            rewards += gamma * V(final obs) where truncated
            rollout.add(obs, step.actions, rewards, ...)        # rollout_insert
        rollout.compute_advantages(V(next_obs), ...)            # advantage: GAE(lambda)
        for epoch, for minibatch (normalized advantages):       # learner_update
            terms = loss(nets, batch); minimise terms.policy_loss + vf_coef * terms.value_loss
                                                  - ent_coef * terms.entropy, clipped to max_grad_norm
        actors get the new weights                              # param_sync
"""
from __future__ import annotations

import abc
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import torch
from torch import nn

from pearl_py.algorithms.core import BaseAlgorithm
from pearl_py.algorithms.networks import Networks
from pearl_py.algorithms.on_policy.config import OnPolicyConfig
from pearl_py.errors import UserError

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


class OnPolicyNotPlanned(UserError):
    """A command that needs the performance model (plan, simulate) was given an on-policy algorithm."""

    def __init__(self, algorithm: OnPolicyAlgorithm, command: str) -> None:
        super().__init__(f"{algorithm.name} is on-policy: `{command}` does not model on-policy kernels yet "
                         "(`pearl run` trains it on the serial executor)")


class OnPolicyAlgorithm(BaseAlgorithm):
    """Base of every on-policy algorithm. Subclasses define networks, ``loss`` and ``act``.

    ``Algo(env_id, config=None, **hyperparameters)``: hyperparameters are validated like a config
    file (``ConfigError`` naming the key). ``discrete_actions``: None, both kinds of action space.
    """

    family = "on_policy"
    Config: ClassVar[type[OnPolicyConfig]] = OnPolicyConfig

    # -- what a subclass defines ------------------------------------------------------------
    @abc.abstractmethod
    def build_networks(self) -> dict[str, nn.Module]:
        """Fresh networks by name, shaped by ``self.spec`` and ``self.config``."""

    @abc.abstractmethod
    def act(self, nets: Networks, obs: torch.Tensor, *, explore: bool) -> PolicyStep:
        """Actions for a batch of observations, sampled (``explore``) or deterministic, with values and log-probs."""

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
        return torch.optim.Adam(parameters, lr=learning_rate, eps=self.config.adam_eps)

    def stop_early(self, approx_kl: torch.Tensor) -> bool:
        """Whether to end this rollout's learning before the step that ``approx_kl`` would follow."""
        return False

    # -- what every algorithm gets ----------------------------------------------------------
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

    def protocol(self, serialized: bool = False) -> ProtocolGraph:
        """The on-policy kernels are not derived yet: planning commands refuse this family with the reason."""
        raise OnPolicyNotPlanned(self, "planning")
