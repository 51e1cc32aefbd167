"""``pearl.train``: run an algorithm under a plan, return what was measured, write the report.

Example::

    >>> algo = pearl.DQN("CartPole-v1", batch_size=64)
    >>> result = pearl.train(algo, total_steps=50_000, seed=0, plan="auto", out="runs/dqn")
    >>> result.samples_per_second, result.plan["solver"]
    (2412.7, 'milp')
    >>> result = pearl.train(algo, total_steps=50_000, plan="auto", tune=pearl.TuneOptions(top_k=3, seconds=5))
    >>> [t["measured_samples_per_s"] for t in result.plan["prediction"]["tuning"]["trials"]]
    [1204.9, 1391.3, 1010.2]
"""
from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pearl_py.algorithms.core import BaseAlgorithm
from pearl_py.errors import UserError
from pearl_py.pipeline.admission import admit_config, admit_plan
from pearl_py.pipeline.announce import plan_lines
from pearl_py.runtime.families import Executor, family_of
from pearl_py.pipeline.outputs import PYTHON_FLAGS, RunFolder, claim_run_dir
from pearl_py.pipeline.plan_check import PlanSource
from pearl_py.pipeline.planning import PLAN_WORDS, candidate_plans, cluster_plan, resolve_plan
from pearl_py.plan import Plan
from pearl_py.platform import Platform
from pearl_py.report.export import export_plan
from pearl_py.report.run_files import run_record
from pearl_py.runtime.checkpoints import INTERRUPT_DIR, CheckpointOptions
from pearl_py.runtime.kernel_devices import check_runnable
from pearl_py.runtime.result import RunResult
from pearl_py.runtime.run_energy import run_energy_record, run_meter
from pearl_py.runtime.session import ModeSwitched
from pearl_py.runtime.policy_files import save_policy
from pearl_py.saved_policy import initial_state

if TYPE_CHECKING:
    from pearl_py.pipeline.tune import TuneOptions

BACKENDS = ("local", "ray")


def runs_serially(plan: Plan) -> bool:
    """True for plans whose stages run one after another: the serial executor's kind."""
    return plan.serialized


def make_executor(algorithm: BaseAlgorithm, plan: Plan, seed: int, *, backend: str = "local",
                  address: str | None = None, resume: str | Path | None = None,
                  checkpoints: CheckpointOptions | None = None, adapt: bool = True, switch_modes: bool = False,
                  **common: Any) -> Executor:
    """The executor of the algorithm's family that runs ``plan``: on Ray, the serial executor (serialized plans)
    or the local parallel runtime (:mod:`pearl_py.runtime.families`).

    ``common``: ``out_dir``, ``eval_episodes``, ``eval_freq``, ``progress``. ``adapt``: the executors' monitor
    corrects a plan its kernels do not hold to (False: the plan as given; the family's ``adapts`` says which
    executors run one); ``switch_modes``: it may also hand the run to the other mode's executor (the family's
    ``switches_modes``; the caller runs it with :func:`run_switching`). ``resume``: a run folder (or
    checkpoint folder) to continue from; ``checkpoints``: periodic checkpoints (not on Ray yet). A plan this
    machine cannot run as planned (a GPU without CUDA, a variant it cannot build) is a UserError naming the
    kernel and the device, before anything starts (the Ray backend's cluster checks its own resources).
    """
    family = family_of(algorithm)
    resume_options = _resume_options(resume, checkpoints)
    if backend == "ray":
        if family.ray is None:
            raise UserError(f"{algorithm.name} ({family.name}) has no Ray executor yet; run it locally")
        return family.ray(algorithm, seed, plan=plan, address=address, **resume_options, **common)
    check_runnable(plan, family=family.name)
    switching = {"switch_modes": True} if switch_modes and adapt is not False and family.switches_modes else {}
    if runs_serially(plan):
        adapting = {"adapt": adapt, **switching} if "serial" in family.adapts else {}
        return family.serial(algorithm, seed, plan=plan, **resume_options, **adapting, **common)
    if family.parallel is None:
        raise UserError(f"{algorithm.name} ({family.name}) runs its serial executor only for now: its plans must be "
                        "serialized")
    adapting = {"adapt": adapt, **switching} if "parallel" in family.adapts else {}
    return family.parallel(algorithm, seed, plan=plan, **resume_options, **adapting, **common)


