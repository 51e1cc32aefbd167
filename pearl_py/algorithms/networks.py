"""Network building blocks shared by every algorithm.

Example::

    >>> q = mlp(4, (256, 256), 2)
    >>> nets = Networks({"q": q}, target_names=("q",))
    >>> nets.online.q is q, nets.target.q is q
    (True, False)
"""
from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence

import torch
from torch import nn


def mlp(n_in: int, hidden: Sequence[int], n_out: int, output_activation: type[nn.Module] | None = None,
        activation: type[nn.Module] = nn.ReLU) -> nn.Sequential:
    """A multilayer perceptron ``n_in -> hidden... -> n_out`` (ReLU hidden layers unless ``activation``)."""
    layers: list[nn.Module] = []
    width = n_in
    for h in hidden:
        layers += [nn.Linear(width, h), activation()]
        width = h
    layers.append(nn.Linear(width, n_out))
    if output_activation is not None:
        layers.append(output_activation())
    return nn.Sequential(*layers)


class StateActionValue(nn.Module):
    """Q(s, a) for continuous actions: an MLP over the concatenated observation (or its features) and action.

    ``encoder`` (frames: a CNN, :mod:`pearl_py.algorithms.cnn`) maps observations to ``obs_dim`` features first.
    """

    def __init__(self, obs_dim: int, action_dim: int, hidden: Sequence[int], encoder: nn.Module | None = None) -> None:
        super().__init__()
        if encoder is not None:
            self.encoder = encoder
        self.net = mlp(obs_dim + action_dim, hidden, 1)

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        features = self.encoder(obs) if hasattr(self, "encoder") else obs
        return self.net(torch.cat([features, action], dim=-1)).squeeze(-1)


class TwinStateActionValue(nn.Module):
    """Two independent Q(s, a) estimates (TD3, SAC: the smaller one fights overestimation).

    ``encoders``: one observation encoder per estimate (None: the observations as they are)."""

    def __init__(self, obs_dim: int, action_dim: int, hidden: Sequence[int],
                 encoders: tuple[nn.Module, nn.Module] | None = None) -> None:
        super().__init__()
        first, second = encoders if encoders is not None else (None, None)
        self.q1 = StateActionValue(obs_dim, action_dim, hidden, first)
        self.q2 = StateActionValue(obs_dim, action_dim, hidden, second)

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.q1(obs, action), self.q2(obs, action)


class Networks(nn.Module):
    """The online networks of an algorithm and frozen target copies of some of them.

    Loss functions reach them as ``nets.online.<name>`` and ``nets.target.<name>``.
    """

    def __init__(self, online: dict[str, nn.Module], target_names: Iterable[str] = ()) -> None:
        super().__init__()
        self.online = nn.ModuleDict(online)
        self.target = nn.ModuleDict()
        for name in target_names:
            if name not in online:
                raise KeyError(f"target network {name!r} has no online network; networks: {sorted(online)}")
            self.target[name] = copy.deepcopy(online[name]).requires_grad_(False)

    @torch.no_grad()
    def update_targets(self, tau: float) -> None:
        """Polyak update ``target = tau * online + (1 - tau) * target`` (tau = 1: hard copy)."""
        targets, onlines, buffers = self._target_pairs()
        if tau == 1.0:
            torch._foreach_copy_(targets, onlines)
        else:
            torch._foreach_lerp_(targets, onlines, tau)
        for t_buf, o_buf in buffers:
            t_buf.copy_(o_buf)

    def _target_pairs(self) -> tuple[list[torch.Tensor], list[torch.Tensor], list[tuple[torch.Tensor, torch.Tensor]]]:
        """Every target network's parameters, the online ones they follow (in the same order) and their buffers'
        pairs; gathered once (a DQN on CartPole updates its target every 10 env steps). Invariant: the lists hold
        the modules' own tensors; replacing a tensor's storage in place (``param.data = ...``) keeps them, and
        what replaces the tensors themselves (``to``, ``load_state_dict``) gathers them again."""
        pairs = self.__dict__.get("_pairs")
        if pairs is None:
            targets, onlines, buffers = [], [], []
            for name, target in self.target.items():
                targets += target.parameters()
                onlines += self.online[name].parameters()
                buffers += zip(target.buffers(), self.online[name].buffers())
            pairs = self.__dict__["_pairs"] = (targets, onlines, buffers)
        return pairs

    def _apply(self, fn, *args, **kwargs):  # noqa: ANN001, ANN202 (nn.Module's)
        self.__dict__.pop("_pairs", None)
        return super()._apply(fn, *args, **kwargs)

    def load_state_dict(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201 (nn.Module's)
        self.__dict__.pop("_pairs", None)
        return super().load_state_dict(*args, **kwargs)

    def acting_state(self, names: Iterable[str]) -> dict[str, torch.Tensor]:
        """Flat state dict of the networks actors need (what ``param_sync`` moves)."""
        return {f"{n}.{k}": v for n in names for k, v in self.online[n].state_dict().items()}
