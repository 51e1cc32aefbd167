"""The ``fused`` CPU learner update of the on-policy family: one minibatch step of PPO or A2C in one numba call.

One ``@njit(nogil=True)`` call per minibatch runs what :meth:`OnPolicyLearner.step` runs: advantage
normalization (``normalize_advantage``: mean 0, unbiased std 1, + 1e-8), the policy MLP (logits of a
categorical policy or the mean of a diagonal Gaussian with a free ``log_std``) and the value MLP
forward (tanh or ReLU hidden layers, ``pearl_py.kernels.mlp_numba.forward_hidden``), the
log-probabilities of the taken actions and the entropy, the loss (PPO's clipped surrogate, form
``ppo_clip``, with the optional value clip; A2C's ``-A log pi``, form ``a2c_pg``), the value MSE, the
approximate KL ``E[(r - 1) - log r]`` and the early stop before the step when it passes 1.5 x
``target_kl``, the analytic gradients of ``policy_loss + vf_coef * value_loss - ent_coef * entropy``
(``torch.min``'s and ``clamp``'s subgradients as torch takes them: a tie splits the gradient, a clamp
passes it at its bounds), the backward passes through both MLPs, the clip of the global gradient norm to
``max_grad_norm`` (folded into the optimizer as a factor) and the optimizer step: Adam (PPO, A2C with
``use_rms_prop: false``) or RMSprop (A2C's, ``alpha`` 0.99, no momentum, not centered).

Memory is the learner's: on build every trained parameter and its optimizer state (Adam's
``exp_avg``/``exp_avg_sq``, RMSprop's ``square_avg``; the ``step`` counters) move into flat float32
buffers and the torch tensors become views of them, so ``param_sync``, checkpoints
(``OnPolicyLearner.state_dict``), the inference kernels and the reference step keep reading and writing
the same memory; ``Optimizer.load_state_dict`` replaces the state tensors and the update adopts them again.

Results equal the reference step's up to float rounding (tests/kernels/test_fused_on_policy.py): the sums
run in another order, and Adam stores first and second moments below float32's smallest normal number as
0 (``mlp_numba.adam``).

Example::

    >>> learner = OnPolicyLearner(pearl.PPO("CartPole-v1", n_steps=32, n_envs=8, batch_size=256))
    >>> learner.update = make_fused_update(learner)      # what the executors do for the plan's "fused" variant
    >>> stats = learner.learn(rollout, progress_remaining=1.0)
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from pearl_py.algorithms.optimizers import Adam, RMSprop
from pearl_py.kernels.fused_cpu import Scratch, aligned_zeros
from pearl_py.kernels.numba_blas import JIT, numba, numba_available, set_blas_threads
from pearl_py.kernels.on_policy_inference import (
    ACTOR_CRITIC,
    acting_problem,
    hidden_code,
)
from pearl_py.kernels.registry import KernelUnavailable
from pearl_py.kernels.workspace import AdamHyper

PPO_CLIP, A2C_PG = "ppo_clip", "a2c_pg"
FORMS = ((PPO_CLIP, ACTOR_CRITIC), (A2C_PG, ACTOR_CRITIC))
"""The learner workloads' forms this kernel implements (loss form, acting form)."""
_OUT = ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction", "stopped")