def run_switching(executor: Executor, total_steps: int, resume_in: Callable[[Plan, Path], Executor]
                  ) -> tuple[RunResult, Executor]:
    """Run ``executor`` to ``total_steps``; each time its monitor hands the run to the other mode
    (:class:`~pearl_py.runtime.session.ModeSwitched`, at a round boundary, its checkpoint written), the run goes on in
    ``resume_in(plan, checkpoint folder)``, the executor of that plan resuming it (the checkpoint/resume path: the
    step, update and episode counts and the corrections carry on exactly). Returns the last session's result and
    executor; temporary checkpoint folders (a run without an output folder) are removed.

        >>> result, executor = run_switching(executor, 50_000, lambda plan, folder: make_executor(
        ...     algo, plan, seed, resume=folder, adapt=adapt, switch_modes=True))
    """
    temporary: list[Path] = []
    try:
        while True:
            try:
                return executor.run(total_steps), executor
            except ModeSwitched as switch:
                if switch.folder.name != INTERRUPT_DIR:
                    temporary.append(switch.folder)
                executor = resume_in(switch.plan, switch.folder)
    finally:
        for folder in temporary:
            shutil.rmtree(folder, ignore_errors=True)


def _resume_options(resume: str | Path | None, checkpoints: CheckpointOptions | None) -> dict[str, Any]:
    """The executor arguments for periodic checkpoints and resuming, when asked for (a family's executor that
    supports neither is built without them)."""
    options: dict[str, Any] = {}
    if resume is not None:
        options["resume_from"] = Path(resume)
    if checkpoints is not None and checkpoints.every:
        options["checkpoints"] = checkpoints
    return options


