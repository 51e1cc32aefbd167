"""The ``fused`` CPU learner update: an algorithm's whole gradient step in one numba function.

One ``@njit(nogil=True)`` call per update runs the target and online forwards, the loss, the backward, the
gradient-norm clip (folded into Adam), Adam (bias corrections in float64, as ``torch.optim.Adam``) and the soft
target update over float32 numpy arrays, one ``sgemm`` per GEMM (``pearl_py.kernels.numba_blas.gemm``; layers in
``pearl_py.kernels.mlp_numba``); TD3's and SAC's N(0, 1) draws come from torch's generator in the reference's order.

Memory is shared with the learner's torch modules: on build, every trained parameter, its target copy and its
Adam ``exp_avg``/``exp_avg_sq``/``step`` move into flat float32 buffers (one per role) and the torch tensors become
views of them, so checkpoints, DQN's hard target copies, ``param_sync`` and the reference ``Learner.update`` keep
reading and writing the same memory. ``Optimizer.load_state_dict`` replaces the state tensors: the update notices
(identity check, one per loss) and adopts them again.

It implements the declared loss forms of :data:`FORMS` (the recipes of ``pearl_py.kernels.fused_support``: DQN,
DDPG, TD3 and SAC on pearl_py's MLPs, the last two in ``pearl_py.kernels.fused_twin``), for any algorithm that
declares them, never chosen by class; :func:`supports` says why a learner is refused. docs/kernels.md, "CPU
``fused`` learner update", has the design and the measurements.

Example::

    >>> update = make_fused_cpu(learner)     # first build compiles the numba kernel (cached on disk)
    >>> out = update(batch)                  # like learner.update(batch)
"""
from __future__ import annotations

import time

import numpy as np
import torch
from torch import nn

from pearl_py.algorithms.off_policy.learner import Learner, TensorBatch, UpdateResult
from pearl_py.kernels.fused_support import UPDATE_FORMS, learner_problem, recipe_of
from pearl_py.kernels.numba_blas import (
    JIT,
    LARGE,
    numba,
    numba_available,
    set_blas_threads,
)
from pearl_py.kernels.registry import KernelUnavailable
from pearl_py.kernels.workspace import AdamHyper

