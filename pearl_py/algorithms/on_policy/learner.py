"""The on-policy learner: networks, one optimizer, and the ``learner_update`` kernel over a rollout.

:meth:`OnPolicyLearner.learn` runs ``epochs_per_rollout`` passes over the rollout in shuffled
minibatches of ``minibatch_size`` (PPO: ``n_epochs`` x ``batch_size``; A2C: one step on the
whole rollout). Each minibatch step (:meth:`OnPolicyLearner.step`, one ``learner_update``
call): advantages normalized per minibatch (``normalize_advantage``), the algorithm's
:class:`~.base.LossTerms`, ``policy_loss + vf_coef * value_loss - ent_coef * entropy``, the
approximate KL ``E[(r - 1) - log r]`` (r the probability ratio; Schulman's k3 estimator, as
SB3), an early stop the algorithm may ask for (PPO's ``target_kl``), gradients clipped to
``max_grad_norm``, one optimizer step. The learning rate follows its schedule, set once per
rollout from ``progress_remaining``.

Example::

    >>> learner = OnPolicyLearner(pearl.PPO("CartPole-v1", n_steps=64, batch_size=32, n_epochs=2))
    >>> stats = learner.learn(rollout, progress_remaining=1.0)     # a filled rollout, advantages computed
    >>> stats.gradient_steps, sorted(stats.as_log())[:3]
    (4, ['approx_kl', 'clip_fraction', 'entropy'])
"""
from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from pearl_py.algorithms.networks import Networks
from pearl_py.protocol.kernel import LEARNER_UPDATE

if TYPE_CHECKING:
    from pearl_py.algorithms.on_policy.base import LossTerms, OnPolicyAlgorithm
    from pearl_py.replay.rollout import RolloutBuffer, RolloutSample
    from pearl_py.runtime.timing import KernelTimer

ADVANTAGE_EPS = 1e-8
"""Added to the advantages' standard deviation when normalizing them (as SB3)."""


@dataclass(frozen=True)
class RolloutBatch:
    """A minibatch of a rollout on the learner's device (first axis: transitions)."""

    obs: torch.Tensor
    actions: torch.Tensor
    old_values: torch.Tensor
    old_log_probs: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor

    @classmethod
    def from_numpy(cls, sample: RolloutSample, device: torch.device) -> RolloutBatch:
        def t(a: np.ndarray) -> torch.Tensor:
            return torch.from_numpy(np.ascontiguousarray(a)).to(device, non_blocking=True)

        return cls(t(sample.obs), t(sample.actions), t(sample.old_values), t(sample.old_log_probs),
                   t(sample.advantages), t(sample.returns))

    def with_normalized_advantages(self) -> RolloutBatch:
        """Advantages shifted and scaled to mean 0, std 1 (unchanged for a single transition)."""
        adv = self.advantages
        if adv.numel() < 2:
            return self
        return dataclasses.replace(self, advantages=(adv - adv.mean()) / (adv.std() + ADVANTAGE_EPS))


@dataclass(frozen=True)
class StepResult:
    """One minibatch step: its loss terms, approximate KL, and whether it stopped learning instead of stepping."""

    terms: LossTerms
    approx_kl: torch.Tensor
    stopped: bool


@dataclass(frozen=True)
class LearnStats:
    """Means over the minibatch steps of one rollout's learning (the stopping step included)."""

    policy_loss: float
    value_loss: float
    entropy: float
    approx_kl: float
    clip_fraction: float | None
    learning_rate: float
    gradient_steps: int
    """Optimizer steps taken on this rollout."""
    stopped_early: bool

    def as_log(self) -> dict[str, float]:
        """The figures a training log records (``train.csv`` columns ``loss_<name>``)."""
        out = {"policy_loss": self.policy_loss, "value_loss": self.value_loss, "entropy": self.entropy,
               "approx_kl": self.approx_kl, "learning_rate": self.learning_rate}
        if self.clip_fraction is not None:
            out["clip_fraction"] = self.clip_fraction
        return out


MinibatchUpdate = Callable[["RolloutSample", float], StepResult]
"""``update(sample, progress_remaining) -> StepResult``: one ``learner_update`` call on a minibatch (numpy)."""