def train(algorithm: BaseAlgorithm, total_steps: int, seed: int = 0, *,
          plan: Plan | str | Path = "serial", out: str | Path | RunFolder | None = None, eval_episodes: int = 10,
          eval_freq: int = 0, progress: bool | None = None, objective: str = "throughput", backend: str = "local",
          address: str | None = None, resume: str | Path | None = None, tune: bool | TuneOptions = False,
          init_from: str | Path | None = None, checkpoint_freq: int = 0, checkpoint_keep: int = 2,
          log: Callable[[str], None] = print, overwrite: bool = False, oversubscribe: bool = False,
          adapt: bool = True, dedicated: bool = False, reuse_plan: bool = False) -> RunResult:
    """Train ``algorithm`` for ``total_steps`` env steps under ``plan``.

    ``plan``: ``"serial"`` (the default: the reference, every kernel's reference implementation on one CPU in
    this process, no predictions, deterministic for a seed), ``"local"`` (the same, with the model's
    predictions; ``pearl run`` without plan flags), ``"auto"`` (calibrate this machine if needed, then the
    optimizer's plan for ``objective``: fused kernels, actor processes where they pay; ``pearl run --auto``,
    usually several times faster than ``"serial"``), a :class:`Plan`, or a path to a saved plan. Serialized plans run on the
    serial executor, overlapped ones on the local parallel runtime (``backend="local"``) or
    on Ray (``backend="ray"``, ``address`` of a running cluster or None for a local one; with ``"auto"`` the plan is
    made over the cluster's nodes and the run places its components on them: docs/ray.md).
    ``checkpoint_freq``: write a checkpoint every this many env steps into ``out/checkpoints`` (0: none),
    keeping the newest ``checkpoint_keep``; ``resume``: a run folder whose newest complete checkpoint
    (periodic, or a parallel run's stop checkpoint) the run continues from (docs/runtime.md).
    ``tune`` (with ``plan="auto"``, ``True`` or a :class:`~pearl_py.pipeline.tune.TuneOptions`):
    trial the model's top-k plans for a few seconds each and run the fastest measured; the
    trials are recorded in ``plan.prediction.tuning`` (docs/runtime.md).
    ``init_from``: a run folder whose saved policy (``policy.pt``) the networks start from (same
    algorithm, env and network shapes; fresh optimizers: this continues training, it is not a resume).
    With ``out``: logs, ``result.json``, the trained policy (``policy.pt`` and ``policy.json``, which
    :func:`pearl_py.load` reads) and, when the plan has predictions, the plan's report
    with what the run measured beside them (``report.md``, ``report.html``, ``plan.yaml``, ``plan.json``).
    The executors are the algorithm's family's (:mod:`pearl_py.runtime.families`); a family the model does not
    cover yet runs its serial executor, unpredicted, for ``plan`` "serial" or "local" (other plans: UserError).
    Before anything starts, the config and then the plan are admitted (:mod:`pearl_py.pipeline.admission`):
    what cannot fit this machine is refused; a plan that holds more cores than there are runs only with
    ``oversubscribe`` (recorded in ``result.admission``). ``out`` is held for the run by the rule the CLI's
    ``--out`` follows (:func:`~pearl_py.pipeline.outputs.claim_run_dir`): a folder another run is writing is
    refused naming its pid, and one that holds an earlier run is refused unless ``overwrite``, whose files are
    then removed once every check passed. The CLI passes the :class:`~pearl_py.pipeline.outputs.RunFolder` it
    claimed.
    ``adapt``: the run watches its kernels against the plan's prediction and, when the plan does not hold, re-times
    the disputed options and switches at a round boundary (an off-policy run also between the serialized and the
    overlapped mode, through a checkpoint: :func:`run_switching`), recording ``result.corrections``
    (docs/runtime.md); False (``--no-adapt``) runs the plan as given. ``dedicated`` (``--dedicated``): the machine runs
    nothing else, so ``plan="auto"`` values multi-threaded options by their calibrated cost alone (docs/optimizer.md).
    ``reuse_plan`` (``pearl run --auto``; off with ``--replan``): ``plan="auto"`` reuses the plan an earlier run made
    from the same inputs (:mod:`pearl_py.pipeline.plan_cache`).
    """
    if backend not in BACKENDS:
        raise UserError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if plan is None:
        raise UserError("plan=None is not a plan: pass plan='auto' (the optimizer's fast plan, as `pearl run "
                        "--auto`), 'serial' (the reference kernels, one process; the default) or 'local'")
    checkpoints = CheckpointOptions(checkpoint_freq, checkpoint_keep)
    if checkpoints.every and out is None:
        raise UserError("checkpoint_freq needs an output folder (out, --out) to write the checkpoints to")
    with contextlib.ExitStack() as held:
        folder = out if out is None or isinstance(out, RunFolder) else held.enter_context(claim_run_dir(
            out, overwrite=overwrite, continues=_continues_in_place(Path(out), resume), flags=PYTHON_FLAGS))
        admit_config(algorithm, replay=backend == "local")
        if init_from is not None:
            algorithm.initial_state = initial_state(init_from, algorithm)
            log(f"networks start from the policy saved in {init_from}")
        if not family_of(algorithm).planned:
            return _train_unplanned(algorithm, total_steps, seed, plan=plan, folder=folder,
                                    eval_episodes=eval_episodes, eval_freq=eval_freq, progress=progress,
                                    backend=backend, resume=resume, tune=tune, checkpoints=checkpoints, log=log)
        if tune:
            resolved = _tuned_plan(algorithm, total_steps, seed, plan, objective, backend, resume, tune, log,
                                   dedicated)
        else:
            resolved = (cluster_plan(algorithm, address, objective, total_steps, dedicated, log)
                        if backend == "ray" and address is not None and plan == "auto" else
                        resolve_plan(algorithm, plan, objective, log, total_steps=total_steps,
                                     one_process=backend == "local", dedicated=dedicated,
                                     address=address if backend == "ray" else None, reuse=reuse_plan))
        for line in plan_lines(resolved):
            log(line)
        admission = None
        if backend == "local":
            source = (PlanSource.of(plan) if isinstance(plan, (str, Path)) and str(plan) not in PLAN_WORDS
                      else PlanSource())
            admission = admit_plan(resolved, algorithm, oversubscribe=oversubscribe, plan_error=source.error)
            if admission.oversubscribed:
                log(admission.describe())
        out_dir = folder.path if folder is not None else None
        def executor_of(plan: Plan, resume: str | Path | None) -> Executor:
            return make_executor(algorithm, plan, seed, backend=backend, address=address, resume=resume,
                                 checkpoints=checkpoints, adapt=adapt, switch_modes=backend == "local", out_dir=out_dir,
                                 eval_episodes=eval_episodes, eval_freq=eval_freq, progress=progress)

        executor = executor_of(resolved, resume)
        continues = _continues_in_place(out_dir, resume)
        if folder is not None:
            folder.clear()  # every check passed: an earlier run's files go (with overwrite)
        if out_dir is not None and resolved.prediction is not None and not continues:
            export_plan(resolved, out_dir)  # the plan is on disk before the run: `--resume` finds it after a stop
        local = Platform.local() if backend == "local" else None  # Ray's workers run on the cluster's counters
        meter = run_meter(resolved, local) if local is not None else None
        with meter if meter is not None else contextlib.nullcontext():
            result, executor = run_switching(executor, total_steps, executor_of)
        if meter is not None:
            result.energy = run_energy_record(meter, resolved, result.kernel_times, local)
        if admission is not None:
            result.admission = admission.to_dict()
        if out_dir is not None:
            save_trained(out_dir, algorithm, executor, result)
            result.save(out_dir / "result.json")
            if resolved.prediction is not None:
                export_plan(resolved, out_dir, run=run_record(out_dir, result.to_dict()))
        return result