# --------------------------------------------------------------------------------------------
# The numba kernels: one gradient step each, over the flat buffers (layers: pearl_py.kernels.mlp_numba).
# --------------------------------------------------------------------------------------------
if numba is not None:
    from numba import carray, njit

    from pearl_py.kernels.batch_view import batch_arrays, f32_at, i64_at
    from pearl_py.kernels.fused_twin import sac_step, td3_step
    from pearl_py.kernels.mlp_numba import (
        adam,
        backward,
        carve,
        clip_coef,
        forward,
        lerp,
        output,
    )

    @njit(**JIT)
    def dqn_step(B, fields, P, T, G, M, V, steps, L, S, hp, double_q, clip, out_td, out_loss):
        """One DQN gradient step in place; |TD| into ``out_td``, the loss into the 0-d ``out_loss``. ``fields``:
        addresses of the batch tensors (:func:`batch_arrays`; actions int64). ``hp`` = (gamma, max_norm, lr, beta1,
        beta2, eps).

        Double-Q runs the online network once on ``[obs; next_obs]`` (2B rows: one GEMM per layer
        instead of two); the backward reads the first B rows (obs) of each activation."""
        obs, rewards, next_obs, dones, weights = batch_arrays(B, L[0, 2], fields)
        actions = carray(i64_at(fields[1]), B)
        n = L.shape[0]
        A = L[n - 1, 3]
        gamma = np.float32(hp[0])
        # Target network on next_obs.
        off = forward(T, L, 0, n, next_obs, S, 0, False)
        next_q = output(S, L, 0, n, B, 0)
        # Online network: on obs (and next_obs for double-Q), activations kept for the backward.
        act_off = off
        if double_q:
            x, off = carve(S, off, 2 * B, obs.shape[1])
            x[:B] = obs
            x[B:] = next_obs
            act_off = off
            off = forward(P, L, 0, n, x, S, act_off, False)
            q_all = output(S, L, 0, n, 2 * B, act_off)
            q, online_next = q_all[:B], q_all[B:]
            act_rows = 2 * B
        else:
            off = forward(P, L, 0, n, obs, S, act_off, False)
            q = output(S, L, 0, n, B, act_off)
            online_next = q
            act_rows = B
        # Target r + gamma (1 - done) max_a Q_target(s', a) (double: at argmax_a Q_online(s', a)), Huber
        # loss (beta 1) and its gradient at the taken actions.
        dq, off = carve(S, off, B, A)
        dq[:, :] = 0.0
        inv_b = np.float32(1.0) / np.float32(B)
        total = 0.0
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
            target = rewards[i] + gamma * (np.float32(1.0) - dones[i]) * nv
            a = actions[i]
            d = q[i, a] - target
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
        out_loss[()] = np.float32(total / B)
        backward(P, G, L, 0, n, S, act_off, act_rows, dq, off, True, False)
        end = L[n - 1, 1] + A
        coef = clip_coef(G, 0, end, hp[1]) if clip else np.float32(1.0)
        adam(P, G, M, V, steps, 0, steps.size, 0, end, coef, hp[2], hp[3], hp[4], hp[5])

    @njit(**JIT)
    def ddpg_step(B, n_act, fields, P, T, G, M, V, steps, L, S, hp, n_actor, clip, soft_update, out_td,
                  critic_loss, actor_loss):
        """One DDPG gradient step in place: critic, then actor (on the updated critic), then soft
        target updates when ``soft_update``; TD errors into ``out_td``, the losses into the 0-d arrays.
        ``fields``: addresses of the batch tensors (:func:`batch_arrays`; actions float32, ``n_act`` per row).
        Rows [0, n_actor) of L are the actor, the rest the critic; parameters: actor first. ``hp`` =
        (gamma, max_norm, critic lr, b1, b2, eps, actor lr, b1, b2, eps, tau). Step counters follow the
        parameter tensors (2 per layer), actor first."""
        n_obs = L[0, 2]
        obs, rewards, next_obs, dones, weights = batch_arrays(B, n_obs, fields)
        actions = carray(f32_at(fields[1]), (B, n_act))
        na, nc = n_actor, L.shape[0] - n_actor
        a_end = L[n_actor - 1, 1] + L[n_actor - 1, 3]          # actor params are P[0:a_end]
        c_start = L[n_actor, 0]                                # critic params are P[c_start:c_end]
        c_end = L[L.shape[0] - 1, 1] + 1
        gamma = np.float32(hp[0])
        x, off = carve(S, 0, B, n_obs + n_act)
        # --- critic loss: target r + gamma (1 - done) Q_t(s', pi_t(s')), MSE
        t_act = off
        off = forward(T, L, 0, na, next_obs, S, t_act, True)
        x[:, :n_obs] = next_obs
        x[:, n_obs:] = output(S, L, 0, na, B, t_act)
        t_crit = off
        off = forward(T, L, na, nc, x, S, t_crit, False)
        next_v = output(S, L, na, nc, B, t_crit)
        target = np.empty(B, np.float32)
        for i in range(B):
            target[i] = rewards[i] + gamma * (np.float32(1.0) - dones[i]) * next_v[i, 0]
        x[:, :n_obs] = obs
        x[:, n_obs:] = actions
        c_act = off
        off = forward(P, L, na, nc, x, S, c_act, False)
        q = output(S, L, na, nc, B, c_act)
        dq, off = carve(S, off, B, 1)
        inv_b = np.float32(1.0) / np.float32(B)
        total = 0.0
        for i in range(B):
            d = q[i, 0] - target[i]
            out_td[i] = d
            total += weights[i] * (d * d)
            dq[i, 0] = np.float32(2.0) * d * (weights[i] * inv_b)
        critic_loss[()] = np.float32(total / B)
        backward(P, G, L, na, nc, S, c_act, B, dq, off, True, False)
        coef = clip_coef(G, c_start, c_end, hp[1]) if clip else np.float32(1.0)
        adam(P, G, M, V, steps, 2 * na, steps.size, c_start, c_end, coef, hp[2], hp[3], hp[4], hp[5])
        # --- actor loss: -mean Q(s, pi(s)) on the updated critic; only the actor is stepped
        p_act = off
        off = forward(P, L, 0, na, obs, S, p_act, True)
        pi = output(S, L, 0, na, B, p_act)
        x[:, n_obs:] = pi
        c2 = off
        off = forward(P, L, na, nc, x, S, c2, False)
        qpi = output(S, L, na, nc, B, c2)
        total = 0.0
        dq2, off = carve(S, off, B, 1)
        for i in range(B):
            total += qpi[i, 0]
            dq2[i, 0] = -inv_b
        actor_loss[()] = -np.float32(total / B)
        dx, off = backward(P, G, L, na, nc, S, c2, B, dq2, off, False, True)
        dpi, off = carve(S, off, B, n_act)
        for i in range(B):
            for j in range(n_act):
                y = pi[i, j]
                dpi[i, j] = dx[i, n_obs + j] * (np.float32(1.0) - y * y)
        backward(P, G, L, 0, na, S, p_act, B, dpi, off, True, False)
        coef = clip_coef(G, 0, a_end, hp[1]) if clip else np.float32(1.0)
        adam(P, G, M, V, steps, 0, 2 * na, 0, a_end, coef, hp[6], hp[7], hp[8], hp[9])
        if soft_update:
            lerp(T, P, 0, c_end, hp[10])