if numba is not None:
    from numba import njit

    from pearl_py.kernels.mlp_numba import (
        adam,
        backward_hidden,
        carve,
        clip_coef,
        forward_hidden,
        output,
        rmsprop,
    )

    @njit(**JIT)
    def _normalized(adv_in, normalize):
        """The minibatch's advantages, shifted and scaled to mean 0 and unbiased std 1 (+ 1e-8) if ``normalize``."""
        B = adv_in.size
        adv = np.empty(B, np.float32)
        adv[:] = adv_in
        if normalize and B > 1:
            mean = 0.0
            for i in range(B):
                mean += adv[i]
            mean /= B
            var = 0.0
            for i in range(B):
                var += (adv[i] - mean) ** 2
            scale = np.float32(1.0) / (np.float32(math.sqrt(var / (B - 1))) + np.float32(1e-8))
            m32 = np.float32(mean)
            for i in range(B):
                adv[i] = (adv[i] - m32) * scale
        return adv

    @njit(**JIT)
    def _categorical(head, actions, lp, ent, dhead):
        """Log-probabilities and entropies per row of ``head`` (logits); leaves the probabilities in ``dhead``."""
        B, A = head.shape
        for i in range(B):
            row = head[i]
            top = row[0]
            for k in range(1, A):
                top = max(top, row[k])
            total = np.float32(0.0)
            for k in range(A):
                total += np.exp(row[k] - top)
            lse = top + np.log(total)
            h = np.float32(0.0)
            for k in range(A):
                lpk = row[k] - lse
                p = np.exp(lpk)
                dhead[i, k] = p
                if p > 0:
                    h -= p * lpk
            lp[i] = row[actions[i]] - lse
            ent[i] = h

    @njit(**JIT)
    def _gaussian(head, actions, log_std, lp, ent, dhead):
        """Log-probabilities and entropies per row of ``head`` (means); leaves ``z = (a - mean) / std`` in ``dhead``."""
        B, A = head.shape
        half_log_2pi = np.float32(0.5 * math.log(2.0 * math.pi))
        h = np.float32(0.0)
        for j in range(A):
            h += np.float32(0.5) + half_log_2pi + log_std[j]
        for i in range(B):
            total = np.float32(0.0)
            for j in range(A):
                z = (actions[i, j] - head[i, j]) * np.exp(-log_std[j])
                dhead[i, j] = z
                total += np.float32(-0.5) * z * z - log_std[j] - half_log_2pi
            lp[i] = total
            ent[i] = h

    @njit(**JIT)
    def ac_step(obs, actions_i, actions_f, old_v, old_lp, adv_in, ret, P, G, M, V, steps, L, n_pi, ls_off, S, hp,
                flags, out):
        """One minibatch step in place (see the module docstring); figures into ``out`` (``_OUT``).

        ``hp`` = (clip, clip_vf (< 0: none), ent_coef, vf_coef, max_grad_norm, lr, beta1 or alpha, beta2, eps,
        target_kl (<= 0: none)); ``flags`` = (discrete, ppo, normalize, hidden activation, rmsprop). Rows
        [0, n_pi) of the layer table ``L`` are the policy MLP, the rest the value MLP; ``log_std`` sits at
        ``ls_off`` (Gaussian). Parameters P[0:end] with ``end`` the last layer's bias end; ``M`` holds Adam's
        first moments or RMSprop's square averages, ``V`` Adam's second moments."""
        B = obs.shape[0]
        discrete, ppo, normalize, hidden, use_rms = flags[0], flags[1], flags[2], flags[3], flags[4]
        n_vf = L.shape[0] - n_pi
        A = L[n_pi - 1, 3]
        clip, clip_vf = np.float32(hp[0]), np.float32(hp[1])
        ent_coef, vf_coef = np.float32(hp[2]), np.float32(hp[3])
        adv = _normalized(adv_in, normalize)
        pi_off = 0
        off = forward_hidden(P, L, 0, n_pi, obs, S, pi_off, False, hidden)
        head = output(S, L, 0, n_pi, B, pi_off)
        vf_off = off
        off = forward_hidden(P, L, n_pi, n_vf, obs, S, vf_off, False, hidden)
        v = output(S, L, n_pi, n_vf, B, vf_off)
        dhead, off = carve(S, off, B, A)
        dv, off = carve(S, off, B, 1)
        lp = np.empty(B, np.float32)
        ent = np.empty(B, np.float32)
        log_std = P[ls_off:ls_off + A] if not discrete else P[0:0]
        if discrete:
            _categorical(head, actions_i, lp, ent, dhead)
        else:
            _gaussian(head, actions_f, log_std, lp, ent, dhead)
        inv_b = np.float32(1.0) / np.float32(B)
        lo, hi = np.float32(1.0) - clip, np.float32(1.0) + clip
        surrogate = 0.0
        kl = 0.0
        clipped = 0
        entropy = 0.0
        g_lp = np.empty(B, np.float32)      # d policy_loss / d log-probability, per row
        for i in range(B):
            log_ratio = lp[i] - old_lp[i]
            kl += np.expm1(log_ratio) - log_ratio
            entropy += ent[i]
            a = adv[i]
            if ppo:
                r = np.exp(log_ratio)
                rc = min(max(r, lo), hi)
                s1, s2 = a * r, a * rc
                surrogate += min(s1, s2)
                if abs(r - np.float32(1.0)) > clip:
                    clipped += 1
                inside = np.float32(1.0) if lo <= r <= hi else np.float32(0.0)
                if s1 < s2:
                    dr = a
                elif s2 < s1:
                    dr = a * inside
                else:                                # torch.min splits the gradient of a tie
                    dr = np.float32(0.5) * a + np.float32(0.5) * a * inside
                g_lp[i] = -inv_b * dr * r
            else:
                surrogate += a * lp[i]
                g_lp[i] = -inv_b * a
        out[0] = np.float32(-surrogate / B)
        out[2] = np.float32(entropy / B)
        out[3] = np.float32(kl / B)
        out[4] = np.float32(clipped / B) if ppo else np.float32(0.0)
        value_loss = 0.0
        for i in range(B):
            vi = v[i, 0]
            passes = np.float32(1.0)
            if clip_vf >= 0:
                diff = vi - old_v[i]
                vi = old_v[i] + min(max(diff, -clip_vf), clip_vf)
                if not -clip_vf <= diff <= clip_vf:
                    passes = np.float32(0.0)
            e = vi - ret[i]
            value_loss += e * e
            dv[i, 0] = vf_coef * np.float32(2.0) * e * inv_b * passes
        out[1] = np.float32(value_loss / B)
        out[5] = 0.0
        if hp[9] > 0 and out[3] > 1.5 * hp[9]:
            out[5] = 1.0
            return
        ent_scale = ent_coef * inv_b
        if discrete:
            for i in range(B):
                h = ent[i]
                for k in range(A):
                    p = dhead[i, k]
                    lpk = np.log(p) if p > 0 else np.float32(0.0)
                    g = -g_lp[i] * p + ent_scale * p * (lpk + h)
                    if k == actions_i[i]:
                        g += g_lp[i]
                    dhead[i, k] = g
        else:
            for j in range(A):
                G[ls_off + j] = -ent_coef
            for i in range(B):
                for j in range(A):
                    z = dhead[i, j]
                    G[ls_off + j] += g_lp[i] * (z * z - np.float32(1.0))
                    dhead[i, j] = g_lp[i] * z * np.exp(-log_std[j])
        backward_hidden(P, G, L, 0, n_pi, S, pi_off, B, dhead, off, True, False, hidden)
        backward_hidden(P, G, L, n_pi, n_vf, S, vf_off, B, dv, off, True, False, hidden)
        end = L[L.shape[0] - 1, 1] + L[L.shape[0] - 1, 3]
        coef = clip_coef(G, 0, end, hp[4])
        if use_rms:
            rmsprop(P, G, M, steps, 0, steps.size, 0, end, coef, hp[5], hp[6], hp[8])
        else:
            adam(P, G, M, V, steps, 0, steps.size, 0, end, coef, hp[5], hp[6], hp[7], hp[8])


