"""The ``fused`` CPU learner steps of the twin-critic family: TD3 and SAC, each one numba function.

Same machinery as DQN's and DDPG's steps in ``pearl_py.kernels.fused_cpu`` (flat parameter,
target, gradient and Adam buffers shared with the torch modules; one ``sgemm`` per GEMM
through ``pearl_py.kernels.mlp_numba``), with what the family adds:

* twin critics: ``critic`` is two MLPs, q1 then q2, in consecutive layer-table rows and
  one parameter range (one Adam, one clip norm over both, as the reference's optimizer);
  targets take the smaller of the two target critics;
* TD3: target policy smoothing (``clip(pi_t(s') + clip(sigma eps, -c, c), -1, 1)``), the
  actor through the first critic only, run when ``actor_due`` (``Loss.every``); the soft
  target update (actor and critics) when ``soft_update``;
* SAC: the squashed Gaussian (``a = tanh(mean + exp(clamp(log_std, -20, 2)) eps)``, log-prob
  with the correction ``- sum log(1 - a^2 + 1e-6)``), reparameterized: the actor's gradient
  flows through the sampled action into both critics (the smaller one per row, ties split
  as ``torch.minimum``) and through the log-prob; the entropy coefficient ``log(alpha)``
  with its own Adam step; soft updates of the target critics only.

The N(0, 1) draws (``eps``) come from the caller, drawn from torch's generator in the
order the reference losses draw them, so the fused step equals ``Learner.update``.

Network rows ``R`` (one per network, the recipe's order): ``(param start, param end,
step-counter start, step-counter end, first layer row, layer rows)``; TD3: actor, critic;
SAC: actor, critic[, ent_coef].

Example (the Python side, ``FusedCpuUpdate``, calls)::

    td3_step(B, n_act, fields, P, T, G, M, V, steps, L, S, R, hp, eps, clip, actor_due, soft, td, losses)
"""
from __future__ import annotations

import math

import numpy as np

from pearl_py.kernels.numba_blas import JIT, numba

HALF_LOG_2PI = np.float32(0.5 * math.log(2.0 * math.pi))
SQUASH_EPS = np.float32(1e-6)
LOG_STD_MIN, LOG_STD_MAX = np.float32(-20.0), np.float32(2.0)

