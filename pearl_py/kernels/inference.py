"""Inference kernels: a batch of observations (numpy, one row per env) to actions (numpy).

``make_reference`` is what the serial executor does by default: ``algorithm.act`` under
``torch.no_grad`` — the bit-exact path (same torch random draws as the algorithm's ``act``).

``make_fused`` is the CPU path for the acting forms an algorithm declares (:data:`FORMS`, never its class),
each whole act as one ``@njit(nogil=True)`` call over numpy views of the acting network's parameters: a
parameter written in place is seen by the next call, a replaced storage is noticed (``data_ptr`` per parameter)
and viewed again. Random numbers come from the kernel's own splitmix64 stream (seeded with ``seed`` or
``torch.initial_seed()``): deterministic for a seed, explored actions differ from the reference's, greedy ones
agree. docs/kernels.md, "CPU inference", gives the forms' math, the stream's draws and the measurements.

Example::

    >>> infer = make_fused(algo, learner.nets)           # DQN, DDPG, TD3 or SAC on CPU MLPs
    >>> infer(obs, explore=True, progress=0.3).shape    # obs: (n_envs, obs_dim) float32
    (8,)
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from pearl_py.algorithms.networks import Networks
from pearl_py.algorithms.off_policy.base import Algorithm
from pearl_py.kernels.fused_cpu import Scratch
from pearl_py.kernels.fused_support import ACT_FORMS, ACTING, acting_problem
from pearl_py.kernels.numba_blas import JIT, numba, numba_available, set_blas_threads
from pearl_py.kernels.registry import KernelUnavailable

Inference = Callable[..., np.ndarray]
"""``infer(obs: np.ndarray, *, explore: bool, progress: float) -> np.ndarray`` of actions."""


def make_reference(algorithm: Algorithm, nets: Networks) -> Inference:
    """``algorithm.act`` on the networks as they are, under ``torch.no_grad``."""
    device = next(nets.parameters()).device

    def infer(obs: np.ndarray, *, explore: bool, progress: float) -> np.ndarray:
        with torch.no_grad():
            return algorithm.act(nets, torch.as_tensor(obs, device=device), explore=explore,
                                 progress=progress).cpu().numpy()

    return infer


# --------------------------------------------------------------------------------------------
# The numba kernel: an MLP forward (ReLU between layers) into a flat scratch, then the act.
# --------------------------------------------------------------------------------------------
if numba is not None:
    from numba import njit

    from pearl_py.kernels.mlp_numba import ACT_NONE, ACT_RELU, ACT_TANH, linear, tanh32

    @njit(**JIT)
    def _next_uniform(state):
        """splitmix64: advance ``state[0]``, return a float64 uniform in [0, 1)."""
        s = state[0] + np.uint64(0x9E3779B97F4A7C15)
        state[0] = s
        z = s
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
        return np.float64(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)

    @njit(**JIT)
    def _mlp(x, Ws, bs, S, out_tanh):
        """The MLP's output (B, n_out), in ``S``: Linear, ReLU, ..., Linear[, tanh]; ``S`` holds every
        layer's output, then the scratch of ``linear``."""
        B = x.shape[0]
        h = x
        off = 0
        n = len(Ws)
        end = 0
        for k in range(n):
            end += B * Ws[k].shape[0]
        wt = S[end:]
        for k in range(n):
            W = Ws[k]
            b = bs[k]
            no = W.shape[0]
            z = S[off:off + B * no].reshape((B, no))
            off += B * no
            linear(h, W, b, z, ACT_RELU if k < n - 1 else (ACT_TANH if out_tanh else ACT_NONE), wt)
            h = z
        return h

    @njit(**JIT)
    def dqn_act(x, Ws, bs, S, explore, epsilon, state):
        """Greedy argmax of Q (first maximum, as ``torch.argmax``); epsilon-greedy when ``explore``."""
        q = _mlp(x, Ws, bs, S, False)
        B, A = q.shape
        out = np.empty(B, np.int64)
        for i in range(B):
            best = 0
            for a in range(1, A):
                if q[i, a] > q[i, best]:
                    best = a
            if explore and _next_uniform(state) < epsilon:
                best = min(int(_next_uniform(state) * A), A - 1)
            out[i] = best
        return out

    @njit(**JIT)
    def _normal(state):
        """A standard normal (Box-Muller on two uniforms, cosine branch)."""
        u1 = 1.0 - _next_uniform(state)          # (0, 1]: log is finite
        u2 = _next_uniform(state)
        return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)

    @njit(**JIT)
    def ddpg_act(x, Ws, bs, S, explore, noise_std, state):
        """tanh actor; with ``explore``, ``clip(action + noise_std * N(0, 1), -1, 1)``."""
        y = _mlp(x, Ws, bs, S, True)
        B, D = y.shape
        out = np.empty((B, D), np.float32)
        for i in range(B):
            for j in range(D):
                v = y[i, j]
                if explore:
                    v = v + np.float32(noise_std * _normal(state))
                    v = min(max(v, np.float32(-1.0)), np.float32(1.0))
                out[i, j] = v
        return out

    @njit(**JIT)
    def sac_act(x, Ws, bs, S, explore, unused, state):
        """Squashed Gaussian: the actor's outputs are (mean, log std); ``tanh(mean)`` greedy, else
        ``tanh(mean + exp(clamp(log_std, -20, 2)) * N(0, 1))``."""
        y = _mlp(x, Ws, bs, S, False)
        B, D = y.shape[0], y.shape[1] // 2
        out = np.empty((B, D), np.float32)
        for i in range(B):
            for j in range(D):
                u = y[i, j]
                if explore:
                    log_std = min(max(y[i, D + j], np.float32(-20.0)), np.float32(2.0))
                    u = u + np.exp(log_std) * np.float32(_normal(state))
                out[i, j] = tanh32(u)
        return out

    ACT_KERNELS = {"epsilon_greedy_q": dqn_act, "deterministic_actor_noise": ddpg_act, "squashed_gaussian": sac_act}
    """The numba act of each acting form the fused inference implements (the keys of ``fused_support.ACTING``)."""


