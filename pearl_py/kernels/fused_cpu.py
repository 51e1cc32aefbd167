"""The ``fused`` CPU learner update: DQN's and DDPG's whole gradient step in one numba function.

One ``@njit(nogil=True)`` call per update runs the target forward, the online forward,
the loss, the backward pass, the gradient-norm clip (folded into Adam as a factor),
Adam (bias corrections in float64, as ``torch.optim.Adam``) and, for DDPG, the soft
target update, over float32 numpy arrays, with one ``sgemm`` per GEMM on the arrays as
they are (``pearl_py.kernels.numba_blas.gemm``: torch's MKL for the large ones, scipy's
OpenBLAS for the small ones; layers in ``pearl_py.kernels.mlp_numba``). No Python runs
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

import time

import numpy as np
import torch
from torch import nn

from pearl_py.algorithms.off_policy.learner import Learner, TensorBatch, UpdateResult
from pearl_py.kernels.numba_blas import JIT, LARGE, numba, numba_available, set_blas_threads
from pearl_py.kernels.registry import KernelUnavailable
from pearl_py.kernels.workspace import AdamHyper

# --------------------------------------------------------------------------------------------
# The numba kernels: one gradient step each, over the flat buffers (layers: pearl_py.kernels.mlp_numba).
# --------------------------------------------------------------------------------------------
if numba is not None:
    from numba import carray, njit, types
    from numba.extending import intrinsic

    from pearl_py.kernels.mlp_numba import adam, backward, carve, clip_coef, forward, lerp, output

    def _pointer_at(element):
        """An intrinsic: ``element*`` at an integer address (a torch tensor's ``data_ptr()``)."""
        ptr = types.CPointer(element)

        @intrinsic
        def at(typingctx, address):
            def codegen(context, builder, sig, args):
                return builder.inttoptr(args[0], context.get_value_type(ptr))
            return ptr(address), codegen
        return at

    _f32_at = _pointer_at(types.float32)
    _i64_at = _pointer_at(types.int64)

    @njit(**JIT)
    def _batch(B, n_obs, fields):
        """obs, rewards, next_obs, dones, weights: float32 arrays over the batch tensors' memory (``fields``:
        addresses of obs, actions, rewards, next_obs, dones, weights; actions are the algorithm's)."""
        a_obs, _, a_rew, a_next, a_done, a_w = fields
        return (carray(_f32_at(a_obs), (B, n_obs)), carray(_f32_at(a_rew), B), carray(_f32_at(a_next), (B, n_obs)),
                carray(_f32_at(a_done), B), carray(_f32_at(a_w), B))

    @njit(**JIT)
    def dqn_step(B, fields, P, T, G, M, V, steps, L, S, hp, double_q, clip, out_td, out_loss):
        """One DQN gradient step in place; |TD| into ``out_td``, the loss into the 0-d ``out_loss``. ``fields``:
        addresses of the batch tensors (:func:`_batch`; actions int64). ``hp`` = (gamma, max_norm, lr, beta1,
        beta2, eps).

        Double-Q runs the online network once on ``[obs; next_obs]`` (2B rows: one GEMM per layer
        instead of two); the backward reads the first B rows (obs) of each activation."""
        obs, rewards, next_obs, dones, weights = _batch(B, L[0, 2], fields)
        actions = carray(_i64_at(fields[1]), B)
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
        ``fields``: addresses of the batch tensors (:func:`_batch`; actions float32, ``n_act`` per row).
        Rows [0, n_actor) of L are the actor, the rest the critic; parameters: actor first. ``hp`` =
        (gamma, max_norm, critic lr, b1, b2, eps, actor lr, b1, b2, eps, tau). Step counters follow the
        parameter tensors (2 per layer), actor first."""
        n_obs = L[0, 2]
        obs, rewards, next_obs, dones, weights = _batch(B, n_obs, fields)
        actions = carray(_f32_at(fields[1]), (B, n_act))
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


def linear_scratch(linears: list[nn.Linear]) -> int:
    """Floats of scratch :func:`pearl_py.kernels.mlp_numba.linear` needs past the activations (a transposed
    copy of a weight with fewer than ``LARGE`` inputs)."""
    return max([m.in_features * m.out_features for m in linears if m.in_features < LARGE], default=0)


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
        self.double_q = bool(getattr(cfg, "double_q", False))
        self.n_obs = algo.spec.obs_dim
        self.n_act = algo.spec.action_dim if self.is_ddpg else 1          # action elements per row
        self.action_dtype = torch.float32 if self.is_ddpg else torch.int64
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
        self._scratch_extra = linear_scratch([m for name in self.order for m in self.modules[name]
                                              if type(m) is nn.Linear])

    # -- shared flat buffers ---------------------------------------------------------------
    def _adopt(self) -> None:
        """Move parameters, targets and Adam state into flat buffers; the torch tensors become views."""
        learner = self.learner
        params, targets, states, offsets = [], [], [], []   # offsets: each parameter's start
        total = 0
        for name in self.order:
            total = -(-total // 16) * 16   # every network starts on a 64-byte boundary (Adam runs per network)
            online = list(learner.nets.online[name].parameters())
            params += online
            targets += list(learner.nets.target[name].parameters())
            opt = learner.optimizers[name]   # DQN's loss "q" trains "q", DDPG's "actor"/"critic" theirs
            states += [opt.state[p] for p in online]
            for p in online:
                offsets.append(total)
                total += p.numel()
        P, T, M, V = (torch.zeros(total) for _ in range(4))   # the padding stays 0
        steps = torch.zeros(len(params))
        views = []
        for i, (p, t, state) in enumerate(zip(params, targets, states)):
            a, b = offsets[i], offsets[i] + p.numel()
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
        self.P, self.T, self.G = P.numpy(), T.numpy(), aligned_zeros(total)   # torch's are 64-byte aligned
        self.M, self.V, self.steps = M.numpy(), V.numpy(), steps.numpy()
        self._torch_flat = (P, T, M, V, steps)
        # What _check_shared compares: per loss, its optimizer, first parameter and that one's exp_avg.
        self._watch = []
        for loss in learner.losses:
            opt, p0 = learner.optimizers[loss.name], next(iter(learner.nets.online[loss.trains].parameters()))
            self._watch.append((opt, p0, opt.state[p0]["exp_avg"]))
        self._flat_ptr = P.data_ptr()
        rows, index = [], 0
        for name in self.order:
            for m in self.modules[name]:
                if type(m) is nn.Linear:
                    rows.append((offsets[index], offsets[index + 1], m.in_features, m.out_features))
                    index += 2
        self.L = np.array(rows, np.int64)
        self.n_actor = sum(1 for m in self.modules["actor"] if type(m) is nn.Linear) if self.is_ddpg else 0
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
    def _scratch_for(self, batch_size: int) -> np.ndarray:
        s = self._scratch.get(batch_size)
        if s is None:
            s = self._scratch[batch_size] = aligned_zeros(batch_size * self._scratch_per_row + self._scratch_extra)
        return s

    def __call__(self, batch: TensorBatch) -> UpdateResult:
        learner = self.learner
        self._check_shared()
        step_number = learner.gradient_steps + 1
        B = batch.obs.shape[0]
        keep: list[torch.Tensor] = []   # converted copies stay alive through the call
        fields = (_address(batch.obs, torch.float32, B * self.n_obs, keep),
                  _address(batch.actions, self.action_dtype, B * self.n_act, keep),
                  _address(batch.rewards, torch.float32, B, keep), _address(batch.next_obs, torch.float32,
                                                                            B * self.n_obs, keep),
                  _address(batch.dones, torch.float32, B, keep), _address(batch.weights, torch.float32, B, keep))
        S = self._scratch_for(B)
        td = np.empty(B, np.float32)
        loss = np.empty((), np.float32)
        start = time.perf_counter()
        if self.is_ddpg:
            cfg = learner.algorithm.config
            soft = cfg.target_update_interval >= 1 and step_number % cfg.target_update_interval == 0
            actor_loss = np.empty((), np.float32)
            ddpg_step(B, self.n_act, fields, self.P, self.T, self.G, self.M, self.V, self.steps, self.L, S,
                      self.hp, self.n_actor, self.clip, soft, td, loss, actor_loss)
            losses = {"critic": torch.from_numpy(loss), "actor": torch.from_numpy(actor_loss)}
            td_abs = torch.from_numpy(np.abs(td, out=td))
        else:
            dqn_step(B, fields, self.P, self.T, self.G, self.M, self.V, self.steps, self.L, S, self.hp,
                     self.double_q, self.clip, td, loss)
            losses = {"q": torch.from_numpy(loss)}
            td_abs = torch.from_numpy(td)
        if not self.first_call_seconds:
            self.first_call_seconds[tuple(losses)] = time.perf_counter() - start
        learner.gradient_steps = step_number
        if not self.is_ddpg:   # DQN's target copies are counted in env steps (after_env_step): a no-op here
            learner.algorithm.after_gradient_step(learner.nets, step_number)
        return UpdateResult(losses, td_abs)


def aligned_zeros(n: int) -> np.ndarray:
    """``n`` float32 zeros starting on a 64-byte boundary (numpy's large arrays start 16 bytes past one).

    Measured: Adam over 67k parameters took 27-33 us with the gradient 16 bytes off a cache line, 21-25 us
    aligned (its 512-bit loads split cache lines otherwise)."""
    buf = np.zeros(n + 16, np.float32)
    start = (-buf.ctypes.data % 64) // 4
    return buf[start:start + n]


def _address(t: torch.Tensor, dtype: torch.dtype, numel: int, keep: list[torch.Tensor]) -> int:
    """The address of ``t``'s data as a contiguous CPU tensor of ``dtype`` (a converted copy, kept alive in
    ``keep``, if it is not one), after checking it has ``numel`` elements: the kernel reads it directly
    (``t.data_ptr()`` costs 0.06 us, ``t.numpy()`` 0.7 us, six times per update)."""
    if t.dtype is not dtype or not t.is_contiguous() or not t.is_cpu:
        t = t.detach().to("cpu", dtype).contiguous()
        keep.append(t)
    if t.numel() != numel:
        raise ValueError(f"fused learner update: a batch field has shape {tuple(t.shape)} ({t.numel()} elements), "
                         f"expected {numel} elements")
    return t.data_ptr()


def make_fused_cpu(learner: Learner) -> FusedCpuUpdate:
    """The ``fused`` CPU learner update of ``learner`` (raises :class:`KernelUnavailable` with the reason
    when its algorithm or networks are not DQN's/DDPG's)."""
    return FusedCpuUpdate(learner)