if numba is not None:
    from numba import carray, njit

    from pearl_py.kernels.batch_view import batch_arrays, f32_at
    from pearl_py.kernels.mlp_numba import (
        adam,
        backward,
        carve,
        clip_coef,
        forward,
        lerp,
        output,
        tanh32,
    )

    @njit(**JIT)
    def _adam_network(P, G, M, V, steps, R, k, clip, max_norm, lr, beta1, beta2, eps):
        """Clip (when ``clip``) and Adam over network ``k``'s parameter range."""
        p0, p1 = R[k, 0], R[k, 1]
        coef = clip_coef(G, p0, p1, max_norm) if clip else np.float32(1.0)
        adam(P, G, M, V, steps, R[k, 2], R[k, 3], p0, p1, coef, lr, beta1, beta2, eps)

    @njit(**JIT)
    def _twin_forward(P, L, first, nq, x, S, off):
        """Both critics (q1: ``nq`` rows from ``first``, q2: the next ``nq``) on ``x``; their activation
        offsets and the end offset."""
        o1 = off
        off = forward(P, L, first, nq, x, S, o1, False)
        o2 = off
        off = forward(P, L, first + nq, nq, x, S, o2, False)
        return o1, o2, off

    @njit(**JIT)
    def _twin_values(S, L, first, nq, rows, o1, o2):
        return output(S, L, first, nq, rows, o1), output(S, L, first + nq, nq, rows, o2)

    @njit(**JIT)
    def _twin_regression(P, G, L, S, R, x, targets, weights, scale, out_td, off):
        """Both online critics on ``x`` regress on ``targets``: weighted mean of ``scale * (e1^2 + e2^2)``
        (TD3: 1, SAC: 0.5); their gradients into G; |TD| = q1 - target into ``out_td``. Returns the loss."""
        B = x.shape[0]
        fc, nq = R[1, 4], R[1, 5] // 2
        o1, o2, off = _twin_forward(P, L, fc, nq, x, S, off)
        q1, q2 = _twin_values(S, L, fc, nq, B, o1, o2)
        d1, off = carve(S, off, B, 1)
        d2, off = carve(S, off, B, 1)
        inv_b = np.float32(1.0) / np.float32(B)
        two_scale = np.float32(2.0) * np.float32(scale)
        total = 0.0
        for i in range(B):
            t = targets[i]
            e1 = q1[i, 0] - t
            e2 = q2[i, 0] - t
            out_td[i] = e1
            total += weights[i] * (np.float32(scale) * (e1 * e1 + e2 * e2))
            g = two_scale * (weights[i] * inv_b)
            d1[i, 0] = g * e1
            d2[i, 0] = g * e2
        backward(P, G, L, fc, nq, S, o1, B, d1, off, True, False)
        backward(P, G, L, fc + nq, nq, S, o2, B, d2, off, True, False)
        return np.float32(total / B)

    @njit(**JIT)
    def td3_step(B, n_act, fields, P, T, G, M, V, steps, L, S, R, hp, eps, clip, actor_due, soft_update, out_td,
                 losses):
        """One TD3 gradient step in place: twin critics, then (``actor_due``) the actor through q1, then
        (``soft_update``) the soft update of every target. ``hp`` = (gamma, max_norm, critic lr, b1, b2, eps,
        actor lr, b1, b2, eps, tau, target_policy_noise, target_noise_clip); ``eps``: (B, n_act) N(0, 1)
        draws of the smoothing noise; losses[0] critic, losses[1] actor."""
        n_obs = L[0, 2]
        obs, rewards, next_obs, dones, weights = batch_arrays(B, n_obs, fields)
        actions = carray(f32_at(fields[1]), (B, n_act))
        fa, na = R[0, 4], R[0, 5]
        fc, nq = R[1, 4], R[1, 5] // 2
        gamma, sigma, noise_clip = np.float32(hp[0]), np.float32(hp[11]), np.float32(hp[12])
        one = np.float32(1.0)
        x, off = carve(S, 0, B, n_obs + n_act)
        targets, off = carve(S, off, 1, B)
        # --- critics: target r + gamma (1 - done) min(Q1_t, Q2_t)(s', clip(pi_t(s') + clip(sigma eps, -c, c)))
        ta = off
        off = forward(T, L, fa, na, next_obs, S, ta, True)
        a_t = output(S, L, fa, na, B, ta)
        x[:, :n_obs] = next_obs
        for i in range(B):
            for j in range(n_act):
                noise = min(max(eps[i, j] * sigma, -noise_clip), noise_clip)
                x[i, n_obs + j] = min(max(a_t[i, j] + noise, -one), one)
        t1, t2, off = _twin_forward(T, L, fc, nq, x, S, off)
        v1, v2 = _twin_values(S, L, fc, nq, B, t1, t2)
        for i in range(B):
            targets[0, i] = rewards[i] + gamma * (one - dones[i]) * min(v1[i, 0], v2[i, 0])
        x[:, :n_obs] = obs
        x[:, n_obs:] = actions
        losses[0] = _twin_regression(P, G, L, S, R, x, targets[0], weights, 1.0, out_td, off)
        _adam_network(P, G, M, V, steps, R, 1, clip, hp[1], hp[2], hp[3], hp[4], hp[5])
        # --- actor: -mean Q1(s, pi(s)) on the updated critic; only the actor is stepped
        if actor_due:
            pa = off
            off = forward(P, L, fa, na, obs, S, pa, True)
            pi = output(S, L, fa, na, B, pa)
            x[:, n_obs:] = pi
            c1 = off
            off = forward(P, L, fc, nq, x, S, c1, False)
            qpi = output(S, L, fc, nq, B, c1)
            dq, off = carve(S, off, B, 1)
            inv_b = one / np.float32(B)
            total = 0.0
            for i in range(B):
                total += qpi[i, 0]
                dq[i, 0] = -inv_b
            losses[1] = -np.float32(total / B)
            dx, off = backward(P, G, L, fc, nq, S, c1, B, dq, off, False, True)
            dpi, off = carve(S, off, B, n_act)
            for i in range(B):
                for j in range(n_act):
                    y = pi[i, j]
                    dpi[i, j] = dx[i, n_obs + j] * (one - y * y)
            backward(P, G, L, fa, na, S, pa, B, dpi, off, True, False)
            _adam_network(P, G, M, V, steps, R, 0, clip, hp[1], hp[6], hp[7], hp[8], hp[9])
        if soft_update:
            lerp(T, P, R[0, 0], R[1, 1], hp[10])

    @njit(**JIT)
    def squashed_sample(out, eps, action, log_prob):
        """From the actor's output rows ``[mean, raw log std]`` (B, 2A) and N(0, 1) draws ``eps`` (B, A):
        ``action = tanh(mean + exp(clamp(log_std, -20, 2)) eps)`` and its log-probability (the Gaussian's,
        ``sum(-eps^2 / 2 - log_std - log(2 pi) / 2)``, minus ``sum log(1 - action^2 + 1e-6)``)."""
        n_act = eps.shape[1]
        one = np.float32(1.0)
        for i in range(eps.shape[0]):
            gauss = np.float32(0.0)
            correction = np.float32(0.0)
            for j in range(n_act):
                log_std = min(max(out[i, n_act + j], LOG_STD_MIN), LOG_STD_MAX)
                e = eps[i, j]
                a = tanh32(out[i, j] + np.exp(log_std) * e)
                action[i, j] = a
                gauss += (np.float32(-0.5) * (e * e) - log_std) - HALF_LOG_2PI
                correction += np.log((one - a * a) + SQUASH_EPS)
            log_prob[i] = gauss - correction

    @njit(**JIT)
    def sac_step(B, n_act, fields, P, T, G, M, V, steps, L, S, R, hp, eps_next, eps_pi, eps_ent, clip, learn_alpha,
                 soft_update, out_td, losses):
        """One SAC gradient step in place: twin critics, actor, then (``learn_alpha``) the entropy coefficient,
        then (``soft_update``) the soft update of the target critics. ``hp`` = (gamma, max_norm, critic lr, b1,
        b2, eps, actor lr, b1, b2, eps, tau, fixed alpha, target entropy, ent_coef lr, b1, b2, eps); ``eps_*``:
        (B, n_act) N(0, 1) draws of the critic target's, the actor's and the entropy loss's actions;
        losses[0] critic, losses[1] actor, losses[2] ent_coef. alpha is the coefficient before this step."""
        n_obs = L[0, 2]
        obs, rewards, next_obs, dones, weights = batch_arrays(B, n_obs, fields)
        actions = carray(f32_at(fields[1]), (B, n_act))
        fa, na = R[0, 4], R[0, 5]
        fc, nq = R[1, 4], R[1, 5] // 2
        one = np.float32(1.0)
        gamma = np.float32(hp[0])
        log_alpha = P[R[2, 0]] if learn_alpha else np.float32(0.0)
        alpha = np.exp(log_alpha) if learn_alpha else np.float32(hp[11])
        x, off = carve(S, 0, B, n_obs + n_act)
        sampled, off = carve(S, off, B, n_act)
        log_prob_rows, off = carve(S, off, 1, B)
        log_prob = log_prob_rows[0]
        targets, off = carve(S, off, 1, B)
        # --- critics: target r + gamma (1 - done) (min(Q1_t, Q2_t)(s', a') - alpha log pi(a'|s')), a' ~ pi(s')
        an = off
        off = forward(P, L, fa, na, next_obs, S, an, False)
        squashed_sample(output(S, L, fa, na, B, an), eps_next, sampled, log_prob)
        x[:, :n_obs] = next_obs
        x[:, n_obs:] = sampled
        t1, t2, off = _twin_forward(T, L, fc, nq, x, S, off)
        v1, v2 = _twin_values(S, L, fc, nq, B, t1, t2)
        for i in range(B):
            targets[0, i] = rewards[i] + gamma * (one - dones[i]) * (min(v1[i, 0], v2[i, 0]) - alpha * log_prob[i])
        x[:, :n_obs] = obs
        x[:, n_obs:] = actions
        losses[0] = _twin_regression(P, G, L, S, R, x, targets[0], weights, 0.5, out_td, off)
        _adam_network(P, G, M, V, steps, R, 1, clip, hp[1], hp[2], hp[3], hp[4], hp[5])
        # --- actor: mean(alpha log pi(a|s) - min(Q1, Q2)(s, a)), a ~ pi(s) reparameterized, updated critics
        pa = off
        off = forward(P, L, fa, na, obs, S, pa, False)
        out = output(S, L, fa, na, B, pa)
        squashed_sample(out, eps_pi, sampled, log_prob)
        x[:, n_obs:] = sampled
        c1, c2, off = _twin_forward(P, L, fc, nq, x, S, off)
        q1, q2 = _twin_values(S, L, fc, nq, B, c1, c2)
        g1, off = carve(S, off, B, 1)
        g2, off = carve(S, off, B, 1)
        inv_b = one / np.float32(B)
        total = 0.0
        for i in range(B):
            a, b = q1[i, 0], q2[i, 0]
            total += alpha * log_prob[i] - min(a, b)
            g1[i, 0] = -inv_b if a < b else (np.float32(0.0) if a > b else -inv_b / np.float32(2.0))
            g2[i, 0] = -inv_b if b < a else (np.float32(0.0) if b > a else -inv_b / np.float32(2.0))
        losses[1] = np.float32(total / B)
        dx1, off = backward(P, G, L, fc, nq, S, c1, B, g1, off, False, True)
        dx2, off = backward(P, G, L, fc + nq, nq, S, c2, B, g2, off, False, True)
        d_out, off = carve(S, off, B, 2 * n_act)
        w_log_prob = alpha * inv_b                       # d loss / d log pi, per row
        for i in range(B):
            for j in range(n_act):
                a = sampled[i, j]
                # through the critics, and through the squashing correction -log(1 - a^2 + 1e-6)
                g_a = dx1[i, n_obs + j] + dx2[i, n_obs + j] + (w_log_prob / ((one - a * a) + SQUASH_EPS)) * (
                    np.float32(2.0) * a)
                g_u = g_a * (one - a * a)                 # tanh
                raw = out[i, n_act + j]
                log_std = min(max(raw, LOG_STD_MIN), LOG_STD_MAX)
                d_out[i, j] = g_u                         # u = mean + std eps
                g_log_std = (g_u * eps_pi[i, j]) * np.exp(log_std) - w_log_prob   # and -log std in log pi
                d_out[i, n_act + j] = g_log_std if LOG_STD_MIN <= raw <= LOG_STD_MAX else np.float32(0.0)
        backward(P, G, L, fa, na, S, pa, B, d_out, off, True, False)
        _adam_network(P, G, M, V, steps, R, 0, clip, hp[1], hp[6], hp[7], hp[8], hp[9])
        # --- entropy coefficient: -mean(log(alpha) (log pi(a|s) + target entropy)), a ~ the updated pi(s)
        if learn_alpha:
            ae = off
            off = forward(P, L, fa, na, obs, S, ae, False)
            squashed_sample(output(S, L, fa, na, B, ae), eps_ent, sampled, log_prob)
            target_entropy = np.float32(hp[12])
            total = 0.0
            loss = 0.0
            for i in range(B):
                h = log_prob[i] + target_entropy
                total += h
                loss += log_alpha * h
            losses[2] = -np.float32(loss / B)
            G[R[2, 0]] = -np.float32(total / B)
            _adam_network(P, G, M, V, steps, R, 2, clip, hp[1], hp[13], hp[14], hp[15], hp[16])
        if soft_update:
            lerp(T, P, R[1, 0], R[1, 1], hp[10])