def _train_unplanned(algorithm: BaseAlgorithm, total_steps: int, seed: int, *, plan: Plan | str | Path,
                     folder: RunFolder | None, eval_episodes: int, eval_freq: int, progress: bool | None,
                     backend: str, resume: str | Path | None, tune: bool | TuneOptions,
                     checkpoints: CheckpointOptions, log: Callable[[str], None]) -> RunResult:
    """A family the performance model does not cover runs its serial executor, unpredicted. ``plan="local"``
    (`pearl run` without plan flags) runs the same, saying so."""
    family = family_of(algorithm)
    if plan not in ("serial", "local") or backend != "local" or tune:
        raise UserError(f"{algorithm.name} ({family.name}) runs on its serial executor only for now (plan "
                        "'serial' or 'local'; no --auto, --plan, --tune or the Ray backend)")
    if plan == "local":
        log(f"{algorithm.name} ({family.name}): running the serial reference executor without predictions "
            "(the performance model does not cover this family's kernels yet)")
    out_dir = folder.path if folder is not None else None
    executor = family.serial(algorithm, seed, out_dir=out_dir, eval_episodes=eval_episodes, eval_freq=eval_freq,
                             progress=progress, **_resume_options(resume, checkpoints))
    if folder is not None:
        folder.clear()
    result = executor.run(total_steps)
    if out_dir is not None:
        save_trained(out_dir, algorithm, executor, result)
        result.save(out_dir / "result.json")
    return result


def _continues_in_place(out_dir: Path | None, resume: str | Path | None) -> bool:
    """True when the run resumes into the folder it continues (its state is kept, never cleared)."""
    return resume is not None and out_dir is not None and out_dir.resolve() == Path(resume).resolve()


def save_trained(out_dir: Path, algorithm: BaseAlgorithm, executor: Any, result: RunResult) -> Path:
    """The run's trained policy into ``out_dir`` (``policy.pt``, ``policy.json``): the networks of the executor's
    learner (in this process, or fetched from a Ray learner as ``trained_networks``)."""
    nets = getattr(executor, "trained_networks", None)
    if nets is None:
        nets = executor.learner.nets
    return save_policy(out_dir, algorithm, nets, seed=result.seed, env_steps=result.env_steps,
                       gradient_steps=result.gradient_steps)


def _tuned_plan(algorithm: BaseAlgorithm, total_steps: int, seed: int, plan: Plan | str | Path,
                objective: str, backend: str, resume: str | Path | None, tune: bool | TuneOptions,
                log: Callable[[str], None], dedicated: bool = False) -> Plan:
    """The fastest measured of the model's top-k plans (``pearl_py.pipeline.tune``)."""
    from pearl_py.pipeline.tune import TrialRunner, TuneOptions, tune_plan

    if tune is not True and not isinstance(tune, TuneOptions):
        raise UserError(f"tune must be True, False or a TuneOptions, got {tune!r}")
    if not family_of(algorithm).tuned:
        raise UserError(f"tune (--tune) trials off-policy plans only for now; {algorithm.name} is "
                        f"{family_of(algorithm).name} (run --auto: the model's plan)")
    options = tune if isinstance(tune, TuneOptions) else TuneOptions()
    if backend != "local" or resume is not None:
        raise UserError("tune (--tune) trials plans on this machine's executors: it cannot run on the Ray backend "
                        "or continue a run (--resume)")
    if plan != "auto":
        raise UserError(f"tune (--tune) trials the optimizer's top plans, so it needs plan='auto' (--auto), "
                        f"got plan={plan!r}")
    if objective != "throughput":
        raise UserError(f"tune (--tune) measures samples/s, so it needs the throughput objective, got {objective!r}")
    candidates = candidate_plans(algorithm, options.top_k, objective, total_steps, log, dedicated)
    return tune_plan(candidates, TrialRunner(algorithm, seed, total_steps), options, log)