# --------------------------------------------------------------------------------------------
# What the kernel supports, and the Python side: flat shared buffers, the per-call wrapper.
# --------------------------------------------------------------------------------------------
class Scratch:
    """The fused kernels' float32 scratch per batch size, made aligned on first use: ``rows * per_row`` floats
    (activations, gradients), then what :func:`pearl_py.kernels.mlp_numba.linear` needs past them (a transposed
    copy of the largest weight with fewer than ``LARGE`` inputs)."""

    def __init__(self, per_row: int, linears: list[nn.Linear]) -> None:
        self.per_row = per_row
        self.extra = max([m.in_features * m.out_features for m in linears if m.in_features < LARGE], default=0)
        self._by_rows: dict[int, np.ndarray] = {}

    def __call__(self, rows: int) -> np.ndarray:
        if rows not in self._by_rows:
            self._by_rows[rows] = aligned_zeros(rows * self.per_row + self.extra)
        return self._by_rows[rows]


FORMS = UPDATE_FORMS
"""The loss forms (``Loss.form`` of every loss, in order) this kernel implements."""


def supports(learner: Learner) -> tuple[bool, str]:
    """Whether the fused update can run ``learner`` (its algorithm's declared forms and networks, its device
    and optimizers), and why not."""
    ok, why = numba_available()
    if not ok:
        return ok, why
    why = learner_problem(learner.algorithm, dict(learner.nets.online), tuple(learner.nets.target))
    if why is not None:
        return False, why
    if learner.device.type != "cpu":
        return False, "the fused learner update runs on the CPU"
    for loss in learner.losses:
        try:
            AdamHyper.of(learner.optimizers[loss.name])
        except ValueError as exc:
            return False, str(exc)
        params = list(learner.optimizers[loss.name].param_groups[0]["params"])
        if params != list(learner.nets.online[loss.trains].parameters()):
            return False, f"optimizer {loss.name!r} does not hold exactly network {loss.trains!r}'s parameters"
    return True, ""


def _mlps(net: nn.Module) -> list[nn.Module]:
    """The MLPs of a network the kernels read, in parameter order (a twin critic: q1's, then q2's)."""
    from pearl_py.algorithms.networks import StateActionValue, TwinStateActionValue

    if type(net) is StateActionValue:
        return [net.net]
    if type(net) is TwinStateActionValue:
        return [net.q1.net, net.q2.net]
    return [net] if type(net) is nn.Sequential else []      # SAC's EntropyCoefficient: no layers


