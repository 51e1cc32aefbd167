"""Derive an on-policy algorithm's protocol graph by observing its code, as the off-policy family does.

The layers of ``inference`` (the algorithm's own ``act``, sampling from per-env noise: action,
log-probability and value for a batch of ``n_envs`` envs) and of ``learner_update`` (one minibatch
step of the learner: loss, backward, gradient clip, optimizer step) are recorded on a throwaway
learner with forward hooks (:mod:`pearl_py.algorithms.recording`), and the operators each call
dispatches are counted; ``forms`` are the algorithm's declared acting and loss forms. Rates are per
collected transition, from the synchronous schedule (:class:`~pearl_py.protocol.schedule.RolloutSchedule`):

=============== ======================================= ==========================================
kernel          calls per transition                    one call
=============== ======================================= ==========================================
env_step        1 / n_envs                              a vector step of ``n_envs`` envs
inference       (n_steps + 1) / (n_steps * n_envs)      every vector step, and V of the last obs
rollout_insert  1 / n_envs                              a vector step's transitions into the rollout
advantage       1 / (n_steps * n_envs)                  GAE(lambda) over the rollout
learner_update  epochs * minibatches / rollout size     one minibatch step
param_sync      1 / rollout size                        the acting parameters out, once per rollout
=============== ======================================= ==========================================

Values of truncated episodes' final observations (a few extra inference rows, only when a time limit
cuts an episode) are not counted.

Example::

    >>> graph = derive_protocol(pearl.PPO("CartPole-v1", n_envs=8, n_steps=32, batch_size=256, n_epochs=20))
    >>> graph.mode, graph.kernel(LEARNER_UPDATE).rate, graph.kernel(INFERENCE).workload.forms
    ('synchronous', 0.078125, ('actor_critic',))
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from pearl_py.algorithms.off_policy.derive import example_obs
from pearl_py.algorithms.recording import ObservedCode, observe, observed_once
from pearl_py.protocol.graph import ProtocolGraph
from pearl_py.protocol.kernel import (
    ADVANTAGE,
    ENV_STEP,
    INFERENCE,
    LEARNER_UPDATE,
    PARAM_SYNC,
    ROLLOUT_INSERT,
    Kernel,
)
from pearl_py.protocol.workload import (
    FLOAT_BYTES,
    AdvantageWorkload,
    EnvWorkload,
    NetworkWorkload,
    RolloutWorkload,
    SyncWorkload,
)

if TYPE_CHECKING:
    from pearl_py.algorithms.on_policy.base import OnPolicyAlgorithm
    from pearl_py.algorithms.on_policy.learner import OnPolicyLearner, RolloutBatch

SCAN_READ_BYTES = 3 * FLOAT_BYTES
"""What the advantage scan reads of each stored transition: reward, value, episode start."""
TARGET_BYTES = 2 * FLOAT_BYTES
"""What it writes per transition for the learner: advantage and return."""


def action_bytes(algorithm: OnPolicyAlgorithm) -> int:
    """Bytes of one stored action: an int64 index or ``action_dim`` float32 values."""
    spec = algorithm.spec
    return 8 if spec.discrete else FLOAT_BYTES * spec.action_dim


def item_bytes(algorithm: OnPolicyAlgorithm) -> int:
    """Bytes of one rollout slot: observation, action, reward, episode start, value, log-probability."""
    return algorithm.spec.obs_item_bytes + FLOAT_BYTES * 4 + action_bytes(algorithm)


def _probe_learner(algorithm: OnPolicyAlgorithm) -> OnPolicyLearner:
    from pearl_py.algorithms.on_policy.learner import OnPolicyLearner

    with torch.random.fork_rng():
        torch.manual_seed(0)
        return OnPolicyLearner(algorithm, device="cpu")


def _random_minibatch(algorithm: OnPolicyAlgorithm, learner: OnPolicyLearner, rows: int) -> RolloutBatch:
    """A minibatch whose actions the policy sampled (so its old log-probabilities are the current ones: no early
    stop before the recorded step)."""
    from pearl_py.algorithms.on_policy.learner import RolloutBatch

    g = torch.Generator().manual_seed(0)
    obs = example_obs(algorithm.spec, rows, g)
    noise = torch.rand(rows, algorithm.noise_width, generator=g).clamp_(1e-6, 1 - 1e-6)
    with torch.no_grad():
        step = algorithm.act(learner.nets, obs, explore=True, noise=noise)
    return RolloutBatch(obs, step.actions, step.values, step.log_probs, torch.randn(rows, generator=g),
                        torch.randn(rows, generator=g))


def _observe_code(algorithm: OnPolicyAlgorithm, rows: int) -> ObservedCode:
    """Acting on ``n_envs`` envs and one learner step on a minibatch of ``rows``, on a throwaway learner."""
    spec, n_envs = algorithm.spec, algorithm.config.n_envs
    learner = _probe_learner(algorithm)
    with torch.random.fork_rng():
        obs = example_obs(spec, n_envs, torch.Generator().manual_seed(0))
        noise = torch.full((n_envs, algorithm.noise_width), 0.5)

        def act() -> object:
            with torch.no_grad():
                return algorithm.act(learner.nets, obs, explore=True, noise=noise)

        acting, acting_ops = observe(learner.nets, act)
        batch = _random_minibatch(algorithm, learner, rows)
        learning, learning_ops = observe(learner.nets, lambda: learner.step(batch, progress_remaining=1.0))

    acting_params = [p for name in algorithm.acting_networks for p in learner.nets.online[name].parameters()]
    return ObservedCode(sum(p.numel() for p in learner.parameters), tuple(acting), acting_ops, tuple(learning),
                        learning_ops, sum(p.numel() * p.element_size() for p in acting_params), len(acting_params),
                        optimizer=type(learner.optimizer).__name__.lower())


def derive_protocol(algorithm: OnPolicyAlgorithm, serialized: bool = False) -> ProtocolGraph:
    """The kernels, workloads, rates and data edges of ``algorithm`` under its config (see the module docstring)."""
    cfg, spec = algorithm.config, algorithm.spec
    n_envs, size = cfg.n_envs, cfg.rollout_size
    updates = cfg.epochs_per_rollout * cfg.minibatches_per_epoch
    rows = max(round(size / cfg.minibatches_per_epoch), 1)     # the average minibatch (the last may be smaller)
    code = observed_once(algorithm, lambda algo: _observe_code(algo, rows))
    acting, acting_ops, learning, learning_ops = code.acting, code.acting_ops, code.learning, code.learning_ops
    param_bytes = code.param_bytes
    per_step = 1.0 / n_envs
    per_rollout = 1.0 / size
    acting_form, loss_form = algorithm.declared_acting_form(), algorithm.declared_loss_form()
    graph = ProtocolGraph(serialized=serialized, synchronous=not serialized, rollout_size=size)
    for kernel in (
        Kernel(ENV_STEP, ENV_STEP, EnvWorkload(spec.env_id, spec.obs_dim, spec.action_dim, n_envs, algorithm.family,
                                            spec.discrete, spec.obs_item_bytes,
                                            normalized_per_env=algorithm.normalized_values(1)),
               rate=per_step),
        Kernel(INFERENCE, INFERENCE, NetworkWorkload(acting, trained_params=0, batch=n_envs, forms=(acting_form,),
                                                     family=algorithm.family, dispatched_ops=float(acting_ops)),
               rate=(cfg.n_steps + 1) / size),
        # the serial executor stores the rollout in its one process: replicas only where actors collect
        Kernel(ROLLOUT_INSERT, ROLLOUT_INSERT, RolloutWorkload(cfg.n_steps, n_envs, item_bytes(algorithm), n_envs),
               rate=per_step, replicable=not serialized),
        Kernel(ADVANTAGE, ADVANTAGE, AdvantageWorkload(cfg.n_steps, n_envs), rate=per_rollout),
        Kernel(LEARNER_UPDATE, LEARNER_UPDATE,
               NetworkWorkload(learning, trained_params=code.trained_params, batch=rows, forms=(loss_form, acting_form),
                               family=algorithm.family, dispatched_ops=float(learning_ops),
                               optimizer=code.optimizer,
                               resident_bytes=size * (item_bytes(algorithm) + TARGET_BYTES), updates_per_round=updates),
               rate=updates / size),
        # the serial executor acts with the learner's own networks: it publishes nothing
        Kernel(PARAM_SYNC, PARAM_SYNC, SyncWorkload(param_bytes, tensors=code.param_tensors, handshake=not serialized),
               rate=0.0 if serialized else per_rollout),
    ):
        graph.add_kernel(kernel)

    obs_bytes = n_envs * spec.obs_item_bytes
    graph.connect(ENV_STEP, INFERENCE, obs_bytes)
    graph.connect(INFERENCE, ENV_STEP, n_envs * action_bytes(algorithm))
    graph.connect(ENV_STEP, ROLLOUT_INSERT, n_envs * item_bytes(algorithm))
    graph.connect(ROLLOUT_INSERT, ADVANTAGE, n_envs * SCAN_READ_BYTES)
    graph.connect(ROLLOUT_INSERT, LEARNER_UPDATE, n_envs * (item_bytes(algorithm) - SCAN_READ_BYTES))
    graph.connect(ADVANTAGE, LEARNER_UPDATE, size * TARGET_BYTES)
    graph.connect(LEARNER_UPDATE, PARAM_SYNC, -(-param_bytes // updates))
    graph.connect(PARAM_SYNC, INFERENCE, param_bytes)
    return graph
