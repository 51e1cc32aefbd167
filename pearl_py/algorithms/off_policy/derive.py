"""Derive an off-policy algorithm's protocol graph by observing its code, not by describing it by hand.

The layers of ``inference`` and ``learner_update`` are recorded by running the
algorithm's own ``act`` and one gradient step on a throwaway copy of its networks
with a forward hook on every recorded layer type (:mod:`pearl_py.algorithms.recording`),
then again counting the operators they dispatch (``dispatched_ops``, per update);
their ``forms`` are the algorithm's declared acting form and loss forms; rates come
from the config's update-to-data ratio; edge sizes from the transition layout.

Example::

    >>> graph = derive_protocol(pearl.DQN("CartPole-v1", batch_size=64))
    >>> [layer.n_out for layer in graph.kernel(INFERENCE).workload.layers], graph.kernel(INFERENCE).workload.forms
    ([64, 64, 2], ('epsilon_greedy_q',))
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

from pearl_py.algorithms.recording import ObservedCode, observe, observed_once
from pearl_py.protocol.graph import ProtocolGraph
from pearl_py.protocol.kernel import (
    ENV_STEP,
    INFERENCE,
    LEARNER_UPDATE,
    PARAM_SYNC,
    PRIORITY_UPDATE,
    REPLAY_INSERT,
    REPLAY_SAMPLE,
    Kernel,
)
from pearl_py.protocol.schedule import (
    DEFAULT_POLICY_LAG,
    DEFAULT_SYNC_EVERY,
    TrainSchedule,
)
from pearl_py.protocol.workload import (
    FLOAT_BYTES,
    EnvWorkload,
    NetworkWorkload,
    ReplayWorkload,
    SyncWorkload,
)

if TYPE_CHECKING:
    from pearl_py.envs import EnvSpec
    from pearl_py.algorithms.off_policy.base import Algorithm
    from pearl_py.algorithms.off_policy.learner import Learner

PRIORITY_ITEM_BYTES = 8 + 4
"""An index (int64) and a priority (float32) per priority update."""


def _probe_learner(algorithm: Algorithm) -> Learner:
    from pearl_py.algorithms.off_policy.learner import Learner

    with torch.random.fork_rng():
        torch.manual_seed(0)
        return Learner(algorithm, device="cpu")


def _random_batch(algorithm: Algorithm, size: int):
    from pearl_py.algorithms.off_policy.learner import TensorBatch

    spec = algorithm.spec
    g = torch.Generator().manual_seed(0)
    obs = example_obs(spec, size, g)
    if spec.discrete:
        actions = torch.randint(0, spec.action_dim, (size,), generator=g)
    else:
        actions = torch.rand(size, spec.action_dim, generator=g) * 2 - 1
    return TensorBatch(obs, actions, torch.zeros(size), obs.clone(), torch.zeros(size), torch.ones(size))


def example_obs(spec: EnvSpec, size: int, generator: torch.Generator) -> torch.Tensor:
    """``size`` random observations as the env makes them: float32 vectors or uint8 frames of ``spec.obs_shape``."""
    if spec.obs_dtype == "uint8":
        return torch.randint(0, 256, (size, *spec.obs_shape), generator=generator, dtype=torch.uint8)
    return torch.randn(size, *spec.obs_shape, generator=generator)


def observe_code(algorithm: Algorithm) -> ObservedCode:
    """:class:`~pearl_py.algorithms.recording.ObservedCode` of ``algorithm``, observed once per config and env spec
    (:func:`~pearl_py.algorithms.recording.observed_once`)."""
    return observed_once(algorithm, _observe_code)


def _observe_code(algorithm: Algorithm) -> ObservedCode:
    cfg, spec = algorithm.config, algorithm.spec
    learner = _probe_learner(algorithm)
    period = math.lcm(*(loss.every for loss in learner.losses))
    trained_params = sum(p.numel() * (period // loss.every) for loss in learner.losses
                         for p in learner.nets.online[loss.trains].parameters())

    with torch.random.fork_rng():
        obs = example_obs(spec, cfg.n_envs, torch.Generator().manual_seed(1))

        def act() -> object:
            with torch.no_grad():
                return algorithm.act(learner.nets, obs, explore=False, progress=1.0)

        acting, acting_ops = observe(learner.nets, act)
        batch = _random_batch(algorithm, cfg.batch_size)
        learning, learning_ops = observe(learner.nets, lambda: [learner.update(batch) for _ in range(period)])

    acting_params = [p for name in algorithm.acting_networks for p in learner.nets.online[name].parameters()]
    return ObservedCode(trained_params, tuple(acting), acting_ops, tuple(learning), learning_ops,
                        sum(p.numel() * p.element_size() for p in acting_params), len(acting_params), period=period)


def derive_protocol(algorithm: Algorithm, serialized: bool = False) -> ProtocolGraph:
    """The kernels, workloads, rates and data edges of ``algorithm`` under its config."""
    cfg, spec = algorithm.config, algorithm.spec
    n_envs = cfg.n_envs
    code = observe_code(algorithm)
    period, trained_params, acting, acting_ops = code.period, code.trained_params, code.acting, code.acting_ops
    learning, learning_ops, param_bytes = code.learning, code.learning_ops, code.param_bytes
    layout = algorithm.transition_layout()
    per_step = 1.0 / n_envs
    per_update = cfg.updates_per_transition
    lagged = TrainSchedule.from_config(cfg, total_steps=1, max_policy_lag=DEFAULT_POLICY_LAG)
    # the parallel runtime publishes the acting networks every DEFAULT_SYNC_EVERY updates and where the policy-lag
    # bound needs fresher ones; the serial executor acts with the learner's own networks and never copies them
    per_sync = 0.0 if serialized else per_update * lagged.publications_per_update(DEFAULT_SYNC_EVERY)

    def replay(batch: int) -> ReplayWorkload:
        return ReplayWorkload(capacity=cfg.buffer_size, batch=batch, item_bytes=layout.item_bytes,
                              prioritized=cfg.prioritized_replay, fanout=cfg.replay_fanout)

    graph = ProtocolGraph(serialized=serialized, overlap=lagged.overlap, warmup_steps=cfg.learning_starts,
                          warmup_acts=algorithm.warmup_acts)
    forms = algorithm.loss_forms()
    normalized_sample = algorithm.normalized_values(2 * cfg.batch_size)  # obs and next obs
    kernels = [
        Kernel(ENV_STEP, ENV_STEP, EnvWorkload(spec.env_id, spec.obs_dim, spec.action_dim, n_envs, algorithm.family,
                                               spec.discrete, spec.obs_item_bytes,
                                               normalized_per_env=algorithm.normalized_values(1)),
               rate=per_step),
        Kernel(INFERENCE, INFERENCE, NetworkWorkload(acting, trained_params=0, batch=n_envs, family=algorithm.family,
                                                     forms=(algorithm.declared_acting_form(),),
                                                     dispatched_ops=float(acting_ops)), rate=per_step),
        Kernel(REPLAY_INSERT, REPLAY_INSERT, replay(n_envs), rate=per_step),
        Kernel(REPLAY_SAMPLE, REPLAY_SAMPLE, replay(cfg.batch_size), rate=per_update),
        Kernel(LEARNER_UPDATE, LEARNER_UPDATE, NetworkWorkload(learning, trained_params=trained_params,
                                                               batch=cfg.batch_size, family=algorithm.family,
                                                               period=period, forms=forms,
                                                               dispatched_ops=learning_ops / period,
                                                               updates_per_round=cfg.gradient_steps,
                                                               normalized=normalized_sample),
               rate=per_update),
        Kernel(PARAM_SYNC, PARAM_SYNC, SyncWorkload(param_bytes, tensors=code.param_tensors), rate=per_sync),
    ]
    if cfg.prioritized_replay:
        kernels.append(Kernel(PRIORITY_UPDATE, PRIORITY_UPDATE, replay(cfg.batch_size), rate=per_update))
    for kernel in kernels:
        graph.add_kernel(kernel)

    action_bytes = n_envs * (8 if spec.discrete else FLOAT_BYTES * spec.action_dim)
    graph.connect(ENV_STEP, INFERENCE, n_envs * spec.obs_item_bytes)
    graph.connect(INFERENCE, ENV_STEP, action_bytes)
    graph.connect(ENV_STEP, REPLAY_INSERT, n_envs * layout.sampled_bytes)
    graph.connect(REPLAY_SAMPLE, LEARNER_UPDATE, cfg.batch_size * (layout.sampled_bytes + FLOAT_BYTES))
    graph.connect(LEARNER_UPDATE, PARAM_SYNC, param_bytes)
    graph.connect(PARAM_SYNC, INFERENCE, param_bytes)
    if cfg.prioritized_replay:
        graph.connect(LEARNER_UPDATE, PRIORITY_UPDATE, cfg.batch_size * PRIORITY_ITEM_BYTES)
    return graph
