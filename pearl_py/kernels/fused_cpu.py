"""The ``fused`` CPU learner update: DQN's and DDPG's whole gradient step in one numba function.

One ``@njit(nogil=True)`` call per update runs the target forward, the online forward,
the loss, the backward pass, the gradient-norm clip, Adam (bias corrections in float64,
as ``torch.optim.Adam``) and, for DDPG, the soft target update, over float32 numpy
arrays, with BLAS (scipy's OpenBLAS, which numba links) for every GEMM. No Python runs
between the pieces, no tensor is dispatched and nothing is allocated but the returned
loss and ``|TD|`` arrays.

Memory is shared with the learner's torch modules: on build, every trained parameter,
its target copy and its Adam ``exp_avg``/``exp_avg_sq``/``step`` are moved into flat
float32 buffers (one per role) and the torch tensors become views of them
(``param.data = flat[a:b].view(shape)``; the optimizer's state tensors likewise). So
checkpoints (``Learner.state_dict``), DQN's hard target copies, ``param_sync`` and the
reference ``Learner.update`` keep reading and writing the same memory, and the
reference and fused steps can alternate. ``Optimizer.load_state_dict`` replaces the
state tensors: the update notices (identity check, one per loss) and adopts them again.

It is algorithm-specific by nature: exactly :class:`pearl_py.DQN` (double-Q,
importance weights, ``max_grad_norm``) and :class:`pearl_py.DDPG` (critic step, then
actor step on the updated critic, MSE, tanh actor, soft target updates), on
pearl_py's MLPs. :func:`supports` says why anything else is refused.

Example::

    >>> update = make_fused_cpu(learner)     # first build compiles the numba kernel (cached on disk)
    >>> out = update(batch)                  # like learner.update(batch)
"""
from __future__ import annotations

import math
import os
import time

import numpy as np
import torch
from torch import nn

from pearl_py.algorithms.learner import Learner, TensorBatch, UpdateResult
from pearl_py.kernels.registry import KernelUnavailable
from pearl_py.kernels.workspace import AdamHyper

try:  # numba is optional: without it the variant is unavailable
    import numba
    from numba import njit
except ImportError:  # pragma: no cover - numba ships with the project's constraints
    numba = None


def numba_available() -> tuple[bool, str]:
    """Whether numba and the BLAS it calls through (scipy's) can run here."""
    if numba is None:
        return False, "numba is not installed"
    try:
        import scipy.linalg.cython_blas  # noqa: F401  numba's np.dot calls BLAS through scipy
    except ImportError:
        return False, "numba's np.dot needs scipy's BLAS (scipy is not installed)"
    return True, ""


# --------------------------------------------------------------------------------------------
# The numba kernel. Layer table rows: (weight offset, bias offset, n_in, n_out), offsets into
# the flat parameter buffers; a network is a run of rows. Scratch ``S`` is carved in a fixed order.
# --------------------------------------------------------------------------------------------
_JIT = dict(cache=True, nogil=True, fastmath=False, error_model="numpy")
"""Exact IEEE float32 arithmetic (no fastmath); ``error_model="numpy"``: a float division is a plain
division (inf/nan as in torch), not a ZeroDivisionError check, which kept numba from vectorizing Adam."""

