"""Algorithm families as objects: how a family's algorithms run, are simulated and are calibrated.

An algorithm's ``family`` names a registered :class:`Family` (:func:`family_of`): its serial, parallel and Ray
executors, whether the performance model covers it (``planned``), the schedule a simulation plays and the runs
``pearl profile`` times. Built in: :data:`OFF_POLICY`, :data:`ON_POLICY`; a new family is one :func:`register_family`
call beside its algorithm base (docs/extending.md).

Example::

    >>> family_of(pearl.DQN("CartPole-v1")).name, family_of(pearl.PPO("CartPole-v1")).planned
    ('off_policy', True)
    >>> family_of(ppo).simulated_schedule(ppo.config, total_steps=None, actors=1, rounds=40).rollouts
    40
    >>> register_family(Family("evolution", serial=lambda algo, seed, plan=None, **common: MySerial(algo, seed)))
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pearl_py.errors import PlanningError, UserError
from pearl_py.protocol.schedule import RolloutSchedule, SimSchedule
from pearl_py.runtime.result import RunResult


class Executor(Protocol):
    """What runs a training: built for an algorithm, a seed and a plan, run for some env steps."""

    def run(self, total_steps: int) -> RunResult: ...


ExecutorFactory = Callable[..., Executor]
"""``factory(algorithm, seed, plan=plan, out_dir=..., eval_episodes=..., eval_freq=..., progress=..., [resume_from=...,
address=...])``."""


@dataclass(frozen=True)
class CalibrationRun:
    """One run of a family's calibration config (:mod:`pearl_py.profile.loop_overhead`): the algorithm, its env
    steps, its updates per training round."""

    algorithm: Any
    steps: int
    updates_per_round: int


@dataclass(frozen=True)
class Family:
    """How the pipeline runs a family; ``parallel`` and ``ray`` None: that kind of plan is refused with the reason.

    The base simulates and calibrates nothing (a user's family runs unpredicted); :class:`OffPolicyFamily` and
    :class:`OnPolicyFamily` override :meth:`simulated_schedule` and :meth:`calibration_runs`."""

    name: str
    serial: ExecutorFactory
    parallel: ExecutorFactory | None = None
    ray: ExecutorFactory | None = None
    planned: bool = True
    """Whether the performance model covers the family's protocol (else runs are the unpredicted serial reference)."""
    adapts: tuple[str, ...] = ()
    """Its executors that take ``adapt`` (the run's monitor, :mod:`pearl_py.runtime.monitor`): ``serial``,
    ``parallel``."""
    switches_modes: bool = False
    """Whether its serial and parallel executors hand a run to each other mid-run when the monitor decides the other
    mode is faster (:class:`~pearl_py.runtime.session.ModeSwitched`)."""
    tuned: bool = False
    """Whether ``pearl run --tune`` trials its plans (``pearl_py.pipeline.tune``)."""
    threaded: bool = False
    """Whether its learner runs beside its actors, so ``pearl profile`` times its threaded variants at several
    thread counts (a synchronous learner runs while its actors wait: one thread, as calibrated)."""

    def simulated_schedule(self, config: Any, total_steps: int | None, actors: int, rounds: int) -> Any:
        """The schedule a simulation of a plan plays (:func:`pearl_py.simulate.simulator.simulate`): ``total_steps``
        env steps, or None: ``rounds`` training rounds (with ``actors`` actor replicas)."""
        raise PlanningError(f"simulate: the simulator has no schedule for the {self.name} family")

    def calibration_runs(self) -> tuple[CalibrationRun, ...]:
        """The family's calibration configs, whose serial runs give its loop's own work (none: not timed)."""
        return ()


STEPS_PER_ACTOR = 20
"""An off-policy simulation's least vector steps per actor replica."""


class OffPolicyFamily(Family):
    """Replay-based algorithms (DQN, DDPG, TD3, SAC): rounds of ``gradient_steps`` updates every ``train_freq``
    vector steps, actors running ahead of the learner within the policy lag."""

    def simulated_schedule(self, config: Any, total_steps: int | None, actors: int, rounds: int) -> SimSchedule:
        steps = total_steps or max(rounds * config.train_freq, STEPS_PER_ACTOR * actors) * config.n_envs
        return SimSchedule.from_config(config, steps, learning_starts=0)

    def calibration_runs(self) -> tuple[CalibrationRun, ...]:
        """The README's DQN CartPole shapes (one env), few or many updates per step, long or short rounds."""
        from pearl_py.algorithms.dqn import DQN

        return tuple(CalibrationRun(DQN("CartPole-v1", net_arch=[64, 64], batch_size=64, learning_starts=1_000,
                                        train_freq=train_freq, gradient_steps=updates, buffer_size=10_000), 6_000,
                                    updates)
                     for train_freq, updates in ((4, 1), (4, 4), (1, 1)))


class OnPolicyFamily(Family):
    """Synchronous rollouts (PPO, A2C): every actor collects, then the learner runs its epochs, then parameters go
    out (:class:`~pearl_py.protocol.schedule.RolloutSchedule`)."""

    def simulated_schedule(self, config: Any, total_steps: int | None, actors: int, rounds: int) -> RolloutSchedule:
        return RolloutSchedule.from_config(config, total_steps or rounds * config.rollout_size)

    def calibration_runs(self) -> tuple[CalibrationRun, ...]:
        """The zoo's PPO CartPole shapes (8 envs), few or many epochs per rollout, long or short rollouts."""
        from pearl_py.algorithms.ppo import PPO

        return tuple(CalibrationRun(PPO("CartPole-v1", n_envs=8, n_steps=n_steps, batch_size=8 * n_steps,
                                        n_epochs=epochs), 16_384, epochs)
                     for n_steps, epochs in ((32, 2), (32, 16), (8, 2)))


_FAMILIES: dict[str, Family] = {}


def register_family(family: Family) -> Family:
    """Make the pipeline run algorithms whose ``family`` is ``family.name`` (a second registration replaces the
    first)."""
    _FAMILIES[family.name] = family
    return family


def family_named(name: str | None, whose: str = "the algorithm") -> Family:
    """The registered family ``name`` (a UserError naming ``whose`` family it is and the known ones if none is)."""
    if name not in _FAMILIES:
        raise UserError(f"{whose}: no executor is registered for its family {name!r}; known families: "
                        f"{', '.join(_FAMILIES)} (pearl_py.runtime.families.register_family)")
    return _FAMILIES[name]


def family_of(algorithm: Any) -> Family:
    """The registered family of ``algorithm``, looked up once where a run, a simulation or a calibration starts."""
    return family_named(getattr(algorithm, "family", None), type(algorithm).__name__)


def registered_families() -> tuple[Family, ...]:
    """Every registered family, in registration order (the built-in ones first)."""
    return tuple(_FAMILIES.values())


def _lazy(path: str, serial: bool = False) -> ExecutorFactory:
    """The factory of the executor class ``module:Class``, imported when a run builds one (a serial executor takes
    ``plan`` by keyword, the others second)."""
    def build(algorithm: Any, seed: int, plan: Any = None, **common: Any) -> Executor:
        module, name = path.split(":")
        executor = getattr(importlib.import_module(module), name)
        return executor(algorithm, seed, plan=plan, **common) if serial else executor(algorithm, plan, seed, **common)

    return build


OFF_POLICY = register_family(OffPolicyFamily(
    "off_policy", serial=_lazy("pearl_py.runtime.serial:SerialExecutor", serial=True),
    parallel=_lazy("pearl_py.runtime.parallel.executor:ParallelExecutor"),
    ray=_lazy("pearl_py.runtime.ray_backend.executor:RayExecutor"),
    adapts=("serial", "parallel"), switches_modes=True, tuned=True, threaded=True))
ON_POLICY = register_family(OnPolicyFamily(
    "on_policy", serial=_lazy("pearl_py.runtime.on_policy_serial:OnPolicySerialExecutor", serial=True),
    parallel=_lazy("pearl_py.runtime.parallel.on_policy:OnPolicyParallelExecutor"),
    ray=_lazy("pearl_py.runtime.ray_backend.on_policy:OnPolicyRayExecutor"), adapts=("serial", "parallel")))
