"""The plan a run executes: the local CPU as the serial reference, an optimized plan, or a file.

Example::

    >>> plan = resolve_plan(algo, "auto")          # calibrate if needed, optimize on this machine (either mode)
    >>> plan = resolve_plan(algo, "local")         # every kernel on the local CPU, serially
    >>> plan = resolve_plan(algo, "out/plan.yaml") # a plan written by `pearl plan`
    >>> [p.mode for p in candidate_plans(algo, k=3)]   # what `--tune` trials
    ['overlapped', 'serialized', 'overlapped']
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pearl_py.algorithms.off_policy.base import Algorithm
from pearl_py.errors import PlanningError
from pearl_py.optimize.api import plan as optimize
from pearl_py.optimize.api import ranked_plans
from pearl_py.pipeline.plan_cache import keep_plan, plan_key, reused_plan
from pearl_py.pipeline.plan_check import check_plan, load_checked_plan
from pearl_py.plan import Plan
from pearl_py.platform import Platform
from pearl_py.profile.coverage import COVERS_KEY, MLP, NETWORKS, cnn_extractors, covered
from pearl_py.protocol.kernel import ENV_STEP, INFERENCE, LEARNER_UPDATE
from pearl_py.runtime.kernel_devices import plan_problems

PLAN_WORDS = ("auto", "local", "serial")
"""What ``plan`` may be besides a :class:`Plan` or a plan file's path."""