FORMS = ACT_FORMS
"""The acting forms (``acting_form``) this kernel implements (their math: docs/kernels.md, "CPU inference")."""


def supports(algorithm: Algorithm, nets: Networks) -> tuple[bool, str]:
    """Whether the fused inference can run ``algorithm``'s act on ``nets``, and why not."""
    ok, why = numba_available()
    if not ok:
        return ok, why
    why = acting_problem(algorithm, dict(nets.online))       # the declared form, the acting network's structure
    return (False, why) if why is not None else (True, "")


class FusedInference:
    """An algorithm's act (by its acting form) as one numba call over numpy views of the acting network."""

    def __init__(self, algorithm: Algorithm, nets: Networks, seed: int | None = None) -> None:
        ok, why = supports(algorithm, nets)
        if not ok:
            raise KernelUnavailable(f"inference variant 'fused' (cpu): {why}")
        set_blas_threads(torch.get_num_threads())
        self.algorithm = algorithm
        self.form = algorithm.declared_acting_form()
        net = nets.online[ACTING[self.form][0]]
        self.linears = [m for m in net if type(m) is nn.Linear]
        self.params = [p for m in self.linears for p in (m.weight, m.bias)]
        self.kernel = ACT_KERNELS[self.form]
        self._scratch = Scratch(sum(m.out_features for m in self.linears), self.linears)
        self.state = np.array([torch.initial_seed() if seed is None else seed], np.uint64)
        self._views()

    def _views(self) -> None:
        """Numpy views of the current parameter storages (no copy)."""
        for p in self.params:
            if not p.is_contiguous() or p.dtype != torch.float32 or p.device.type != "cpu":
                raise ValueError("fused inference: parameters must stay contiguous float32 CPU tensors")
        self.Ws = tuple(m.weight.detach().numpy() for m in self.linears)
        self.bs = tuple(m.bias.detach().numpy() for m in self.linears)
        self._ptrs = [p.data_ptr() for p in self.params]

    def __call__(self, obs: np.ndarray, *, explore: bool, progress: float) -> np.ndarray:
        if [p.data_ptr() for p in self.params] != self._ptrs:
            self._views()           # a parameter's storage was replaced (e.g. the fused learner adopted it)
        if obs.dtype != np.float32 or not obs.flags.c_contiguous:
            obs = np.ascontiguousarray(obs, dtype=np.float32)
        S = self._scratch(obs.shape[0])
        rate = 0.0
        if self.form == "epsilon_greedy_q":
            rate = self.algorithm.epsilon(progress) if explore else 0.0
        elif self.form == "deterministic_actor_noise":
            rate = self.algorithm.gaussian_noise_std
            explore = explore and rate > 0
        return self.kernel(obs, self.Ws, self.bs, S, explore, rate, self.state)


def make_fused(algorithm: Algorithm, nets: Networks, seed: int | None = None) -> FusedInference:
    """The ``fused`` CPU inference of an algorithm whose acting form it implements (raises
    :class:`KernelUnavailable` with the reason for any other, or for acting networks that are not plain
    CPU float32 MLPs)."""
    return FusedInference(algorithm, nets, seed)