class OnPolicyLearner:
    """Owns the algorithm's networks and its optimizer; learns from full rollouts."""

    def __init__(self, algorithm: OnPolicyAlgorithm, device: torch.device | str = "cpu") -> None:
        self.algorithm = algorithm
        self.device = torch.device(device)
        self.nets = Networks(algorithm.build_networks()).to(self.device)
        if algorithm.initial_state is not None:  # continue training from a saved policy (--init-from)
            self.nets.load_state_dict(algorithm.initial_state)
        self.parameters = [p for p in self.nets.online.parameters() if p.requires_grad]
        self.optimizer = algorithm.make_optimizer(self.parameters, algorithm.config.learning_rate(1.0))
        self.gradient_steps = 0
        self.update: MinibatchUpdate = self.reference_update
        """The ``learner_update`` kernel :meth:`learn` calls (an executor may install a variant)."""

    def reference_update(self, sample: RolloutSample, progress_remaining: float) -> StepResult:
        """The reference ``learner_update``: :meth:`step` on the minibatch as tensors on the learner's device."""
        return self.step(RolloutBatch.from_numpy(sample, self.device), progress_remaining)

    def learn(self, rollout: RolloutBuffer, progress_remaining: float, timer: KernelTimer | None = None
              ) -> LearnStats:
        """Epochs x shuffled minibatches over ``rollout``; each step is one timed ``learner_update`` call."""
        cfg = self.algorithm.config
        learning_rate = cfg.learning_rate(progress_remaining)
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate
        results: list[StepResult] = []
        for _ in range(cfg.epochs_per_rollout):
            for indices in rollout.minibatch_indices(cfg.minibatch_size):
                with timer(LEARNER_UPDATE) if timer is not None else contextlib.nullcontext():
                    result = self.update(rollout.sample(indices), progress_remaining)
                results.append(result)
                if result.stopped:
                    break
            if results[-1].stopped:
                break
        return self._stats(results, learning_rate)

    def step(self, batch: RolloutBatch, progress_remaining: float) -> StepResult:
        """One minibatch: loss, approximate KL, then (unless the algorithm stops early) a clipped gradient step."""
        algo, cfg = self.algorithm, self.algorithm.config
        if cfg.normalize_advantage:
            batch = batch.with_normalized_advantages()
        terms = algo.loss(self.nets, batch, progress_remaining=progress_remaining)
        with torch.no_grad():
            log_ratio = terms.log_probs - batch.old_log_probs
            approx_kl = (torch.expm1(log_ratio) - log_ratio).mean()
        if algo.stop_early(approx_kl):
            return StepResult(terms, approx_kl, stopped=True)
        loss = terms.policy_loss + cfg.vf_coef * terms.value_loss - cfg.ent_coef * terms.entropy
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.parameters, cfg.max_grad_norm)
        self.optimizer.step()
        self.gradient_steps += 1
        return StepResult(terms, approx_kl, stopped=False)

    def state_dict(self) -> dict[str, Any]:
        """Networks, optimizer state and the gradient-step count (a checkpoint's learner part)."""
        return {"nets": self.nets.state_dict(), "optimizer": self.optimizer.state_dict(),
                "gradient_steps": self.gradient_steps}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`'s data (an installed kernel variant notices the new optimizer state)."""
        self.nets.load_state_dict(state["nets"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.gradient_steps = int(state["gradient_steps"])

    @staticmethod
    def _stats(results: list[StepResult], learning_rate: float) -> LearnStats:
        def mean(values: list[torch.Tensor]) -> float:
            return float(torch.stack([v.detach().float() for v in values]).mean())

        clips = [r.terms.clip_fraction for r in results if r.terms.clip_fraction is not None]
        return LearnStats(policy_loss=mean([r.terms.policy_loss for r in results]),
                          value_loss=mean([r.terms.value_loss for r in results]),
                          entropy=mean([r.terms.entropy for r in results]),
                          approx_kl=mean([r.approx_kl for r in results]),
                          clip_fraction=mean(clips) if clips else None, learning_rate=learning_rate,
                          gradient_steps=sum(not r.stopped for r in results),
                          stopped_early=results[-1].stopped)