@dataclass(frozen=True)
class CalibrationNeeds:
    """What of this machine's calibration a run's plans draw on: the kernel kinds, the algorithm family whose
    networks they are, the envs whose ``env_step`` is timed and up to how many of them, the networks (a plain MLP,
    the run's CNN extractor), and the variants with a one-off setup (the compiled learner update: a compile per
    shape) that the run would not pay back by the model, left for a run that would.

    Example::

        >>> CalibrationNeeds.of(pearl.DQN("CartPole-v1"), total_steps=50_000).describe()
        "off_policy's kernels learner_update, inference, replay_insert, replay_sample, param_sync; env_step of
        CartPole-v1; deferred: learner_update/compiled"
        >>> needs = CalibrationNeeds.of(pearl.DQN("BreakoutNoFrameskip-v4", net_arch=[]))   # NatureCNN, one env
        >>> needs.networks, needs.max_envs
        (('nature_cnn',), 1)
    """

    kinds: tuple[str, ...]
    family: str | None
    """None: every family's (``pearl profile``)."""
    envs: tuple[str, ...]
    networks: tuple[str, ...]
    """The networks its kernels are (:data:`~pearl_py.profile.coverage.NETWORKS`): ``mlp`` for the kinds' one model,
    a CNN extractor for their ``cnn`` model."""
    deferred: tuple[tuple[str, str], ...] = ()
    """``(variant key, why)`` of the variants left uncalibrated (``profiler.profile``'s ``skip``)."""
    only: tuple[str, ...] | None = None
    """Calibrate just these variants (``kind/variant`` keys) of the kinds; None: every one not deferred."""
    workloads: tuple[tuple[str, Any], ...] | None = None
    """``(kind, workload)`` of the run's kernels of a kind that may run threaded: a threaded model that cannot beat a
    one-thread one on them is left uncalibrated (:mod:`pearl_py.estimate.thread_bound`); None: every one is timed."""
    max_envs: int | None = None
    """The most envs one ``env_step`` of the run steps (a plan's actors step shares of them); None: any number."""

    @classmethod
    def of(cls, algorithm: Any, total_steps: int | None = None) -> CalibrationNeeds:
        """Everything ``pearl profile`` calibrates (``algorithm`` None), or what ``algorithm``'s plans in either
        protocol mode cost from a calibration over a run of ``total_steps`` (None: of unknown length, where
        every variant may pay back)."""
        from pearl_py.estimate.calibration import CALIBRATED_ENVS, KINDS

        from pearl_py.estimate.features import model_group

        if algorithm is None:
            return cls(KINDS, None, CALIBRATED_ENVS, NETWORKS)
        kernels = _kernels(algorithm)
        groups = {(str(kernel.kind), model_group(kernel.workload)) for kernel in kernels}
        kinds = {kind for kind, _ in groups}
        nets = {group for kind, group in groups if kind in NETWORK_KINDS}
        return cls(tuple(k for k in KINDS if k in kinds), algorithm.family,
                   tuple(sorted(group for kind, group in groups if kind == ENV_STEP)),
                   (MLP,) * (None in nets) + ((_extractor(algorithm),) if "cnn" in nets else ()),
                   _unpaid_setups(algorithm, total_steps), workloads=_threaded_workloads(kernels),
                   max_envs=max((kernel.workload.n_envs for kernel in kernels if kernel.kind == ENV_STEP), default=None))

    def missing(self, calibration: Any) -> CalibrationNeeds | None:
        """What of these needs ``calibration`` lacks (None: nothing): a reference model of one of the kernels, one
        whose grid did not cover the run (another CNN extractor, more envs: :mod:`pearl_py.profile.coverage`; it is
        timed again over both), or a variant an earlier run deferred that this run would pay back."""
        from pearl_py.estimate.calibration import DEFERRED_KEY, model_key, network_family

        family = self.family   # None (every family's) keys models as the off-policy family's (``model_key``)
        extractors = cnn_extractors(self.networks)
        nets = (None,) * (MLP in self.networks) + ("cnn",) * bool(extractors)
        lacking, timed = [], set(extractors)   # (kind, group) to time; the CNN extractors to time them on
        for kind in self.kinds:
            for group in self.envs if kind == ENV_STEP else nets if kind in NETWORK_KINDS else (None,):
                key = model_key(kind, "reference", group, family=network_family(kind, family))
                if key not in calibration.models or not covered(calibration, key, extractors if group == "cnn" else (),
                                                                self.max_envs if kind == ENV_STEP else None):
                    lacking.append((kind, group))
                    timed |= set((calibration.meta.get(COVERS_KEY, {}).get(key) or {}).get("extractors", ()))
        mine = {model_key for model_key, _ in self.deferred}
        wanted = [key for key in calibration.meta.get(DEFERRED_KEY, {}) if key not in mine
                  and self._kind_of(key) is not None and self._threads_may_win(calibration, key)]
        if not (lacking or wanted):
            return None
        kinds = {kind for kind, _ in lacking} | {self._kind_of(key) for key in wanted}
        groups = {group for kind, group in lacking if kind in NETWORK_KINDS}
        networks = (MLP,) * (None in groups) + cnn_extractors(timed) * ("cnn" in groups) if lacking else self.networks
        return CalibrationNeeds(tuple(k for k in self.kinds if k in kinds), self.family,
                                tuple(g for k, g in lacking if k == ENV_STEP), networks,
                                self.deferred, None if lacking else tuple(wanted), self.workloads, self.max_envs)

    def _kind_of(self, key: str) -> str | None:
        """Which of these kinds a deferred model ``key`` is a model of, under this family's keys (None: another
        family's network model, or a kind these needs lack): a DQN run's deferred ``learner_update/compiled`` is
        not PPO's ``on_policy/learner_update/compiled``."""
        from pearl_py.estimate.calibration import model_key, network_family

        return next((kind for kind in self.kinds
                     if key.startswith(model_key(kind, "", family=network_family(kind, self.family)))), None)

    def _threads_may_win(self, calibration: Any, key: str) -> bool:
        """Whether this run wants a deferred model ``key`` on account of its threads: a one-thread key always; a
        threaded one (``learner_update/reference@2threads``) where it could beat a one-thread variant on this run's
        workloads (:func:`~pearl_py.estimate.thread_bound.threads_can_win`)."""
        from pearl_py.estimate.calibration import network_family
        from pearl_py.estimate.thread_bound import threads_can_win

        base, _, threads = key.partition("@")
        if not threads:
            return True
        family = self.family
        kind, variant = base.removeprefix(f"{family}/").split("/")[:2]
        mine = [workload for k, workload in self.workloads or () if k == kind]
        return threads_can_win(calibration, kind, variant, int(threads.removesuffix("threads")), mine,
                               network_family(kind, family))

    def describe(self) -> str:
        """``on_policy's kernels learner_update, advantage; env_step of Pendulum-v1; CNN networks; deferred: ...``."""
        if self.only is not None:
            return ", ".join(self.only)
        kinds = [k for k in self.kinds if k != ENV_STEP or not self.envs]
        parts = [f"{self.family or 'every family'}'s kernels " + ", ".join(kinds)] if kinds else []
        parts += [f"env_step of {env}" for env in self.envs]
        parts += [f"CNN networks ({', '.join(cnn_extractors(self.networks))})"] if cnn_extractors(self.networks) else []
        return "; ".join(parts + ([f"deferred: {', '.join(k for k, _ in self.deferred)}"] if self.deferred else []))

    def profile_options(self) -> dict[str, Any]:
        """:func:`~pearl_py.profile.profiler.profile`'s arguments that calibrate these needs."""
        workloads: dict[str, list[Any]] | None = None
        if self.workloads is not None:
            workloads = {}
            for kind, workload in self.workloads:
                workloads.setdefault(kind, []).append(workload)
        return {"kinds": self.kinds, "families_of": (self.family,) if self.family else None, "envs": self.envs,
                "networks": self.networks, "max_envs": self.max_envs, "skip": dict(self.deferred), "only": self.only,
                "workloads": workloads}


