"""``OffPolicyAlgorithm`` (``pearl.Algorithm``): an off-policy algorithm by its networks, losses and act function.

A subclass says *what* the algorithm computes; pearl_py derives its kernels
(:meth:`Algorithm.protocol`), builds its replay and learner, places them on devices
and runs them. A new algorithm needs four things::

    class MyAlgo(pearl.OffPolicyAlgorithm):    # pearl.Algorithm is the same class
        name = "myalgo"
        Config = MyConfig                      # a frozen dataclass deriving OffPolicyConfig
        discrete_actions = False
        target_networks = ("critic",)          # names that get a frozen target copy
        acting_networks = ("actor",)           # what actors need (moved by param_sync)

        def build_networks(self):              # shapes from self.spec, widths from self.config
            return {"actor": ..., "critic": ...}

        def losses(self):                      # minimised in order, one Adam each
            return [Loss("critic", trains="critic", fn=critic_loss), Loss("actor", "actor", actor_loss)]

        def act(self, nets, obs, *, explore, progress):
            return nets.online.actor(obs)      # actions in [-1, 1] (or indices when discrete)

The training loop these run in (any executor)::

    obs = envs.reset()
    while steps < total_steps:
        actions = act(nets, obs)                           # inference
        next_obs, rewards, ... = envs.step(actions)        # env_step
        replay.add(obs, actions, rewards, next_obs, ...)   # replay_insert
        every train_freq steps, gradient_steps times:
            batch = replay.sample(batch_size)              # replay_sample
            td = learner.update(batch)                     # learner_update
            replay.update_priorities(batch.indices, td)    # priority_update
        actors get the new weights                         # param_sync
"""
from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import torch
from torch import nn

from pearl_py.algorithms.core import BaseAlgorithm, defining_class
from pearl_py.algorithms.networks import Networks
from pearl_py.algorithms.off_policy.config import OffPolicyConfig
from pearl_py.protocol.workload import TransitionLayout

if TYPE_CHECKING:
    from pearl_py.protocol import ProtocolGraph
    from pearl_py.replay import ReplayBuffer
    from pearl_py.replay.frames import FrameReplayBuffer

LossFn = Callable[[Networks, "TensorBatch"], tuple[torch.Tensor, "torch.Tensor | None"]]


@dataclass(frozen=True)
class Loss:
    """A scalar loss minimised by its own Adam over the parameters of network ``trains``.

    ``fn(nets, batch) -> (loss, td_error or None)``; the TD error, when given,
    becomes the new replay priorities. ``every``: minimise it only on every
    ``every``-th gradient step (TD3's delayed policy update). ``form`` names the
    math the loss computes (``"dqn_td"``, ``"ddpg_critic"``, ``"dpg_actor"``, ...):
    kernel variants that implement a loss by hand declare the forms they implement
    (:mod:`pearl_py.kernels`), so a user's own loss keeps the default ``"custom"``,
    which only the generic variants (reference, compiled) run.
    """

    name: str
    trains: str
    fn: LossFn
    every: int = 1
    form: str = "custom"


