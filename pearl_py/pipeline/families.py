"""Algorithm families as the pipeline sees them: which executors run each family's plans.

An algorithm's ``family`` (:attr:`pearl_py.algorithms.core.BaseAlgorithm.family`) names a
:class:`Family`: its serial executor (the reference, for serialized plans), its executor for
plans whose stages run at once on this machine, its Ray executor, and whether the performance
model covers its protocol (so ``pearl run --auto``, ``pearl plan`` and the predicted serial plan
work for it). A new family is one :func:`register_family` call beside its algorithm base
(docs/extending.md).

Example::

    >>> family_of(pearl.DQN("CartPole-v1")).name, family_of(pearl.PPO("CartPole-v1")).planned
    ('off_policy', True)
    >>> register_family(Family("evolution", serial=lambda algo, seed, plan=None, **common: MySerial(algo, seed)))
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pearl_py.errors import UserError
from pearl_py.runtime.result import RunResult


class Executor(Protocol):
    """What runs a training: built for an algorithm, a seed and a plan, run for some env steps."""

    def run(self, total_steps: int) -> RunResult: ...


ExecutorFactory = Callable[..., Executor]
"""``factory(algorithm, seed, plan=plan, out_dir=..., eval_episodes=..., eval_freq=..., progress=..., [resume_from=...,
address=...])``."""


@dataclass(frozen=True)
class Family:
    """How the pipeline runs a family; ``parallel`` and ``ray`` None: that kind of plan is refused with the reason."""

    name: str
    serial: ExecutorFactory
    parallel: ExecutorFactory | None = None
    ray: ExecutorFactory | None = None
    planned: bool = True
    """Whether the performance model covers the family's protocol (else runs are the unpredicted serial reference)."""
    adapts: tuple[str, ...] = ()
    """Its executors that take ``adapt`` (the run's monitor, :mod:`pearl_py.runtime.monitor`): ``serial``,
    ``parallel``."""


_FAMILIES: dict[str, Family] = {}


def register_family(family: Family) -> Family:
    """Make the pipeline run algorithms whose ``family`` is ``family.name`` (a second registration replaces the first)."""
    _FAMILIES[family.name] = family
    return family


def family_of(algorithm: Any) -> Family:
    """The registered family of ``algorithm`` (a UserError naming the known ones if it has none)."""
    name = getattr(algorithm, "family", None)
    try:
        return _FAMILIES[name]
    except KeyError:
        raise UserError(f"{type(algorithm).__name__}: no executor is registered for its family {name!r}; known "
                        f"families: {', '.join(_FAMILIES)} (pearl_py.pipeline.families.register_family)") from None


def _off_policy_serial(algorithm: Any, seed: int, plan: Any = None, **common: Any) -> Executor:
    from pearl_py.runtime.serial import SerialExecutor

    return SerialExecutor(algorithm, seed, plan=plan, **common)


def _off_policy_parallel(algorithm: Any, seed: int, plan: Any = None, **common: Any) -> Executor:
    from pearl_py.runtime.parallel import ParallelExecutor

    return ParallelExecutor(algorithm, plan, seed, **common)


def _off_policy_ray(algorithm: Any, seed: int, plan: Any = None, **common: Any) -> Executor:
    from pearl_py.runtime.ray_backend import RayExecutor

    return RayExecutor(algorithm, plan, seed, **common)


def _on_policy_ray(algorithm: Any, seed: int, plan: Any = None, **common: Any) -> Executor:
    from pearl_py.runtime.ray_backend.on_policy import OnPolicyRayExecutor

    return OnPolicyRayExecutor(algorithm, plan, seed, **common)


def _on_policy_serial(algorithm: Any, seed: int, plan: Any = None, **common: Any) -> Executor:
    from pearl_py.runtime.on_policy_serial import OnPolicySerialExecutor

    return OnPolicySerialExecutor(algorithm, seed, plan=plan, **common)


def _on_policy_parallel(algorithm: Any, seed: int, plan: Any = None, **common: Any) -> Executor:
    from pearl_py.runtime.parallel.on_policy import OnPolicyParallelExecutor

    return OnPolicyParallelExecutor(algorithm, plan, seed, **common)


OFF_POLICY = register_family(Family("off_policy", serial=_off_policy_serial, parallel=_off_policy_parallel,
                                    ray=_off_policy_ray, adapts=("serial", "parallel")))
ON_POLICY = register_family(Family("on_policy", serial=_on_policy_serial, parallel=_on_policy_parallel,
                                   ray=_on_policy_ray, adapts=("serial", "parallel")))
