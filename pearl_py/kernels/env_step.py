"""The ``env_step`` kernel's variants: which vector env steps the run's envs (all under the envs room's SAME_STEP
autoreset contract, :mod:`pearl_py.envs.vector`).

=============  ======  =====================================================================================
variant        device  what it is
=============  ======  =====================================================================================
reference      cpu     gymnasium ``SyncVectorEnv`` of single envs with their family's preprocessing (any env)
native_vector  cpu     the env's own numpy vector env (gymnasium's ``vector_entry_point``: CartPole), one call
                       for all envs
=============  ======  =====================================================================================

A builder takes ``(env_id, n_envs, seed, frame_stack, env_kwargs)`` and returns the vector env. The env-step
workload names only the env id, so a run whose env the native vector env cannot make as configured (frames
stacked, ``env_kwargs``) gets the reference with a warning (``fallback``). The variants are registered with every
algorithm family's registry: every family's loop steps envs. Example::

    >>> envs = kernels.build(ENV_STEP, "native_vector", "CartPole-v1", 8, 0)
    >>> REGISTRY.get(ENV_STEP, "native_vector", "cpu").supports(pendulum_env_step_kernel)
    "gymnasium registers no numpy vector_entry_point for 'Pendulum-v1' (it has one for CartPole-v0, CartPole-v1)"
"""
from __future__ import annotations

import gymnasium as gym

from pearl_py.envs import EnvKwargs, make_native_vector_env, make_vector_env, native_vector_reason
from pearl_py.kernels.registry import FAMILY_REGISTRIES, KernelUnavailable, Variant
from pearl_py.protocol.kernel import ENV_STEP


def make_native(env_id: str, n_envs: int, seed: int, frame_stack: int | None = None,
                env_kwargs: EnvKwargs | None = None) -> gym.vector.VectorEnv:
    """:func:`~pearl_py.envs.make_native_vector_env`; :class:`KernelUnavailable` (the reason) where it cannot make
    ``env_id`` as configured."""
    reason = native_vector_reason(env_id, frame_stack, env_kwargs)
    if reason is not None:
        raise KernelUnavailable(f"env_step variant 'native_vector': {reason}")
    return make_native_vector_env(env_id, n_envs, seed, frame_stack, env_kwargs)


VARIANTS = (
    Variant("reference", ENV_STEP, "cpu", make_vector_env,
            "gymnasium SyncVectorEnv of single envs with their family's preprocessing"),
    Variant("native_vector", ENV_STEP, "cpu", make_native,
            "the env's own numpy vector env (gymnasium's vector_entry_point), reset in the ending step",
            fallback="reference", env_support=native_vector_reason),
)

for _registry in FAMILY_REGISTRIES.values():
    for _variant in VARIANTS:
        _registry.register(_variant)
