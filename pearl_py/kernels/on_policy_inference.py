"""On-policy inference kernels: observations and per-env uniforms (numpy) to actions, values and log-probabilities.

An :class:`ActingKernel` is what the on-policy executors call once per vector step (``inference``):
``kernel(obs, noise) -> Acted`` with the sampled actions, V(obs) and the actions' log-probabilities,
and ``kernel.values(obs)`` for the bootstrap values (truncated episodes' final observations, the
rollout's last observations). ``noise`` holds each env's own uniforms
(:mod:`pearl_py.algorithms.on_policy.noise`).

* ``reference``: the algorithm's ``act`` under ``torch.no_grad`` (any on-policy algorithm; one
  whose ``act`` takes no ``noise`` samples from torch's generator instead).
* ``fused``: the MLP actor-critic (acting form ``actor_critic``: categorical or diagonal Gaussian
  policy, tanh or ReLU hidden layers) as one ``@njit(nogil=True)`` call over numpy views of the
  parameters. Every layer is computed with the batch as the inner, vectorised loop and each output
  accumulated over its inputs in a fixed order, so **a row's result does not depend on the other
  rows**: an actor stepping a share of the envs computes bit for bit what the serial executor
  computes for those envs (torch's GEMMs round differently at different batch sizes). This is what
  makes a seeded parallel run equal the serial run (docs/runtime.md, "On-policy").

Example::

    >>> kernel = make_fused(pearl.PPO("CartPole-v1"), learner.nets)
    >>> acted = kernel(obs, env_uniforms(seed, range(8), step, kernel.noise_width))
    >>> acted.actions.shape, acted.values.dtype
    ((8,), dtype('float32'))
"""
from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np
import torch
from torch import nn

from pearl_py.kernels.numba_blas import JIT, numba, numba_available
from pearl_py.kernels.registry import KernelUnavailable

if TYPE_CHECKING:
    from pearl_py.algorithms.networks import Networks
    from pearl_py.algorithms.on_policy.base import OnPolicyAlgorithm

ACTOR_CRITIC = "actor_critic"
"""The acting form the fused kernel implements (``ActorCriticAlgorithm.acting_form``)."""
FORMS = ((ACTOR_CRITIC,),)


@dataclass(frozen=True)
class Acted:
    """One inference call: actions (int64 indices or float32 rows), V(obs) and log-probabilities (float32)."""

    actions: np.ndarray
    values: np.ndarray
    log_probs: np.ndarray


class ActingKernel(Protocol):
    """``kernel(obs, noise) -> Acted``; ``kernel.values(obs) -> V(obs)``."""

    noise_width: int

    def __call__(self, obs: np.ndarray, noise: np.ndarray) -> Acted: ...

    def values(self, obs: np.ndarray) -> np.ndarray: ...


def _takes_noise(act: Callable[..., object]) -> bool:
    return "noise" in inspect.signature(act).parameters