class OffPolicyAlgorithm(BaseAlgorithm):
    """Base of every off-policy algorithm. Subclasses define networks, losses and ``act``.

    ``acting_form`` names what ``act`` computes (``"epsilon_greedy_q"``, ``"deterministic_actor_noise"``,
    ``"squashed_gaussian"``)
    for inference variants that implement it by hand, as :attr:`Loss.form` does for losses.
    """

    family = "off_policy"
    Config: ClassVar[type[OffPolicyConfig]] = OffPolicyConfig
    discrete_actions: ClassVar[bool]
    acting_form: ClassVar[str] = "custom"
    target_update_unit: ClassVar[str] = "gradient_steps"
    """Unit of ``target_update_interval``: "gradient_steps" or "env_steps" (vector steps, as SB3's DQN)."""

    # -- what a subclass defines ------------------------------------------------------------
    @abc.abstractmethod
    def build_networks(self) -> dict[str, nn.Module]:
        """Fresh online networks by name, shaped by ``self.spec`` and ``self.config``."""

    @abc.abstractmethod
    def losses(self) -> Sequence[Loss]:
        """The losses of one gradient step, in the order they are minimised."""

    @abc.abstractmethod
    def act(self, nets: Networks, obs: torch.Tensor, *, explore: bool, progress: float) -> torch.Tensor:
        """Actions for a batch of observations: indices (discrete) or values in [-1, 1].

        ``progress`` is the fraction of training done (0..1), for exploration schedules.
        """

    # -- what every algorithm gets ----------------------------------------------------------
    @property
    def warmup_acts(self) -> bool:
        """Whether the warm-up (``learning_starts``, no training yet) acts with the exploring policy (SAC's
        ``use_sde_at_warmup``) rather than with uniform random actions (SB3's default)."""
        return False

    @property
    def random_warmup_steps(self) -> int:
        """Env steps of uniform random actions a run starts with (no inference): ``learning_starts``, or 0 where
        the warm-up acts (:attr:`warmup_acts`)."""
        return 0 if self.warmup_acts else self.config.learning_starts

    def targets_due(self, gradient_steps: int) -> bool:
        """Whether the soft target update follows gradient step number ``gradient_steps`` (counted from 1)."""
        return self.target_update_unit == "gradient_steps" and gradient_steps % self.config.target_update_interval == 0

    def after_gradient_step(self, nets: Networks, gradient_steps: int) -> None:
        """Target update counted in gradient steps (DDPG-style soft updates)."""
        if self.targets_due(gradient_steps):
            nets.update_targets(self.config.tau)

    def after_env_step(self, nets: Networks, vector_steps: int) -> None:
        """Target update counted in vector-env steps (SB3 DQN: every interval // n_envs calls)."""
        if self.target_update_unit != "env_steps":
            return
        every = max(self.config.target_update_interval // self.config.n_envs, 1)
        if vector_steps % every == 0:
            nets.update_targets(self.config.tau)

    def beta_at(self, progress: float) -> float:
        """Importance-sampling exponent annealed linearly from ``beta`` to ``beta_final``."""
        cfg = self.config
        return cfg.beta + min(max(progress, 0.0), 1.0) * (cfg.beta_final - cfg.beta)

    def uses_frame_replay(self) -> bool:
        """Whether the replay stores frames once (:class:`~pearl_py.replay.frames.FrameReplayBuffer`): uint8
        frames with uniform replay; prioritized image replay stores both observations (uint8)."""
        return self.spec.obs_dtype == "uint8" and not self.config.prioritized_replay

    def transition_layout(self) -> TransitionLayout:
        """Bytes of one stored transition as this algorithm's replay keeps it (cost models, memory admission)."""
        from pearl_py.replay.frames import stored_obs_bytes

        spec = self.spec
        action = 1 if spec.discrete else spec.action_dim
        if not self.uses_frame_replay():
            return TransitionLayout(spec.obs_dim, action, spec.obs_item_bytes)
        stored = stored_obs_bytes(spec.obs_shape, spec.frame_stack, self.config.buffer_size)
        return TransitionLayout(spec.obs_dim, action, spec.obs_item_bytes, stored / spec.obs_item_bytes)

    def make_replay(self, seed: int, shared_name: str | None = None,
                    capacity: int | None = None) -> ReplayBuffer | FrameReplayBuffer:
        """The config's replay; ``capacity`` instead of ``buffer_size`` (a small throwaway of the same kind)."""
        from pearl_py.replay import ReplayBuffer
        from pearl_py.replay.frames import FrameReplayBuffer

        size = {} if capacity is None else {"capacity": capacity}
        if self.uses_frame_replay():
            return FrameReplayBuffer(**(self._frame_settings() | size), seed=seed, shared_name=shared_name)
        return ReplayBuffer(**(self._replay_settings() | size), alpha=self.config.alpha, seed=seed,
                            shared_name=shared_name)

    def replay_bytes(self, whole_observations: bool = False) -> int:
        """Bytes of the storage :meth:`make_replay` allocates (computed from the config; nothing allocated).
        ``whole_observations``: a replay that stores every observation whole, as one on a GPU does (no frame ring:
        a frame-stacked observation takes its whole stack, about 8x the ring's bytes with both observations)."""
        from pearl_py.replay import ReplayBuffer
        from pearl_py.replay.frames import FrameReplayBuffer

        if self.uses_frame_replay() and not whole_observations:
            return FrameReplayBuffer.storage_bytes(**self._frame_settings())
        return ReplayBuffer.storage_bytes(**self._replay_settings())

    def _replay_settings(self) -> dict:
        cfg, spec = self.config, self.spec
        return dict(capacity=cfg.buffer_size, obs_shape=spec.obs_shape, obs_dtype=spec.obs_dtype,
                    action_shape=spec.action_shape, action_dtype=spec.action_dtype, prioritized=cfg.prioritized_replay,
                    fanout=cfg.replay_fanout)

    def _frame_settings(self) -> dict:
        spec = self.spec
        return dict(capacity=self.config.buffer_size, obs_shape=spec.obs_shape, frame_stack=spec.frame_stack,
                    action_shape=spec.action_shape, action_dtype=spec.action_dtype)

    def protocol(self, serialized: bool = False) -> ProtocolGraph:
        """The kernels of this algorithm with their workloads, rates and data edges."""
        from pearl_py.algorithms.off_policy.derive import derive_protocol

        return derive_protocol(self, serialized=serialized)

    def loss_forms(self) -> tuple[str, ...]:
        """The declared form of each loss, in order; ``"custom"`` for a loss whose function a subclass
        overrode below the class that declared it (the declaration then no longer holds)."""
        builder = defining_class(type(self), "losses")
        forms = []
        for loss in self.losses():
            owner = defining_class(type(self), getattr(loss.fn, "__name__", "")) \
                if getattr(loss.fn, "__self__", None) is self else None
            overridden = owner is not None and owner is not builder and issubclass(owner, builder)
            forms.append("custom" if overridden else loss.form)
        return tuple(forms)

    def greedy_actions(self, nets: Networks, obs: np.ndarray, device: torch.device) -> np.ndarray:
        """Deterministic actions for evaluation, as a numpy array."""
        with torch.no_grad():
            t = torch.as_tensor(obs, dtype=torch.float32, device=device)
            return self.act(nets, t, explore=False, progress=1.0).cpu().numpy()

    def sampled_actions(self, nets: Networks, obs: np.ndarray, device: torch.device) -> np.ndarray:
        """Exploring actions as at the end of training (a saved policy's non-deterministic ``predict``)."""
        with torch.no_grad():
            return self.act(nets, torch.as_tensor(obs, device=device), explore=True, progress=1.0).cpu().numpy()


Algorithm = OffPolicyAlgorithm
"""The name of the off-policy base before on-policy algorithms existed; kept as an alias."""
