"""The learner: networks, optimizers and the gradient step — the ``learner_update`` kernel.

Example::

    >>> learner = Learner(pearl.DQN("CartPole-v1"), device=torch.device("cpu"))
    >>> out = learner.update(TensorBatch.from_numpy(replay.sample(64), learner.device))
    >>> sorted(out.losses)
    ['q']
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from pearl_py.algorithms.optimizers import Adam
from pearl_py.replay.staging import upload

if TYPE_CHECKING:
    from pearl_py.algorithms.off_policy.base import Algorithm


@dataclass(frozen=True)
class TensorBatch:
    """A sampled batch on the learner's device; ``weights`` are importance-sampling weights."""

    obs: torch.Tensor
    actions: torch.Tensor
    rewards: torch.Tensor
    next_obs: torch.Tensor
    dones: torch.Tensor
    weights: torch.Tensor

    @classmethod
    def from_numpy(cls, batch, device: torch.device) -> TensorBatch:
        """From a :class:`pearl_py.replay.SampleBatch` (numpy arrays), without copying on CPU. To an accelerator the
        arrays go in one transfer from one pinned staging buffer (:func:`~pearl_py.replay.staging.upload`), so the
        upload is asynchronous (from pageable memory the copy would hold the host until it is done)."""
        device = torch.device(device)
        arrays = (batch.obs, batch.actions, batch.rewards, batch.next_obs, batch.dones, batch.weights)
        if device.type == "cpu":
            return cls(*(torch.from_numpy(np.ascontiguousarray(a)) for a in arrays))
        return cls(*upload(arrays, device))


@dataclass(frozen=True)
class UpdateResult:
    """Losses of one gradient step (tensors, read lazily) and |TD error| for priorities."""

    losses: dict[str, torch.Tensor]
    td_abs: torch.Tensor | None


class Learner:
    """Owns the algorithm's networks and one Adam optimizer per loss, and takes gradient steps.

    The runtime builds it on a device; algorithm code never sees the device.
    """

    def __init__(self, algorithm: Algorithm, device: torch.device | str = "cpu") -> None:
        self.algorithm = algorithm
        self.device = torch.device(device)
        cfg = algorithm.config
        self.nets = algorithm.fresh_networks().to(self.device)
        if algorithm.initial_state is not None:  # continue training from a saved policy (--init-from)
            self.nets.load_state_dict(algorithm.initial_state)
        self.losses = tuple(algorithm.losses())
        self.learning_rate = cfg.learning_rate(1.0)
        """The optimizers' step size now: every ``learner_update`` variant reads it (:meth:`set_learning_rate`)."""
        self.optimizers = {
            loss.name: Adam(self.nets.online[loss.trains].parameters(), lr=self.learning_rate, eps=cfg.adam_eps)
            for loss in self.losses
        }
        self.gradient_steps = 0

    def set_learning_rate(self, progress_remaining: float) -> float:
        """The config's learning rate (a ``lin_`` schedule) at ``progress_remaining`` (1 - env steps / total, held
        at 0 after the end) in every optimizer: what every executor calls at the start of each training round (SB3's
        ``_update_learning_rate`` in ``train``). The torch optimizers take it here; the fast variants
        (``kernels.fused_cpu``, ``kernels.learner_update``, ``kernels.cuda_graph``) read :attr:`learning_rate`
        before each step. Returns the rate."""
        rate = self.algorithm.config.learning_rate(max(progress_remaining, 0.0))
        if rate != self.learning_rate:
            self.learning_rate = rate
            for optimizer in self.optimizers.values():
                for group in optimizer.param_groups:
                    group["lr"] = rate
        return rate

    def update(self, batch: TensorBatch) -> UpdateResult:
        """One gradient step on every loss in order, then the per-step target update."""
        losses: dict[str, torch.Tensor] = {}
        td_abs = None
        max_norm = self.algorithm.config.max_grad_norm
        step = self.gradient_steps + 1
        for loss in self.losses:
            if step % loss.every:
                continue
            value, td = loss.fn(self.nets, batch)
            optimizer = self.optimizers[loss.name]
            optimizer.zero_grad(set_to_none=True)
            value.backward()
            if max_norm is not None:
                torch.nn.utils.clip_grad_norm_(self.nets.online[loss.trains].parameters(), max_norm)
            optimizer.step()
            losses[loss.name] = value.detach()
            if td is not None:
                td_abs = td.detach().abs()
        self.gradient_steps = step
        self.algorithm.after_gradient_step(self.nets, step)
        return UpdateResult(losses, td_abs)

    def state_dict(self) -> dict:
        return {
            "nets": self.nets.state_dict(),
            "optimizers": {name: opt.state_dict() for name, opt in self.optimizers.items()},
            "gradient_steps": self.gradient_steps,
        }

    def load_state_dict(self, state: dict) -> None:
        self.nets.load_state_dict(state["nets"])
        for name, opt in self.optimizers.items():
            opt.load_state_dict(state["optimizers"][name])
        self.learning_rate = next(iter(self.optimizers.values())).param_groups[0]["lr"]   # the checkpoint's
        self.gradient_steps = state["gradient_steps"]