NETWORK_KINDS = (LEARNER_UPDATE, INFERENCE)
"""Kinds whose calibration has a model of its own for CNN networks (``model_group`` "cnn")."""


def _kernels(algorithm: Any) -> list[Any]:
    """Every kernel of ``algorithm``'s protocol, both modes."""
    return [kernel for serialized in (False, True) for kernel in algorithm.protocol(serialized=serialized).kernels()]


def _extractor(algorithm: Any) -> str:
    """The CNN extractor of ``algorithm``'s networks (``nature_cnn``, ``small_cnn``: ``auto`` resolved)."""
    from pearl_py.algorithms.cnn import resolve_extractor

    return resolve_extractor(algorithm.spec, algorithm.config.features_extractor)


def _threaded_workloads(kernels: list[Any]) -> tuple[tuple[str, Any], ...]:
    """``(kind, workload)`` of ``kernels`` (each once) of a kind that may run threaded."""
    return tuple(dict.fromkeys((str(kernel.kind), kernel.workload) for kernel in kernels if kernel.kind.threaded))


def _unpaid_setups(algorithm: Any, total_steps: int | None) -> tuple[tuple[str, str], ...]:
    """``(variant key, why)`` of each CPU variant with a one-off setup whose modelled setup the run's calls of its
    kernel would not pay back against the reference by the spec-only model (``estimators/roofline.yaml``):
    calibrating it (a compile per shape) would cost the first run more than the variant could return."""
    from pearl_py.estimate import Estimator
    from pearl_py.estimate.calibration import model_key, network_family
    from pearl_py.estimate.cost import Infeasible
    from pearl_py.estimate.estimator import registered_variants

    if total_steps is None:
        return ()
    model, cpu = Estimator(use_cache=False), Platform.local().by_kind("cpu")[0]
    out = {}
    for kernel in algorithm.protocol().kernels():
        calls = kernel.rate * total_steps
        for name, _ in registered_variants(kernel.kind, cpu.kind, algorithm.family):
            setup = model.params.setup_s(name, kernel.kind) if name != "reference" else 0.0
            if setup <= 0:
                continue
            try:
                saved = model.kernel_cost(kernel, cpu, "reference").latency_s - model.kernel_cost(kernel, cpu,
                                                                                                  name).latency_s
            except Infeasible:
                continue
            if saved > 0 and setup / saved <= calls:
                continue
            key = model_key(str(kernel.kind), name, family=network_family(str(kernel.kind), algorithm.family))
            out[key] = (f"its modelled one-off setup of {setup:.0f} s would not pay back in this run's "
                        f"{calls:,.0f} {kernel.kind} calls" + (f" (the model's break-even: {setup / saved:,.0f})"
                                                                if saved > 0 else ""))
    return tuple(sorted(out.items()))


def ensure_calibration(log: Callable[[str], None] = print, algorithm: Any = None,
                       total_steps: int | None = None) -> None:
    """Profile this machine once for what ``algorithm``'s plans over ``total_steps`` need
    (:class:`CalibrationNeeds`; a minute or two; its progress goes to ``log``) when no calibration is cached, and
    top the cache up when it lacks what they need (another family's networks, another env's step, CNN networks,
    a deferred variant a longer run pays back: each profiled on the first run that needs it, then cached).
    ``pearl profile`` calibrates everything at once."""
    from pearl_py.estimate.calibration import Calibration

    needs = CalibrationNeeds.of(algorithm, total_steps)
    cached = Calibration.load_default()
    if cached is None:
        log(f"no calibration of this machine is cached: profiling what this run needs once ({needs.describe()}; "
            "`pearl profile` calibrates everything) ...")
        _profile_into_cache(log, **needs.profile_options())
        return
    missing = needs.missing(cached) if cached.models else None  # an empty calibration: "model every cost"
    if missing is not None:
        log(f"the cached calibration lacks what this run needs ({missing.describe()}): profiling it once ...")
        _profile_into_cache(log, gpus=False, into=cached, **missing.profile_options())