if numba is not None:
    @njit(**_JIT)
    def _carve(S, off, rows, cols):
        end = off + rows * cols
        if end > S.size:
            raise ValueError("fused learner update: scratch workspace too small")
        return S[off:end].reshape((rows, cols)), end

    @njit(**_JIT)
    def bias_activation(z, b, last, out_tanh):
        """``z += b`` on every row, then ReLU (hidden layers) or tanh (the last layer, if ``out_tanh``).

        Shared by the fused learner update and the fused inference (``pearl_py.kernels.inference``)."""
        for i in range(z.shape[0]):
            for j in range(z.shape[1]):
                v = z[i, j] + b[j]
                if not last:
                    v = v if v > 0 else np.float32(0.0)
                elif out_tanh:
                    v = np.tanh(v)
                z[i, j] = v

    @njit(**_JIT)
    def _forward(P, L, first, n, x, S, off, out_tanh):
        """MLP forward on ``x`` (B, n_in) with ReLU between layers; activations stored in S from ``off``
        (the input first, then every layer's output). Returns the end offset."""
        B = x.shape[0]
        h, off = _carve(S, off, B, x.shape[1])
        h[:, :] = x
        for k in range(n):
            wo, bo, ni, no = L[first + k, 0], L[first + k, 1], L[first + k, 2], L[first + k, 3]
            W = P[wo:wo + no * ni].reshape((no, ni))
            b = P[bo:bo + no]
            z, off = _carve(S, off, B, no)
            np.dot(h, W.T, z)
            bias_activation(z, b, k == n - 1, out_tanh)
            h = z
        return off

    @njit(**_JIT)
    def _output(S, L, first, n, B, off):
        """The last layer's output of a forward stored at ``off``."""
        o = off + B * L[first, 2]
        for k in range(n - 1):
            o += B * L[first + k, 3]
        return S[o:o + B * L[first + n - 1, 3]].reshape((B, L[first + n - 1, 3]))

    @njit(**_JIT)
    def _backward(P, G, L, first, n, S, act_off, dz, off, param_grads, input_grad):
        """Backward of a forward stored at ``act_off``, from ``dz`` (B, n_out) of the last layer's
        pre-activation. Writes weight/bias gradients into G when ``param_grads``; returns the input
        gradient (B, n_in) when ``input_grad`` (else ``dz`` of the first layer) and the end offset."""
        B = dz.shape[0]
        starts = np.empty(n + 1, np.int64)   # activation k (k = 0: the input) at starts[k]
        starts[0] = act_off
        starts[1] = act_off + B * L[first, 2]
        for k in range(1, n):
            starts[k + 1] = starts[k] + B * L[first + k - 1, 3]
        for k in range(n - 1, -1, -1):
            wo, bo, ni, no = L[first + k, 0], L[first + k, 1], L[first + k, 2], L[first + k, 3]
            a_prev = S[starts[k]:starts[k] + B * ni].reshape((B, ni))
            if param_grads:
                gW = G[wo:wo + no * ni].reshape((no, ni))
                np.dot(dz.T, a_prev, gW)
                gb = G[bo:bo + no]
                gb[:] = 0.0
                for i in range(B):
                    for j in range(no):
                        gb[j] += dz[i, j]
            if k > 0 or input_grad:
                W = P[wo:wo + no * ni].reshape((no, ni))
                da, off = _carve(S, off, B, ni)
                np.dot(dz, W, da)
                if k > 0:
                    for i in range(B):
                        for j in range(ni):
                            if not a_prev[i, j] > 0:
                                da[i, j] = 0.0
                dz = da
        return dz, off

    @njit(**_JIT)
    def _clip(G, start, end, max_norm):
        """``clip_grad_norm_`` over G[start:end]: the float32 L2 norm (a BLAS dot), then the scale."""
        g = G[start:end]
        norm = np.float32(math.sqrt(np.dot(g, g)))
        coef = np.float32(max_norm) / (norm + np.float32(1e-6))
        if coef < np.float32(1.0):
            for i in range(g.size):
                g[i] = g[i] * coef

    @njit(**_JIT)
    def _adam(P, G, M, V, steps, s0, s1, start, end, lr, beta1, beta2, eps):
        """``torch.optim.Adam``'s single-tensor step over P[start:end]; step counters steps[s0:s1]."""
        step = np.float64(steps[s0]) + 1.0
        for s in range(s0, s1):
            steps[s] = np.float32(step)
        step_size = np.float32(lr / (1.0 - beta1 ** step))
        bc2_sqrt = np.float32(math.sqrt(1.0 - beta2 ** step))
        w1 = np.float32(1.0 - beta1)
        b2 = np.float32(beta2)
        w2 = np.float32(1.0 - beta2)
        eps32 = np.float32(eps)
        p, gr, m_, v_ = P[start:end], G[start:end], M[start:end], V[start:end]
        for i in range(p.size):
            g = gr[i]
            m = m_[i] + w1 * (g - m_[i])
            v = v_[i] * b2 + w2 * g * g
            m_[i] = m
            v_[i] = v
            p[i] = p[i] - step_size * m / (np.sqrt(v) / bc2_sqrt + eps32)

    @njit(**_JIT)
    def _lerp(T, P, start, end, tau):
        """``torch._foreach_lerp_(target, online, tau)`` (tau = 1: copy)."""
        w = np.float32(tau)
        t, p = T[start:end], P[start:end]
        if tau == 1.0:
            t[:] = p
        elif tau < 0.5:
            for i in range(t.size):
                t[i] = t[i] + w * (p[i] - t[i])
        else:
            for i in range(t.size):
                t[i] = p[i] - (p[i] - t[i]) * (np.float32(1.0) - w)

    @njit(**_JIT)
    def dqn_step(obs, actions, rewards, next_obs, dones, weights, P, T, G, M, V, steps, L, S,
                 hp, double_q, clip, out_td, out_loss):
        """One DQN gradient step in place. ``hp`` = (gamma, max_norm, lr, beta1, beta2, eps)."""
        B = obs.shape[0]
        n = L.shape[0]
        A = L[n - 1, 3]
        gamma = np.float32(hp[0])
        # Target: r + gamma * (1 - done) * max_a Q_target(s', a)  (double: at argmax_a Q_online(s', a))
        off = _forward(T, L, 0, n, next_obs, S, 0, False)
        next_q = _output(S, L, 0, n, B, 0)
        target = np.empty(B, np.float32)
        online_next = next_q
        if double_q:
            off2 = _forward(P, L, 0, n, next_obs, S, off, False)
            online_next = _output(S, L, 0, n, B, off)
            off = off2
        for i in range(B):
            if double_q:
                best = 0
                for a in range(1, A):
                    if online_next[i, a] > online_next[i, best]:
                        best = a
                nv = next_q[i, best]
            else:
                nv = next_q[i, 0]
                for a in range(1, A):
                    if next_q[i, a] > nv:
                        nv = next_q[i, a]
            target[i] = rewards[i] + gamma * (np.float32(1.0) - dones[i]) * nv
        # Online forward, Huber loss (beta 1), its gradient at the taken actions.
        act_off = off
        off = _forward(P, L, 0, n, obs, S, act_off, False)
        q = _output(S, L, 0, n, B, act_off)
        dq, off = _carve(S, off, B, A)
        dq[:, :] = 0.0
        inv_b = np.float32(1.0) / np.float32(B)
        total = 0.0
        for i in range(B):
            a = actions[i]
            d = q[i, a] - target[i]
            out_td[i] = abs(d)
            g = weights[i] * inv_b
            if d < -1.0:
                total += weights[i] * (-d - np.float32(0.5))
                dq[i, a] = -g
            elif d > 1.0:
                total += weights[i] * (d - np.float32(0.5))
                dq[i, a] = g
            else:
                total += weights[i] * (np.float32(0.5) * d * d)
                dq[i, a] = d * g
        out_loss[0] = np.float32(total / B)
        _backward(P, G, L, 0, n, S, act_off, dq, off, True, False)
        end = L[n - 1, 1] + A
        if clip:
            _clip(G, 0, end, hp[1])
        _adam(P, G, M, V, steps, 0, steps.size, 0, end, hp[2], hp[3], hp[4], hp[5])

    @njit(**_JIT)
    def ddpg_step(obs, actions, rewards, next_obs, dones, weights, P, T, G, M, V, steps, L, S,
                  hp, n_actor, clip, soft_update, out_td, out_loss):
        """One DDPG gradient step in place: critic, then actor (on the updated critic), then soft
        target updates when ``soft_update``. Rows [0, n_actor) of L are the actor, the rest the critic;
        parameters: actor first. ``hp`` = (gamma, max_norm, critic lr, b1, b2, eps, actor lr, b1, b2,
        eps, tau). Step counters follow the parameter tensors (2 per layer), actor first."""
        B = obs.shape[0]
        na, nc = n_actor, L.shape[0] - n_actor
        n_obs, n_act = obs.shape[1], actions.shape[1]
        a_end = L[n_actor - 1, 1] + L[n_actor - 1, 3]          # actor params are P[0:a_end]
        c_end = L[L.shape[0] - 1, 1] + 1                       # critic params are P[a_end:c_end]
        gamma = np.float32(hp[0])
        x, off = _carve(S, 0, B, n_obs + n_act)
        # --- critic loss: target r + gamma (1 - done) Q_t(s', pi_t(s')), MSE
        t_act = off
        off = _forward(T, L, 0, na, next_obs, S, t_act, True)
        x[:, :n_obs] = next_obs
        x[:, n_obs:] = _output(S, L, 0, na, B, t_act)
        t_crit = off
        off = _forward(T, L, na, nc, x, S, t_crit, False)
        next_v = _output(S, L, na, nc, B, t_crit)
        target = np.empty(B, np.float32)
        for i in range(B):
            target[i] = rewards[i] + gamma * (np.float32(1.0) - dones[i]) * next_v[i, 0]
        x[:, :n_obs] = obs
        x[:, n_obs:] = actions
        c_act = off
        off = _forward(P, L, na, nc, x, S, c_act, False)
        q = _output(S, L, na, nc, B, c_act)
        dq, off = _carve(S, off, B, 1)
        inv_b = np.float32(1.0) / np.float32(B)
        total = 0.0
        for i in range(B):
            d = q[i, 0] - target[i]
            out_td[i] = d
            total += weights[i] * (d * d)
            dq[i, 0] = np.float32(2.0) * d * (weights[i] * inv_b)
        out_loss[0] = np.float32(total / B)
        _backward(P, G, L, na, nc, S, c_act, dq, off, True, False)
        if clip:
            _clip(G, a_end, c_end, hp[1])
        _adam(P, G, M, V, steps, 2 * na, steps.size, a_end, c_end, hp[2], hp[3], hp[4], hp[5])
        # --- actor loss: -mean Q(s, pi(s)) on the updated critic; only the actor is stepped
        p_act = off
        off = _forward(P, L, 0, na, obs, S, p_act, True)
        pi = _output(S, L, 0, na, B, p_act)
        x[:, n_obs:] = pi
        c2 = off
        off = _forward(P, L, na, nc, x, S, c2, False)
        qpi = _output(S, L, na, nc, B, c2)
        total = 0.0
        dq2, off = _carve(S, off, B, 1)
        for i in range(B):
            total += qpi[i, 0]
            dq2[i, 0] = -inv_b
        out_loss[1] = -np.float32(total / B)
        dx, off = _backward(P, G, L, na, nc, S, c2, dq2, off, False, True)
        dpi, off = _carve(S, off, B, n_act)
        for i in range(B):
            for j in range(n_act):
                y = pi[i, j]
                dpi[i, j] = dx[i, n_obs + j] * (np.float32(1.0) - y * y)
        _backward(P, G, L, 0, na, S, p_act, dpi, off, True, False)
        if clip:
            _clip(G, 0, a_end, hp[1])
        _adam(P, G, M, V, steps, 0, 2 * na, 0, a_end, hp[6], hp[7], hp[8], hp[9])
        if soft_update:
            _lerp(T, P, 0, c_end, hp[10])


