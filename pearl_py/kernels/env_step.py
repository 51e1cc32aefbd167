"""The ``env_step`` kernel's variants: which vector env steps the run's envs (all under the envs room's SAME_STEP
autoreset contract, :mod:`pearl_py.envs.vector`).

=============  ======  =====================================================================================
variant        device  what it is
=============  ======  =====================================================================================
reference      cpu     gymnasium ``SyncVectorEnv`` of single envs with their family's preprocessing (any env; one
                       env with array observations: ``OneEnvVector``, the same results without the batching)
native_vector  cpu     the env's own numpy vector env (gymnasium's ``vector_entry_point``: CartPole), one call
                       for all envs
envpool        cpu     EnvPool's C++ env (``envpool`` extra: CartPole, Acrobot, MountainCar; HalfCheetah, Hopper,
                       Walker2d v4 and v5), one thread
envpool_t<n>   cpu     the same with ``n`` worker threads (2, 4, 8 where the process may use ``n`` cores); a
                       replica is charged ``n`` cores (``Variant.cores``)
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
from pearl_py.kernels.affinity import usable_cpus
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


ENVPOOL_THREADS = (2, 4, 8)
"""Worker thread counts beyond one EnvPool is offered at (each its own variant, ``envpool_t<n>``, calibrated by
``pearl profile`` like any variant; offered where the process may use ``n`` cores)."""


def envpool_threads_available(threads: int) -> Callable[[], tuple[bool, str]]:
    """Whether EnvPool with ``threads`` worker threads can run here: the extra, and a core per thread."""

    def available() -> tuple[bool, str]:
        ok, why = envpool_available()
        cores = len(usable_cpus())
        if ok and threads > cores:
            return False, f"EnvPool with {threads} worker threads needs {threads} cores; this process may use {cores}"
        return ok, why

    return available


def envpool_variant(threads: int) -> Variant:
    """EnvPool's env_step variant with ``threads`` worker threads: ``envpool`` at one, ``envpool_t<n>`` beyond."""
    name = "envpool" if threads == 1 else f"envpool_t{threads}"

    def make(env_id: str, n_envs: int, seed: int, frame_stack: int | None = None,
             env_kwargs: EnvKwargs | None = None) -> gym.vector.VectorEnv:
        return make_envpool_vector_env(env_id, n_envs, seed, frame_stack, env_kwargs, threads=threads)

    return Variant(name, ENV_STEP, "cpu", refusing(name, make, envpool_reason),
                   f"EnvPool's C++ env, {threads} worker thread(s), the ended envs reset in the ending step",
                   requires=envpool_threads_available(threads), fallback="reference", env_support=envpool_reason,
                   cores=threads)


VARIANTS = (
    Variant("reference", ENV_STEP, "cpu", make_vector_env,
            "gymnasium SyncVectorEnv of single envs with their family's preprocessing"),
    Variant("native_vector", ENV_STEP, "cpu", refusing("native_vector", make_native_vector_env, native_vector_reason),
            "the env's own numpy vector env (gymnasium's vector_entry_point), reset in the ending step",
            fallback="reference", env_support=native_vector_reason),
    *(envpool_variant(n) for n in (1, *ENVPOOL_THREADS)),
)

for _registry in FAMILY_REGISTRIES.values():
    for _variant in VARIANTS:
        _registry.register(_variant)