def _profile_into_cache(log: Callable[[str], None], **options: Any) -> None:
    """Profile (``profiler.profile(**options)``, imported here: a run with its calibration cached does not load the
    profiler) and save the calibration to the cache."""
    from pearl_py.profile.profiler import profile

    path = profile(log=log, **options).save()
    log(f"calibration cached at {path}; later runs reuse it")


def local_serial_plan(algorithm: Algorithm, total_steps: int | None = None, dedicated: bool = False) -> Plan:
    """Every kernel on the local CPU, stages one after another: the serial executor's plan, predicted."""
    local = Platform.local()
    cpu = local.by_kind("cpu")[0].name
    protocol = algorithm.protocol(serialized=True)
    pins = {kernel.name: cpu for kernel in protocol.kernels()}
    return optimize(protocol, local, "throughput", {"pin": pins}, pareto_points=2, horizon=total_steps,
                    estimator=_estimator(dedicated))


def _estimator(dedicated: bool) -> Any:
    """This machine's estimator; ``dedicated``: multi-threaded options valued alone (docs/optimizer.md, "Robust")."""
    from pearl_py.estimate import Estimator

    return Estimator(dedicated=dedicated)


def plan_modes(one_process: bool) -> tuple[bool, ...]:
    """The protocol modes (``algorithm.protocol(serialized=...)``) the optimizer chooses from, the parallel one first
    (it wins ties): both for the local runtime (``one_process``), the parallel one alone on Ray."""
    return (False, True) if one_process else (False,)


def candidate_plans(algorithm: Algorithm, k: int, objective: str = "throughput", total_steps: int | None = None,
                    log: Callable[[str], None] = print, dedicated: bool = False) -> list[Plan]:
    """The ``k`` best plans for this machine by the model, over both protocol modes, best first.

    Overlapped plans run on the parallel runtime, serialized ones on the serial executor; where the model finds
    them close, run-to-run noise may order them otherwise, so ``--tune`` trials both. Only
    plans this machine can run as planned (:func:`~pearl_py.runtime.kernel_devices.plan_problems` finds
    none) are returned, each one
    dropped said in ``log``. Calibrates first if needed; on ties the overlapped plan (the one
    ``resolve_plan(algo, "auto")`` runs) comes first.
    """
    ensure_calibration(log, algorithm, total_steps)
    local = Platform.local()
    plans = [plan for serialized in plan_modes(one_process=True)
             for plan in ranked_plans(algorithm.protocol(serialized=serialized), local, objective, k=k,
                                      horizon=total_steps, estimator=_estimator(dedicated))]
    runnable = []
    for plan in plans:  # only plans this machine runs as planned are trialled (and so can be kept)
        problems = plan_problems(plan, family=algorithm.family)
        if problems:
            article = "an" if plan.mode[0] in "aeiou" else "a"
            log(f"tuning: skipping {article} {plan.mode} candidate this machine cannot run as planned: {problems[0]}")
        else:
            runnable.append(plan)
    if not runnable:
        raise PlanningError("tune: no candidate plan can run on this machine as planned: "
                            + plan_problems(plans[0], family=algorithm.family)[0])
    figure = "time_per_sample_s" if objective == "throughput" else "energy_per_sample_j"
    return sorted(runnable, key=lambda plan: float(f"{getattr(plan.prediction.figures, figure):.9g}"))[:k]  # ties


def auto_plan(algorithm: Algorithm, objective: str = "throughput", total_steps: int | None = None,
              one_process: bool = True, dedicated: bool = False) -> Plan:
    """The optimizer's plan for this machine: the best plan of the algorithm's parallel protocol (overlapped or
    synchronous, actor processes) and, with ``one_process``, the best serialized one (every stage in this
    process), whichever the model finds faster (or more frugal). With
    the run's length (``total_steps``) the two compare over the whole run, the actors'
    start-up included (a short run may not repay it, :mod:`pearl_py.optimize.whole_run`); else in the steady
    state. On a tie the parallel plan. ``dedicated``: multi-threaded options valued by their calibrated cost
    alone, not as expected beside other processes.

    Example::

        >>> auto_plan(pearl.PPO("CartPole-v1", n_envs=8, n_steps=32), total_steps=100_000).mode
        'serialized'
    """
    local = Platform.local()
    estimator = _estimator(dedicated)
    plans = [optimize(algorithm.protocol(serialized=serialized), local, objective, horizon=total_steps,
                      estimator=estimator) for serialized in plan_modes(one_process)]
    return min(plans, key=lambda plan: _plan_cost(plan, objective))   # min keeps the first of equals