# --------------------------------------------------------------------------------------------
# What the kernel supports, and the Python side: flat shared buffers, the per-call wrapper.
# --------------------------------------------------------------------------------------------
def _mlp_layers(net: nn.Module, out_tanh: bool) -> list[nn.Linear] | str:
    """The Linear layers of ``Linear, ReLU, ..., Linear[, Tanh]``, or why ``net`` is not such an MLP."""
    if type(net) is not nn.Sequential:
        return f"{type(net).__name__} is not an nn.Sequential MLP"
    mods = list(net)
    if out_tanh:
        if not mods or type(mods[-1]) is not nn.Tanh:
            return "the actor does not end in nn.Tanh"
        mods = mods[:-1]
    linears = mods[0::2]
    if not mods or len(mods) % 2 == 0 or any(type(m) is not nn.Linear or m.bias is None for m in linears) \
            or any(type(m) is not nn.ReLU for m in mods[1::2]):
        return "only Linear(bias)/ReLU alternations (pearl_py's mlp) are supported"
    for a, b in zip(linears, linears[1:]):
        if a.out_features != b.in_features:
            return "inconsistent layer widths"
    for p in net.parameters():
        if p.dtype != torch.float32 or p.device.type != "cpu" or not p.is_contiguous():
            return "parameters must be contiguous float32 on the CPU"
    if list(net.buffers()):
        return "networks with buffers are not supported"
    return linears


