"""The on-policy family's kernel variants, and how its executors build them from a plan.

=================  ======  =========  =======================================================
kind               device  variant    what it is
=================  ======  =========  =======================================================
inference          cpu     reference  ``algorithm.act`` under ``no_grad`` (any on-policy algorithm)
inference          cpu     fused      the MLP actor-critic's act as one numba call, row-invariant
inference          gpu     reference  ``algorithm.act`` on the GPU
learner_update     cpu     reference  ``OnPolicyLearner.step``: eager autograd and the algorithm's optimizer
learner_update     cpu     fused      PPO's / A2C's minibatch step as one numba call over BLAS
learner_update     gpu     reference  ``OnPolicyLearner.step`` on the GPU
=================  ======  =========  =======================================================

The variants live in their own registry (``registry_of("on_policy")``): the estimator offers a
kernel the variants of its family (``NetworkWorkload.family``), so the off-policy ``compiled``
and ``cuda_graph`` steps are never offered to PPO. The ``fused`` ones declare the forms they
implement (``Variant.forms``: the acting form ``actor_critic``; the loss forms ``ppo_clip`` and
``a2c_pg`` on it) and fall back to the reference, with a warning, for networks they do not read.

Example::

    >>> acting = build_acting("fused", algo, learner.nets)            # plan.placements["inference"].variant
    >>> install_update("fused", learner)                              # learner.update is now the fused step
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from pearl_py.kernels import fused_on_policy, on_policy_inference
from pearl_py.kernels.cuda_graph import cuda_available
from pearl_py.kernels.numba_blas import numba_available
from pearl_py.kernels.registry import (
    FAMILY_REGISTRIES,
    Registry,
    Variant,
    build,
    device_class,
)
from pearl_py.protocol.kernel import INFERENCE, LEARNER_UPDATE
from pearl_py.protocol.workload import DenseLayer

if TYPE_CHECKING:
    from pearl_py.algorithms.networks import Networks
    from pearl_py.algorithms.on_policy.base import OnPolicyAlgorithm
    from pearl_py.algorithms.on_policy.learner import MinibatchUpdate, OnPolicyLearner
    from pearl_py.kernels.on_policy_inference import ActingKernel

FAMILY = "on_policy"
ON_POLICY = Registry()
MLP_ONLY = frozenset({DenseLayer})


def _reference_update(learner: OnPolicyLearner):
    return learner.reference_update


for _variant in (
    Variant("reference", INFERENCE, "cpu", on_policy_inference.make_reference, "algorithm.act under torch.no_grad"),
    Variant("fused", INFERENCE, "cpu", on_policy_inference.make_fused,
            "the MLP actor-critic's act (both MLPs, categorical or Gaussian sampling from per-env noise) as one "
            "numba call over numpy views of the parameters, rows as the inner loop (row-invariant)",
            requires=numba_available, fallback="reference", setup_cached=True, forms=on_policy_inference.FORMS,
            layers=MLP_ONLY),
    Variant("reference", INFERENCE, "gpu", on_policy_inference.make_reference, "algorithm.act under torch.no_grad",
            requires=cuda_available),
    Variant("reference", LEARNER_UPDATE, "cpu", _reference_update,
            "OnPolicyLearner.step: eager autograd and the algorithm's optimizer"),
    Variant("fused", LEARNER_UPDATE, "cpu", fused_on_policy.make_fused_update,
            "PPO's or A2C's minibatch step (both MLPs forward, loss, analytic backward, clip, Adam or RMSprop) as "
            "one numba call over BLAS, in the learner's memory", requires=numba_available, fallback="reference",
            setup_cached=True, forms=fused_on_policy.FORMS, layers=MLP_ONLY),
    Variant("reference", LEARNER_UPDATE, "gpu", _reference_update, "OnPolicyLearner.step on the GPU",
            requires=cuda_available),
):
    ON_POLICY.register(_variant)
FAMILY_REGISTRIES[FAMILY] = ON_POLICY


def build_acting(variant: str, algorithm: OnPolicyAlgorithm, nets: Networks) -> ActingKernel:
    """The ``inference`` kernel ``variant`` over ``nets`` (on their device's class)."""
    device = next(nets.parameters()).device
    return build(INFERENCE, variant, algorithm, nets, device_class=device_class(device), registry=ON_POLICY)


def install_update(variant: str, learner: OnPolicyLearner) -> None:
    """Make ``learner.update`` the ``learner_update`` kernel ``variant`` (on the learner's device's class)."""
    learner.update = learner_update(variant, learner)


def learner_update(variant: str, learner: OnPolicyLearner) -> MinibatchUpdate:
    """The ``learner_update`` kernel ``variant`` over ``learner``'s memory (on its device's class): the ``fused`` and
    reference steps share its parameters and optimizer state, so a run may switch between them (a variant switch
    builds the other this way when first set, after :func:`warm_up` loaded its code)."""
    return build(LEARNER_UPDATE, variant, learner, device_class=device_class(learner.device), registry=ON_POLICY)


def switched_update(variant: str, learner: OnPolicyLearner) -> MinibatchUpdate:
    """:func:`learner_update` with its code loaded first (:func:`warm_up`): what a variant switch builds mid-run, so
    that the variant's first timed call is not a load or a compile."""
    warm_up(learner.algorithm, variant)
    return learner_update(variant, learner)


def warm_up(algorithm: OnPolicyAlgorithm, learner_variant: str | None = None, acting: ActingKernel | None = None
            ) -> None:
    """Run each kernel once where it changes nothing, so that a compiled variant loads (or compiles) its code now
    and not in the first timed call: ``acting`` on zero observations, ``learner_variant`` on a throwaway learner
    (torch's generator is left as it was), the advantage scan on a tiny rollout."""
    import numpy as np
    import torch

    from pearl_py.algorithms.on_policy.learner import OnPolicyLearner
    from pearl_py.replay.gae import gae
    from pearl_py.replay.rollout import RolloutSample

    spec = algorithm.spec

    def obs(rows: int) -> np.ndarray:   # as the env makes them: float32 vectors or uint8 frames
        return np.zeros((rows, *spec.obs_shape), spec.obs_dtype)

    if acting is not None:
        acting(obs(1), np.full((1, acting.noise_width), 0.5, np.float32))
        acting.values(obs(1))
    if learner_variant is not None:
        with torch.random.fork_rng():
            throwaway = OnPolicyLearner(algorithm, "cpu")
            install_update(learner_variant, throwaway)
            rows = 2
            actions = np.zeros(rows, np.int64) if spec.discrete else np.zeros((rows, spec.action_dim), np.float32)
            zeros = np.zeros(rows, np.float32)
            throwaway.update(RolloutSample(obs(rows), actions, zeros, zeros,
                                           np.arange(rows, dtype=np.float32), zeros), 1.0)
    one = np.zeros((1, 1), np.float32)
    gae(one, one, one, one[0], one[0], 0.99, 0.95)