def cluster_plan(algorithm: Algorithm, address: str, objective: str = "throughput", total_steps: int | None = None,
                 dedicated: bool = False, log: Callable[[str], None] | None = None) -> Plan:
    """The optimizer's plan over the Ray cluster at ``address`` (its nodes read as a platform, each a host:
    :mod:`pearl_py.runtime.ray_backend.cluster`), with the discrete-event simulator's prediction of the same plan
    beside the model's; a run on the cluster places its components on the planned nodes. With ``log``, this machine
    is calibrated first where needed (:func:`ensure_calibration`), once the cluster answered.

    Example::

        >>> plan = cluster_plan(pearl.PPO("CartPole-v1", n_envs=8), "127.0.0.1:6379", total_steps=100_000)
        >>> plan.platform, plan.prediction.simulation.samples_per_s > 0
        ('ray-cluster', True)
    """
    from pearl_py.runtime.ray_backend.cluster import cluster_platform
    from pearl_py.simulate.inputs import simulate_plan, with_simulation

    platform = cluster_platform(address)
    if log is not None:
        ensure_calibration(log, algorithm, total_steps)
    estimator = _estimator(dedicated)
    planned = optimize(algorithm.protocol(), platform, objective, horizon=total_steps, estimator=estimator)
    return with_simulation(planned, simulate_plan(planned, algorithm, platform, estimator=estimator))


def _plan_cost(plan: Plan, objective: str) -> float:
    """What ``auto`` minimises: the whole run's seconds when known (throughput), else the objective per sample."""
    figures = plan.prediction.figures
    if objective == "throughput":
        whole = plan.prediction.run
        return float(f"{whole.seconds if whole is not None else figures.time_per_sample_s:.9g}")
    return float(f"{figures.energy_per_sample_j:.9g}")


def resolve_plan(algorithm: Algorithm, plan: Plan | str | Path, objective: str = "throughput",
                 log: Callable[[str], None] = print, total_steps: int | None = None, one_process: bool = True,
                 dedicated: bool = False, address: str | None = None, reuse: bool = False) -> Plan:
    """"serial": all on one CPU, unpredicted; "local": the same, predicted; "auto": optimized
    on :meth:`Platform.local` after calibrating (:func:`auto_plan`; ``one_process``: a serialized plan may win, as
    for the local runtime; Ray runs only parallel plans); a path: a saved plan; a :class:`Plan`: itself. A plan the
    user gives (a path or a :class:`Plan`) is checked for ``algorithm`` first (:mod:`pearl_py.pipeline.plan_check`).

    ``total_steps`` (the run's length) lets the optimizer choose variants with a one-off setup
    (a compile) when they pay it back within the run, and weigh the actors' start-up. ``dedicated``: the machine
    runs nothing else (multi-threaded options valued alone: docs/optimizer.md). ``address``: the Ray cluster the run
    joins, which a plan made on a cluster must still be (:func:`~pearl_py.pipeline.plan_check.check_plan`).
    ``reuse`` ("auto"): the plan an earlier run made from the same inputs, where one is kept, else the new plan is
    kept for the next run (:mod:`pearl_py.pipeline.plan_cache`; ``pearl run --auto`` reuses, ``--replan`` does not).
    """
    if isinstance(plan, Plan):
        check_plan(plan, algorithm, address=address)
        return plan
    if plan == "serial":
        return Plan.single_device(algorithm.protocol(serialized=True))
    if plan == "local":
        return local_serial_plan(algorithm, total_steps, dedicated)
    if plan == "auto":
        inputs = (algorithm, objective, total_steps)
        found = reused_plan(plan_key(*inputs, one_process=one_process, dedicated=dedicated)) if reuse else None
        if found is not None:
            log(f"plan reused from {found[1]} (made by an earlier run from the same config, machine, calibration "
                "and pearl_py; --replan plans again)")
            return found[0]
        ensure_calibration(log, algorithm, total_steps)
        made = auto_plan(algorithm, objective, total_steps, one_process, dedicated)
        if reuse:   # keyed after the calibration, which ensure_calibration may have topped up
            keep_plan(plan_key(*inputs, one_process=one_process, dedicated=dedicated), made)
        return made
    path = Path(plan)
    if not path.suffix:
        raise PlanningError(f"plan {plan!r}: expected 'auto', 'local', 'serial', a Plan or a plan.yaml path")
    return load_checked_plan(path, algorithm, address)