class FusedCpuUpdate:
    """A learner update that runs its recipe's numba step (DQN, DDPG, TD3, SAC) over the learner's memory."""

    SCRATCH_FACTOR = 8
    """Scratch holds every forward's activations and the backward's gradients: ~8 x B x sum(widths)."""

    def __init__(self, learner: Learner) -> None:
        ok, why = supports(learner)
        if not ok:
            raise KernelUnavailable(f"learner_update variant 'fused' (cpu): {why}")
        set_blas_threads(torch.get_num_threads())
        self.learner = learner
        algo = learner.algorithm
        self.recipe = recipe_of(algo)
        self.order = self.recipe.order          # network order in the flat buffers and the layer table
        self.first_call_seconds: dict[tuple[str, ...], float] = {}
        self._adopt()
        cfg = algo.config
        self.clip = cfg.max_grad_norm is not None
        self.double_q = bool(getattr(cfg, "double_q", False))
        self.n_obs = algo.spec.obs_dim
        discrete = self.recipe.name == "dqn"
        self.n_act = 1 if discrete else algo.spec.action_dim           # action elements per row
        self.action_dtype = torch.int64 if discrete else torch.float32
        self.hp, self.learning_rate = self._hyperparameters(), learner.learning_rate
        self.delay = {loss.form: loss.every for loss in learner.losses}
        widths = sum(int(r[2]) + int(r[3]) for r in self.L)
        self._scratch = Scratch(self.SCRATCH_FACTOR * widths + 16, [m for name in self.order for mlp in self.mlps[name]
                                                                    for m in mlp if type(m) is nn.Linear])

    def _hyperparameters(self) -> np.ndarray:
        """The step's ``hp`` array (see each numba step's docstring)."""
        algo, losses = self.learner.algorithm, self.learner.losses
        cfg = algo.config
        adam = {loss.trains: AdamHyper.of(self.learner.optimizers[loss.name]) for loss in losses}
        max_norm = cfg.max_grad_norm if self.clip else 0.0

        def lr_betas_eps(network: str) -> list[float]:
            a = adam[network]
            return [a.lr, a.beta1, a.beta2, a.eps]

        if self.recipe.name == "dqn":
            return np.array([cfg.gamma, max_norm, *lr_betas_eps("q")], np.float64)
        head = [cfg.gamma, max_norm, *lr_betas_eps("critic"), *lr_betas_eps("actor"), cfg.tau]
        if self.recipe.name == "ddpg":
            return np.array(head, np.float64)
        if self.recipe.name == "td3":
            return np.array(head + [cfg.target_policy_noise, cfg.target_noise_clip], np.float64)
        entropy = lr_betas_eps("ent_coef") if "ent_coef" in adam else [0.0, 0.9, 0.999, 1e-8]
        return np.array(head + [cfg.initial_ent_coef, algo.target_entropy, *entropy], np.float64)

    # -- shared flat buffers ---------------------------------------------------------------
    def _adopt(self) -> None:
        """Move parameters, targets and Adam state into flat buffers; the torch tensors become views."""
        learner = self.learner
        params, targets, states, offsets = [], [], [], []   # offsets: each parameter's start
        spans = []                                           # per network: first parameter index, start, end
        total = 0
        optimizer_of = {loss.trains: learner.optimizers[loss.name] for loss in learner.losses}
        for name in self.order:
            total = -(-total // 16) * 16   # every network starts on a 64-byte boundary (Adam runs per network)
            online = list(learner.nets.online[name].parameters())
            first, start = len(params), total
            params += online
            targets += list(learner.nets.target[name].parameters()) if name in learner.nets.target \
                else [None] * len(online)
            opt = optimizer_of[name]
            states += [opt.state[p] for p in online]
            for p in online:
                offsets.append(total)
                total += p.numel()
            spans.append((first, start, total))
        P, T, M, V = (torch.zeros(total) for _ in range(4))   # the padding stays 0
        steps = torch.zeros(len(params))
        for i, (p, t, state) in enumerate(zip(params, targets, states)):
            a, b = offsets[i], offsets[i] + p.numel()
            for flat, tensor in ((P, p), (T, t)):
                if tensor is not None:     # networks without a target (SAC's actor) leave T[a:b] at 0
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
        self.P, self.T, self.G = P.numpy(), T.numpy(), aligned_zeros(total)   # torch's are 64-byte aligned
        self.M, self.V, self.steps = M.numpy(), V.numpy(), steps.numpy()
        self._torch_flat = (P, T, M, V, steps)
        # What _check_shared compares: per loss, its optimizer, first parameter and that one's exp_avg.
        self._watch = []
        for loss in learner.losses:
            opt, p0 = learner.optimizers[loss.name], next(iter(learner.nets.online[loss.trains].parameters()))
            self._watch.append((opt, p0, opt.state[p0]["exp_avg"]))
        self._flat_ptr = P.data_ptr()
        # Layer table L (weight offset, bias offset, n_in, n_out) and network rows R (param start, param end,
        # first step counter, end step counter, first layer row, layer rows).
        self.mlps = {name: _mlps(learner.nets.online[name]) for name in self.order}
        rows, ranges = [], []
        for name, (first, start, end) in zip(self.order, spans):
            index, first_row = first, len(rows)
            for mlp in self.mlps[name]:
                for m in mlp:
                    if type(m) is nn.Linear:
                        rows.append((offsets[index], offsets[index + 1], m.in_features, m.out_features))
                        index += 2
            n_params = len(list(learner.nets.online[name].parameters()))
            ranges.append((start, end, first, first + n_params, first_row, len(rows) - first_row))
        self.L = np.array(rows, np.int64)
        self.R = np.array(ranges, np.int64)
        self.n_actor = int(self.R[0, 5]) if self.order[0] == "actor" else 0
        self._params = params

    def _check_shared(self) -> None:
        """Re-adopt if ``Optimizer.load_state_dict`` (or anything else) replaced the shared tensors."""
        for opt, p0, exp_avg in self._watch:
            state = opt.state.get(p0)
            if state is None or state.get("exp_avg") is not exp_avg:
                self._adopt()
                return
        if self._params[0].data_ptr() != self._flat_ptr:
            self._adopt()

    # -- one update ------------------------------------------------------------------------
    def __call__(self, batch: TensorBatch) -> UpdateResult:
        learner = self.learner
        self._check_shared()
        if self.learning_rate != learner.learning_rate:   # a new round's rate (Learner.set_learning_rate)
            self.hp, self.learning_rate = self._hyperparameters(), learner.learning_rate
        step_number = learner.gradient_steps + 1
        B = batch.obs.shape[0]
        keep: list[torch.Tensor] = []   # converted copies stay alive through the call
        fields = (_address(batch.obs, torch.float32, B * self.n_obs, keep),
                  _address(batch.actions, self.action_dtype, B * self.n_act, keep),
                  _address(batch.rewards, torch.float32, B, keep), _address(batch.next_obs, torch.float32,
                                                                            B * self.n_obs, keep),
                  _address(batch.dones, torch.float32, B, keep), _address(batch.weights, torch.float32, B, keep))
        S = self._scratch(B)
        td = np.empty(B, np.float32)
        start = time.perf_counter()
        losses, td_abs = getattr(self, f"_{self.recipe.name}")(B, fields, S, td, step_number)
        if not self.first_call_seconds:
            self.first_call_seconds[tuple(losses)] = time.perf_counter() - start
        learner.gradient_steps = step_number
        if self.recipe.name == "dqn":   # DQN's target copies are counted in env steps (after_env_step): a no-op here
            learner.algorithm.after_gradient_step(learner.nets, step_number)
        return UpdateResult(losses, td_abs)

    def _dqn(self, B, fields, S, td, step_number):
        loss = np.empty((), np.float32)
        dqn_step(B, fields, self.P, self.T, self.G, self.M, self.V, self.steps, self.L, S, self.hp,
                 self.double_q, self.clip, td, loss)
        return {"q": torch.from_numpy(loss)}, torch.from_numpy(td)

    def _ddpg(self, B, fields, S, td, step_number):
        loss, actor_loss = np.empty((), np.float32), np.empty((), np.float32)
        soft = self.learner.algorithm.targets_due(step_number)
        ddpg_step(B, self.n_act, fields, self.P, self.T, self.G, self.M, self.V, self.steps, self.L, S, self.hp,
                  self.n_actor, self.clip, soft, td, loss, actor_loss)
        return {"critic": torch.from_numpy(loss), "actor": torch.from_numpy(actor_loss)}, \
            torch.from_numpy(np.abs(td, out=td))

    def _td3(self, B, fields, S, td, step_number):
        losses = np.zeros(2, np.float32)
        actor_due = step_number % self.delay["td3_actor"] == 0
        eps = torch.randn(B, self.n_act).numpy()     # the critic's smoothing noise, as the reference draws it
        td3_step(B, self.n_act, fields, self.P, self.T, self.G, self.M, self.V, self.steps, self.L, S, self.R,
                 self.hp, eps, self.clip, actor_due, self.learner.algorithm.targets_due(step_number), td, losses)
        out = {"critic": torch.from_numpy(losses[0:1].reshape(()))}
        if actor_due:
            out["actor"] = torch.from_numpy(losses[1:2].reshape(()))
        return out, torch.from_numpy(np.abs(td, out=td))

    def _sac(self, B, fields, S, td, step_number):
        learn_alpha = len(self.order) == 3
        losses = np.zeros(3, np.float32)
        # the actions each loss samples, in the reference's order: critic target, actor[, entropy coefficient]
        eps = [torch.randn(B, self.n_act).numpy() for _ in range(3 if learn_alpha else 2)]
        sac_step(B, self.n_act, fields, self.P, self.T, self.G, self.M, self.V, self.steps, self.L, S, self.R,
                 self.hp, eps[0], eps[1], eps[-1], self.clip, learn_alpha,
                 self.learner.algorithm.targets_due(step_number), td, losses)
        names = ("critic", "actor", "ent_coef")[:len(self.order)]
        return {name: torch.from_numpy(losses[i:i + 1].reshape(())) for i, name in enumerate(names)}, \
            torch.from_numpy(np.abs(td, out=td))


def aligned_zeros(n: int) -> np.ndarray:
    """``n`` float32 zeros starting on a 64-byte boundary (numpy's large arrays start 16 bytes past one; Adam's
    512-bit loads split cache lines otherwise: docs/kernels.md, "Aligned buffers")."""
    buf = np.zeros(n + 16, np.float32)
    start = (-buf.ctypes.data % 64) // 4
    return buf[start:start + n]


def _address(t: torch.Tensor, dtype: torch.dtype, numel: int, keep: list[torch.Tensor]) -> int:
    """The address of ``t``'s data as a contiguous CPU tensor of ``dtype`` (a converted copy, kept alive in
    ``keep``, if it is not one), after checking it has ``numel`` elements: the kernel reads it directly."""
    if t.dtype is not dtype or not t.is_contiguous() or not t.is_cpu:
        t = t.detach().to("cpu", dtype).contiguous()
        keep.append(t)
    if t.numel() != numel:
        raise ValueError(f"fused learner update: a batch field has shape {tuple(t.shape)} ({t.numel()} elements), "
                         f"expected {numel} elements")
    return t.data_ptr()


def make_fused_cpu(learner: Learner) -> FusedCpuUpdate:
    """The ``fused`` CPU learner update of ``learner`` (raises :class:`KernelUnavailable` with the reason
    when its algorithm does not declare a recipe's loss forms on pearl_py's networks)."""
    return FusedCpuUpdate(learner)