def supports(learner: Learner) -> tuple[bool, str]:
    """Whether the fused update can run ``learner``'s algorithm, and why not."""
    from pearl_py.algorithms.ddpg import DDPG
    from pearl_py.algorithms.dqn import DQN
    from pearl_py.algorithms.networks import StateActionValue

    ok, why = numba_available()
    if not ok:
        return ok, why
    algo = learner.algorithm
    if type(algo) not in (DQN, DDPG):
        return False, (f"the fused learner update implements DQN and DDPG only, not "
                       f"{type(algo).__name__} (use the reference or compiled variant)")
    if learner.device.type != "cpu":
        return False, "the fused learner update runs on the CPU"
    expected = {DQN: [("q", "q", DQN._q_loss)],
                DDPG: [("critic", "critic", DDPG._critic_loss), ("actor", "actor", DDPG._actor_loss)]}[type(algo)]
    got = [(loss.name, loss.trains, getattr(loss.fn, "__func__", None)) for loss in learner.losses]
    if got != expected or any(loss.every != 1 for loss in learner.losses):
        return False, f"{algo.name}'s losses were changed ({[g[:2] for g in got]})"
    for loss in learner.losses:
        try:
            AdamHyper.of(learner.optimizers[loss.name])
        except ValueError as exc:
            return False, str(exc)
        params = list(learner.optimizers[loss.name].param_groups[0]["params"])
        if params != list(learner.nets.online[loss.trains].parameters()):
            return False, f"optimizer {loss.name!r} does not hold exactly network {loss.trains!r}'s parameters"
    nets = learner.nets.online
    if type(algo) is DQN:
        layers = _mlp_layers(nets["q"], out_tanh=False)
        if isinstance(layers, str):
            return False, f"q network: {layers}"
        if set(nets) != {"q"} or set(learner.nets.target) != {"q"}:
            return False, "DQN must have exactly the networks q and its target"
        return True, ""
    actor, critic = nets["actor"], nets["critic"]
    if set(nets) != {"actor", "critic"} or set(learner.nets.target) != {"actor", "critic"}:
        return False, "DDPG must have exactly actor, critic and their targets"
    if type(critic) is not StateActionValue:
        return False, "the critic is not a StateActionValue"
    for name, net, tanh in (("actor", actor, True), ("critic", critic.net, False)):
        layers = _mlp_layers(net, tanh)
        if isinstance(layers, str):
            return False, f"{name}: {layers}"
    spec = algo.spec
    if actor[0].in_features != spec.obs_dim or critic.net[0].in_features != spec.obs_dim + spec.action_dim \
            or critic.net[-1].out_features != 1 or list(actor)[-2].out_features != spec.action_dim:
        return False, "network input/output sizes do not match the env"
    return True, ""