def _rmsprop_hyper(optimizer: torch.optim.Optimizer) -> tuple[float, float, float]:
    """``(lr, alpha, eps)`` of a plain RMSprop (one group; no momentum, centering, weight decay or maximize)."""
    if type(optimizer) is not RMSprop or len(optimizer.param_groups) != 1:
        raise ValueError(f"the fused on-policy update needs one plain Adam or RMSprop group, got {optimizer!r}")
    group = optimizer.param_groups[0]
    if group["momentum"] or group["centered"] or group["weight_decay"] or group.get("maximize"):
        raise ValueError("the fused on-policy update supports RMSprop without momentum, centering, weight_decay "
                         "or maximize")
    return float(group["lr"]), float(group["alpha"]), float(group["eps"])


def supports(learner) -> tuple[bool, str]:
    """Whether the fused update can run ``learner`` (an :class:`OnPolicyLearner`), and why not."""
    ok, why = numba_available()
    if not ok:
        return ok, why
    algo = learner.algorithm
    forms = (algo.declared_loss_form(), algo.declared_acting_form())
    if forms not in FORMS:
        known = " | ".join("+".join(f) for f in FORMS)
        return False, f"implements the forms {known}; {algo.name} declares {'+'.join(forms)}"
    why = acting_problem(algo, learner.nets)
    if why is not None:
        return False, why
    if learner.device.type != "cpu":
        return False, "the fused learner update runs on the CPU"
    try:
        if type(learner.optimizer) is Adam:
            AdamHyper.of(learner.optimizer)
        else:
            _rmsprop_hyper(learner.optimizer)
    except ValueError as exc:
        return False, str(exc)
    if list(learner.optimizer.param_groups[0]["params"]) != list(learner.parameters):
        return False, "its optimizer does not hold exactly the learner's parameters"
    return True, ""


