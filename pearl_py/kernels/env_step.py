"""The ``env_step`` kernel's variants: which vector env steps the run's envs (all under the envs room's SAME_STEP
autoreset contract, :mod:`pearl_py.envs.vector`).

=============  ======  =====================================================================================
variant        device  what it is
=============  ======  =====================================================================================
reference      cpu     gymnasium ``SyncVectorEnv`` of single envs with their family's preprocessing (any env)
native_vector  cpu     the env's own numpy vector env (gymnasium's ``vector_entry_point``: CartPole), one call
                       for all envs
envpool        cpu     EnvPool's C++ env (``envpool`` extra: CartPole, Acrobot, MountainCar), one thread
=============  ======  =====================================================================================

A builder takes ``(env_id, n_envs, seed, frame_stack, env_kwargs)`` and returns the vector env. The env-step
workload names only the env id, so a run whose env a backend cannot make as configured (frames stacked,
``env_kwargs``) gets the reference with a warning (``fallback``). The variants are registered with every
algorithm family's registry: every family's loop steps envs. Example::

    >>> envs = kernels.build(ENV_STEP, "native_vector", "CartPole-v1", 8, 0)
    >>> REGISTRY.get(ENV_STEP, "native_vector", "cpu").supports(pendulum_env_step_kernel)
    "gymnasium registers no numpy vector_entry_point for 'Pendulum-v1' (it has one for CartPole-v0, CartPole-v1)"
"""
from __future__ import annotations

from collections.abc import Callable

import gymnasium as gym

from pearl_py.envs import EnvKwargs, make_native_vector_env, make_vector_env, native_vector_reason
from pearl_py.envs.envpool_vector import envpool_available, envpool_reason, make_envpool_vector_env
from pearl_py.kernels.registry import FAMILY_REGISTRIES, KernelUnavailable, Variant
from pearl_py.protocol.kernel import ENV_STEP

Make = Callable[..., gym.vector.VectorEnv]


def refusing(name: str, make: Make, reason: Callable[..., str | None]) -> Make:
    """``make``, raising :class:`KernelUnavailable` (``reason``'s answer) for an env it cannot make as configured."""

    def build(env_id: str, n_envs: int, seed: int, frame_stack: int | None = None,
              env_kwargs: EnvKwargs | None = None) -> gym.vector.VectorEnv:
        why = reason(env_id, frame_stack, env_kwargs)
        if why is not None:
            raise KernelUnavailable(f"env_step variant {name!r}: {why}")
        return make(env_id, n_envs, seed, frame_stack, env_kwargs)

    return build


VARIANTS = (
    Variant("reference", ENV_STEP, "cpu", make_vector_env,
            "gymnasium SyncVectorEnv of single envs with their family's preprocessing"),
    Variant("native_vector", ENV_STEP, "cpu", refusing("native_vector", make_native_vector_env, native_vector_reason),
            "the env's own numpy vector env (gymnasium's vector_entry_point), reset in the ending step",
            fallback="reference", env_support=native_vector_reason),
    Variant("envpool", ENV_STEP, "cpu", refusing("envpool", make_envpool_vector_env, envpool_reason),
            "EnvPool's C++ env, one worker thread, the ended envs reset in the ending step", requires=envpool_available,
            fallback="reference", env_support=envpool_reason),
)

for _registry in FAMILY_REGISTRIES.values():
    for _variant in VARIANTS:
        _registry.register(_variant)