def set_blas_threads(n: int) -> bool:
    """Set the thread count of the BLAS numba calls (scipy's OpenBLAS) to ``n``; False if not found.

    Measured here: with its default (one thread per core) on the shared 2-core machine, a
    64x256x256 GEMM took 8 ms instead of 0.1 ms (its threads spin against the other process).
    """
    import ctypes
    import glob

    import scipy
    import scipy.linalg.cython_blas  # noqa: F401  loads the library

    libs = os.path.join(os.path.dirname(os.path.dirname(scipy.__file__)), "scipy.libs")
    for path in sorted(glob.glob(os.path.join(libs, "*openblas*"))):
        lib = ctypes.CDLL(path)
        for symbol in ("scipy_openblas_set_num_threads", "openblas_set_num_threads"):
            fn = getattr(lib, symbol, None)
            if fn is not None:
                fn(int(n))
                return True
    return False


class FusedCpuUpdate:
    """A learner update that runs :func:`dqn_step` / :func:`ddpg_step` over the learner's memory."""

    SCRATCH_FACTOR = 8
    """Scratch holds every forward's activations and the backward's gradients: ~8 x B x sum(widths)."""

    def __init__(self, learner: Learner) -> None:
        ok, why = supports(learner)
        if not ok:
            raise KernelUnavailable(f"learner_update variant 'fused' (cpu): {why}")
        from pearl_py.algorithms.ddpg import DDPG

        set_blas_threads(torch.get_num_threads())
        self.learner = learner
        algo = learner.algorithm
        self.is_ddpg = type(algo) is DDPG
        # Network order in the flat buffers: DDPG actor then critic (the kernel's layout).
        self.order = ["actor", "critic"] if self.is_ddpg else ["q"]
        self.modules = {name: (learner.nets.online[name].net if name == "critic" else learner.nets.online[name])
                        for name in self.order}
        self.first_call_seconds: dict[tuple[str, ...], float] = {}
        self._adopt()
        cfg = algo.config
        self.clip = cfg.max_grad_norm is not None
        max_norm = cfg.max_grad_norm if self.clip else 0.0
        adam = {loss.name: AdamHyper.of(learner.optimizers[loss.name]) for loss in learner.losses}
        if self.is_ddpg:
            c, a = adam["critic"], adam["actor"]
            self.hp = np.array([cfg.gamma, max_norm, c.lr, c.beta1, c.beta2, c.eps,
                                a.lr, a.beta1, a.beta2, a.eps, cfg.tau], np.float64)
        else:
            q = adam["q"]
            self.hp = np.array([cfg.gamma, max_norm, q.lr, q.beta1, q.beta2, q.eps], np.float64)
        widths = sum(int(r[2]) + int(r[3]) for r in self.L)
        self._scratch: dict[int, np.ndarray] = {}
        self._scratch_per_row = self.SCRATCH_FACTOR * widths + 16

    # -- shared flat buffers ---------------------------------------------------------------
    def _adopt(self) -> None:
        """Move parameters, targets and Adam state into flat buffers; the torch tensors become views."""
        learner = self.learner
        params, targets, states = [], [], []
        for name in self.order:
            online = list(learner.nets.online[name].parameters())
            params += online
            targets += list(learner.nets.target[name].parameters())
            opt = learner.optimizers[name]   # DQN's loss "q" trains "q", DDPG's "actor"/"critic" theirs
            states += [opt.state[p] for p in online]
        sizes = [p.numel() for p in params]
        total = sum(sizes)
        P, T, M, V = (torch.empty(total) for _ in range(4))
        steps = torch.zeros(len(params))
        offsets = np.cumsum([0] + sizes)
        views = []
        for i, (p, t, state) in enumerate(zip(params, targets, states)):
            a, b = int(offsets[i]), int(offsets[i + 1])
            for flat, tensor in ((P, p), (T, t)):
                flat[a:b].copy_(tensor.detach().reshape(-1))
                tensor.data = flat[a:b].view(tensor.shape)
            if state:
                M[a:b].copy_(state["exp_avg"].reshape(-1))
                V[a:b].copy_(state["exp_avg_sq"].reshape(-1))
                steps[i] = float(state["step"])
            else:
                M[a:b].zero_()
                V[a:b].zero_()
            state["exp_avg"] = M[a:b].view(p.shape)
            state["exp_avg_sq"] = V[a:b].view(p.shape)
            state["step"] = steps[i]          # a 0-dim view of the counters
            views.append(state)
        self.P, self.T, self.G = P.numpy(), T.numpy(), np.zeros(total, np.float32)
        self.M, self.V, self.steps = M.numpy(), V.numpy(), steps.numpy()
        self._torch_flat = (P, T, M, V, steps)
        self._watch = [(learner.optimizers[loss.name], learner.nets.online[loss.trains], loss.name)
                       for loss in learner.losses]
        self._expected = {name: opt.state[next(iter(net.parameters()))]["exp_avg"] for opt, net, name in self._watch}
        rows, index = [], 0
        for name in self.order:
            for m in self.modules[name]:
                if type(m) is nn.Linear:
                    rows.append((int(offsets[index]), int(offsets[index + 1]), m.in_features, m.out_features))
                    index += 2
        self.L = np.array(rows, np.int64)
        self.n_actor = sum(1 for m in self.modules["actor"] if type(m) is nn.Linear) if self.is_ddpg else 0
        self._params = params

    def _check_shared(self) -> None:
        """Re-adopt if ``Optimizer.load_state_dict`` (or anything else) replaced the shared tensors."""
        for opt, net, name in self._watch:
            p0 = next(iter(net.parameters()))
            state = opt.state.get(p0)
            if state is None or state.get("exp_avg") is not self._expected[name]:
                self._adopt()
                return
        if self._params[0].data_ptr() != self._torch_flat[0].data_ptr():
            self._adopt()

    # -- one update ------------------------------------------------------------------------
    def _scratch_for(self, batch_size: int) -> np.ndarray:
        s = self._scratch.get(batch_size)
        if s is None:
            s = self._scratch[batch_size] = np.empty(batch_size * self._scratch_per_row, np.float32)
        return s

    def __call__(self, batch: TensorBatch) -> UpdateResult:
        learner = self.learner
        self._check_shared()
        step_number = learner.gradient_steps + 1
        obs = _f32(batch.obs)
        B = obs.shape[0]
        S = self._scratch_for(B)
        td = np.empty(B, np.float32)
        loss = np.empty(2, np.float32)
        first = not self.first_call_seconds
        start = time.perf_counter()
        if self.is_ddpg:
            cfg = learner.algorithm.config
            soft = cfg.target_update_interval >= 1 and step_number % cfg.target_update_interval == 0
            ddpg_step(obs, _f32(batch.actions).reshape(B, -1), _f32(batch.rewards), _f32(batch.next_obs),
                      _f32(batch.dones), _f32(batch.weights), self.P, self.T, self.G, self.M, self.V,
                      self.steps, self.L, S, self.hp, self.n_actor, self.clip, soft, td, loss)
            t = torch.from_numpy(loss)
            losses = {"critic": t[0], "actor": t[1]}
            td_abs = torch.from_numpy(np.abs(td, out=td))
        else:
            actions = batch.actions.numpy()
            if actions.dtype != np.int64:
                actions = actions.astype(np.int64)
            dqn_step(obs, actions, _f32(batch.rewards), _f32(batch.next_obs), _f32(batch.dones),
                     _f32(batch.weights), self.P, self.T, self.G, self.M, self.V, self.steps, self.L, S,
                     self.hp, bool(learner.algorithm.config.double_q), self.clip, td, loss)
            losses = {"q": torch.from_numpy(loss)[0]}
            td_abs = torch.from_numpy(td)
        if first:
            self.first_call_seconds[tuple(losses)] = time.perf_counter() - start
        learner.gradient_steps = step_number
        if not self.is_ddpg:   # DQN's target copies are counted in env steps (after_env_step): a no-op here
            learner.algorithm.after_gradient_step(learner.nets, step_number)
        return UpdateResult(losses, td_abs)


def _f32(t: torch.Tensor) -> np.ndarray:
    a = t.detach().numpy()
    return a if a.dtype == np.float32 and a.flags.c_contiguous else np.ascontiguousarray(a, dtype=np.float32)


def make_fused_cpu(learner: Learner) -> FusedCpuUpdate:
    """The ``fused`` CPU learner update of ``learner`` (raises :class:`KernelUnavailable` with the reason
    when its algorithm or networks are not DQN's/DDPG's)."""
    return FusedCpuUpdate(learner)