class ReferenceActing:
    """The algorithm's ``act`` and ``value`` on the networks as they are, under ``torch.no_grad``."""

    def __init__(self, algorithm: OnPolicyAlgorithm, nets: Networks) -> None:
        self.algorithm, self.nets = algorithm, nets
        self.device = next(nets.parameters()).device
        self.noise_width = algorithm.noise_width
        self._noise = _takes_noise(algorithm.act)

    def __call__(self, obs: np.ndarray, noise: np.ndarray) -> Acted:
        extra = {"noise": torch.as_tensor(noise, device=self.device)} if self._noise else {}
        with torch.no_grad():
            step = self.algorithm.act(self.nets, torch.as_tensor(obs, device=self.device), explore=True, **extra)
        return Acted(step.actions.cpu().numpy(), step.values.cpu().numpy(), step.log_probs.cpu().numpy())

    def values(self, obs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return self.algorithm.value(self.nets, torch.as_tensor(obs, device=self.device)).cpu().numpy()


def make_reference(algorithm: OnPolicyAlgorithm, nets: Networks) -> ReferenceActing:
    return ReferenceActing(algorithm, nets)


# --------------------------------------------------------------------------------------------
# The numba kernel: both MLPs with the rows as the inner loop, then the policy head.
# --------------------------------------------------------------------------------------------
HIDDEN_CODES = {nn.Tanh: 2, nn.ReLU: 1}
"""Hidden activation codes (mlp_numba's ACT_TANH, ACT_RELU)."""

if numba is not None:
    from numba import njit

    from pearl_py.kernels.mlp_numba import tanh32

    @njit(**JIT)
    def mlp_columns(Ws, bs, x, hidden):
        """``x`` (rows, n_in) through the layers ``(Ws[l], bs[l])`` (torch's ``(out, in)`` weights), ``hidden``
        between them (1 ReLU, 2 tanh), none after the last; returns the output as ``(n_out, rows)``.

        Output ``j`` of a row is ``act(sum_k W[j, k] h[k] + b[j])`` summed over ``k`` in order, with the rows
        as the inner loop: the same operations on every row whatever the batch (row-invariant)."""
        rows = x.shape[0]
        h = np.empty((x.shape[1], rows), np.float32)
        for i in range(rows):
            for k in range(x.shape[1]):
                h[k, i] = x[i, k]
        n = len(Ws)
        for layer in range(n):
            W, b = Ws[layer], bs[layer]
            z = np.zeros((W.shape[0], rows), np.float32)
            for j in range(W.shape[0]):
                zj = z[j]
                for k in range(W.shape[1]):
                    w = W[j, k]
                    hk = h[k]
                    for i in range(rows):
                        zj[i] += w * hk[i]
                bj = b[j]
                for i in range(rows):
                    v = zj[i] + bj
                    if layer < n - 1:
                        if hidden == 2:
                            v = tanh32(v)
                        elif v < 0:
                            v = np.float32(0.0)
                    zj[i] = v
            h = z
        return h

    @njit(**JIT)
    def categorical_act(logits, noise, actions, log_probs):
        """Per row (``logits`` is (n_actions, rows)): the first action whose cumulative probability exceeds the
        row's uniform, and its log-probability ``logit - logsumexp``."""
        n_act, rows = logits.shape
        for i in range(rows):
            top = logits[0, i]
            for a in range(1, n_act):
                top = max(top, logits[a, i])
            total = np.float32(0.0)
            for a in range(n_act):
                total += np.exp(logits[a, i] - top)
            lse = top + np.log(total)
            u = noise[i, 0]
            cumulative = np.float32(0.0)
            chosen = n_act - 1
            for a in range(n_act):
                cumulative += np.exp(logits[a, i] - lse)
                if not cumulative < u:
                    chosen = a
                    break
            actions[i] = chosen
            log_probs[i] = logits[chosen, i] - lse

    @njit(**JIT)
    def gaussian_act(mean, log_std, noise, actions, log_probs):
        """Per row (``mean`` is (action_dim, rows)): ``a = mean + exp(log_std) z``, ``z`` by Box-Muller from the row's
        uniforms (u1 first, then u2), and ``log N(a; mean, exp(log_std))`` summed over the elements."""
        dim, rows = mean.shape
        half_log_2pi = np.float32(0.5 * math.log(2.0 * math.pi))
        two_pi = np.float32(2.0 * math.pi)
        for i in range(rows):
            total = np.float32(0.0)
            for j in range(dim):
                z = np.sqrt(np.float32(-2.0) * np.log(noise[i, j])) * np.cos(two_pi * noise[i, dim + j])
                a = mean[j, i] + np.exp(log_std[j]) * z
                actions[i, j] = a
                zz = (a - mean[j, i]) * np.exp(-log_std[j])
                total += np.float32(-0.5) * zz * zz - log_std[j] - half_log_2pi
            log_probs[i] = total


def _linears(net: nn.Sequential) -> list[nn.Linear]:
    return [m for m in net if type(m) is nn.Linear]


def acting_problem(algorithm: OnPolicyAlgorithm, nets: Networks) -> str | None:
    """Why the fused kernel cannot run ``algorithm`` on ``nets`` (None: it can)."""
    from pearl_py.algorithms.on_policy.policy import ActorCritic

    if algorithm.declared_acting_form() != ACTOR_CRITIC:
        return f"implements the acting form {ACTOR_CRITIC!r}; {algorithm.name} declares " \
               f"{algorithm.declared_acting_form()!r}"
    policy = nets.online["policy"] if "policy" in nets.online else None
    if type(policy) is not ActorCritic:
        return "runs pearl_py's ActorCritic network only"
    for name in ("pi", "vf"):
        net = getattr(policy, name)
        kinds = {type(m) for m in net}
        if type(net) is not nn.Sequential or not kinds <= {nn.Linear, nn.Tanh, nn.ReLU} or len(kinds) > 2 \
                or type(net[-1]) is not nn.Linear:
            return f"its {name} network is not an MLP of Linear layers with one hidden activation (tanh or ReLU)"
    if {type(m) for m in policy.pi} != {type(m) for m in policy.vf}:
        return "its policy and value MLPs use different activations"
    if next(policy.parameters()).device.type != "cpu":
        return "the fused inference runs on the CPU"
    return None


def hidden_code(net: nn.Sequential) -> int:
    """The MLP's hidden activation as mlp_numba's code (tanh when it has no hidden layer)."""
    return next((HIDDEN_CODES[type(m)] for m in net if type(m) in HIDDEN_CODES), HIDDEN_CODES[nn.Tanh])


class FusedActing:
    """The MLP actor-critic's act and value as numba calls over numpy views of the parameters.

    The views follow the parameters: the learner updating them in place, ``ParamBoard.read_into`` copying
    into them, and the ``fused`` learner update replacing their storage (checked by ``data_ptr``, one per
    parameter, before each call) are all seen by the next call.
    """

    def __init__(self, algorithm: OnPolicyAlgorithm, nets: Networks) -> None:
        why = acting_problem(algorithm, nets)
        if why is not None:
            raise KernelUnavailable(f"inference variant 'fused' (cpu, on-policy): {why}")
        self.policy = nets.online["policy"]
        self.discrete = algorithm.spec.discrete
        self.action_dim = algorithm.spec.action_dim
        self.noise_width = algorithm.noise_width
        self.hidden = hidden_code(self.policy.pi)
        self._tensors = [p for net in (self.policy.pi, self.policy.vf) for m in _linears(net)
                         for p in (m.weight, m.bias)] + ([] if self.discrete else [self.policy.log_std])
        self._ptrs: list[int] = []
        self._views()

    def _views(self) -> None:
        """Numpy views of the parameters (taken again whenever a parameter's storage moved)."""
        ptrs = [t.data_ptr() for t in self._tensors]
        if ptrs == self._ptrs:
            return
        self._ptrs = ptrs

        def arrays(net: nn.Sequential) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
            linears = _linears(net)
            return (tuple(m.weight.detach().numpy() for m in linears), tuple(m.bias.detach().numpy() for m in linears))

        self.pi, self.vf = arrays(self.policy.pi), arrays(self.policy.vf)
        self.log_std = None if self.discrete else self.policy.log_std.detach().numpy()

    def __call__(self, obs: np.ndarray, noise: np.ndarray) -> Acted:
        self._views()
        obs = np.ascontiguousarray(obs, dtype=np.float32)
        noise = np.ascontiguousarray(noise, dtype=np.float32)
        rows = obs.shape[0]
        head = mlp_columns(self.pi[0], self.pi[1], obs, self.hidden)
        log_probs = np.empty(rows, np.float32)
        if self.discrete:
            actions = np.empty(rows, np.int64)
            categorical_act(head, noise, actions, log_probs)
        else:
            actions = np.empty((rows, self.action_dim), np.float32)
            gaussian_act(head, self.log_std, noise, actions, log_probs)
        return Acted(actions, self._value(obs), log_probs)

    def values(self, obs: np.ndarray) -> np.ndarray:
        self._views()
        return self._value(np.ascontiguousarray(obs, dtype=np.float32))

    def _value(self, obs: np.ndarray) -> np.ndarray:
        return mlp_columns(self.vf[0], self.vf[1], obs, self.hidden)[0].copy()


def make_fused(algorithm: OnPolicyAlgorithm, nets: Networks) -> FusedActing:
    ok, why = numba_available()
    if not ok:
        raise KernelUnavailable(f"inference variant 'fused' (cpu, on-policy): {why}")
    return FusedActing(algorithm, nets)
