"""The networks inference runs on, on the device the plan puts inference on.

Beside the learner, inference reads the learner's own networks (every act sees the latest update); apart from it,
inference acts on its own copy, which :meth:`ActingNetworks.sync` refreshes once per training round (``param_sync``).

Example::

    >>> acting = ActingNetworks(algo, learner, torch.device("cpu"))     # learner on cuda:0
    >>> acting.copied, next(acting.nets.parameters()).device
    (True, device(type='cpu'))
    >>> with timer("param_sync"):
    ...     acting.sync()
"""
from __future__ import annotations

import copy

import torch

from pearl_py.algorithms.networks import Networks
from pearl_py.algorithms.off_policy.base import Algorithm
from pearl_py.algorithms.off_policy.learner import Learner


class ActingNetworks:
    """Inference's networks on ``device``: the learner's own there, else a copy that :meth:`sync` refreshes."""

    def __init__(self, algorithm: Algorithm, learner: Learner, device: torch.device) -> None:
        self.device = torch.device(device)
        self.copied = self.device != learner.device
        """Whether inference has its own copy (the plan puts it on another device than the learner)."""
        self.nets: Networks = copy.deepcopy(learner.nets).to(self.device) if self.copied else learner.nets
        self._learner, self._names = learner, algorithm.acting_networks
        self._target = self.nets.acting_state(algorithm.acting_networks)

    def sync(self) -> None:
        """Copy the learner's acting weights into the copy (nothing to do where inference reads the learner's)."""
        if self.copied:
            # the learner's tensors looked up now: a fused update built mid-run (a variant switch) moves their storage
            source = self._learner.nets.acting_state(self._names)
            with torch.no_grad():
                for name, target in self._target.items():  # across devices: one copy per tensor
                    target.copy_(source[name])