class FusedOnPolicyUpdate:
    """A :data:`~pearl_py.algorithms.on_policy.learner.MinibatchUpdate` running :func:`ac_step` over the learner's
    memory."""

    SCRATCH_FACTOR = 8
    """Scratch holds both forwards' activations and the backward's gradients: ~8 x B x sum(widths)."""

    def __init__(self, learner) -> None:
        ok, why = supports(learner)
        if not ok:
            raise KernelUnavailable(f"learner_update variant 'fused' (cpu, on-policy): {why}")
        set_blas_threads(torch.get_num_threads())
        self.learner = learner
        algo = learner.algorithm
        self.policy = learner.nets.online["policy"]
        self.rmsprop = type(learner.optimizer) is RMSprop
        self.discrete = algo.spec.discrete
        self.flags = np.array([self.discrete, algo.declared_loss_form() == PPO_CLIP, algo.config.normalize_advantage,
                               hidden_code(self.policy.pi), self.rmsprop], np.int64)
        self._dummy_i = np.zeros(0, np.int64)
        self._dummy_f = np.zeros((0, algo.spec.action_dim), np.float32)
        self._adopt()
        widths = sum(int(r[2]) + int(r[3]) for r in self.L)
        linears = [m for net in (self.policy.pi, self.policy.vf) for m in net if type(m) is nn.Linear]
        self._scratch = Scratch(self.SCRATCH_FACTOR * widths + 16, linears)

    # -- shared flat buffers ---------------------------------------------------------------
    def _adopt(self) -> None:
        """Move parameters and optimizer state into flat buffers; the torch tensors become views."""
        learner, opt = self.learner, self.learner.optimizer
        params = list(learner.parameters)
        offsets, total = [], 0
        for p in params:
            total = -(-total // 16) * 16            # every tensor starts on a 64-byte boundary
            offsets.append(total)
            total += p.numel()
        P, M, V = (torch.zeros(total) for _ in range(3))
        steps = torch.zeros(len(params))
        first, second = ("square_avg", None) if self.rmsprop else ("exp_avg", "exp_avg_sq")
        for i, p in enumerate(params):
            a, b = offsets[i], offsets[i] + p.numel()
            P[a:b].copy_(p.detach().reshape(-1))
            p.data = P[a:b].view(p.shape)
            state = opt.state[p]
            if state:
                M[a:b].copy_(state[first].reshape(-1))
                if second is not None:
                    V[a:b].copy_(state[second].reshape(-1))
                steps[i] = float(state["step"])
            state[first] = M[a:b].view(p.shape)
            if second is not None:
                state[second] = V[a:b].view(p.shape)
            state["step"] = steps[i]               # a 0-dim view of the counters
        self.P, self.M, self.V, self.steps = P.numpy(), M.numpy(), V.numpy(), steps.numpy()
        self.G = aligned_zeros(total)
        self._torch_flat = (P, M, V, steps)
        self._watch = (params[0], opt.state[params[0]][first])
        self._flat_ptr = params[0].data_ptr()
        offset_of = {id(p): offsets[i] for i, p in enumerate(params)}
        rows = []
        for net in (self.policy.pi, self.policy.vf):
            for m in net:
                if type(m) is nn.Linear:
                    rows.append((offset_of[id(m.weight)], offset_of[id(m.bias)], m.in_features, m.out_features))
        self.L = np.array(rows, np.int64)
        self.n_pi = sum(type(m) is nn.Linear for m in self.policy.pi)
        self.ls_off = -1 if self.discrete else offset_of[id(self.policy.log_std)]

    def _check_shared(self) -> None:
        """Adopt again when ``Optimizer.load_state_dict`` (or anything else) replaced the shared tensors."""
        p0, first = self._watch
        state = self.learner.optimizer.state.get(p0)
        key = "square_avg" if self.rmsprop else "exp_avg"
        if state is None or state.get(key) is not first or p0.data_ptr() != self._flat_ptr:
            self._adopt()

    def _hyperparameters(self, progress_remaining: float) -> np.ndarray:
        learner = self.learner
        cfg = learner.algorithm.config
        group = learner.optimizer.param_groups[0]
        clip = getattr(cfg, "clip_range", None)
        clip_vf = getattr(cfg, "clip_range_vf", None)
        target_kl = getattr(cfg, "target_kl", None)
        if self.rmsprop:
            rates = [float(group["lr"]), float(group["alpha"]), 0.0, float(group["eps"])]
        else:
            beta1, beta2 = group["betas"]
            rates = [float(group["lr"]), float(beta1), float(beta2), float(group["eps"])]
        return np.array([clip(progress_remaining) if clip is not None else 0.0,
                         clip_vf(progress_remaining) if clip_vf is not None else -1.0,
                         cfg.ent_coef, cfg.vf_coef, cfg.max_grad_norm, *rates,
                         target_kl if target_kl is not None else 0.0], np.float64)

    # -- one minibatch ---------------------------------------------------------------------
    def __call__(self, sample, progress_remaining: float):
        from pearl_py.algorithms.on_policy.base import LossTerms
        from pearl_py.algorithms.on_policy.learner import StepResult

        self._check_shared()
        obs = np.ascontiguousarray(sample.obs, dtype=np.float32)
        rows = obs.shape[0]
        if self.discrete:
            actions_i, actions_f = np.ascontiguousarray(sample.actions, dtype=np.int64), self._dummy_f
        else:
            actions_i, actions_f = self._dummy_i, np.ascontiguousarray(sample.actions, dtype=np.float32)
        out = np.zeros(len(_OUT), np.float32)

        def f32(a: np.ndarray) -> np.ndarray:
            return np.ascontiguousarray(a, dtype=np.float32)

        ac_step(obs, actions_i, actions_f, f32(sample.old_values), f32(sample.old_log_probs), f32(sample.advantages),
                f32(sample.returns), self.P, self.G, self.M, self.V, self.steps, self.L, self.n_pi, self.ls_off,
                self._scratch(rows), self._hyperparameters(progress_remaining), self.flags, out)
        stopped = bool(out[5])
        if not stopped:
            self.learner.gradient_steps += 1
        figures = torch.from_numpy(out)
        terms = LossTerms(policy_loss=figures[0], value_loss=figures[1], entropy=figures[2],
                          log_probs=torch.empty(0), clip_fraction=figures[4] if self.flags[1] else None)
        return StepResult(terms, figures[3], stopped=stopped)


def make_fused_update(learner) -> FusedOnPolicyUpdate:
    """The ``fused`` CPU learner update of an :class:`OnPolicyLearner` (raises :class:`KernelUnavailable` with
    the reason when its algorithm or networks are not ones it implements)."""
    return FusedOnPolicyUpdate(learner)
