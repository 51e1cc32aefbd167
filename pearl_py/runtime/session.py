"""The run session every executor shares: what happens around its loop, written once.

An executor is its loop (collect, learn, publish); everything around it is a :class:`RunSession`: seeding, restoring
a checkpoint, the logs, the training clock, periodic evaluations and checkpoints, the monitor, the final evaluation
and the :class:`RunResult`. A run-level feature is added here once and every executor has it (docs/extending.md).
:class:`SessionExecutor` is the executors' base: the options every executor takes and :meth:`~SessionExecutor.session`.

Example (an executor's ``run``, condensed)::

    >>> session = self.session(total_steps)
    >>> session.seed_torch(threads)                      # torch threads and seed
    >>> replay_state = session.restore(learner)          # resuming: the learner, RNGs; session.progress
    >>> log = session.open_log()
    >>> update = session.watch(threads, update)          # the monitor, when the plan has a prediction
    >>> session.clock.start()
    >>> session.evaluate_with(learner)                   # periodic evaluations of its networks
    >>> ...                                              # the loop: session.round_ended(...), session.evaluate(...),
    >>> ...                                              # session.checkpoint(...) when session.periodic.due(...)
    >>> return session.result(env_steps=..., gradient_steps=..., eval_returns=session.final_evaluation(...), ...)
"""
from __future__ import annotations

import contextlib
import dataclasses
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import torch

from pearl_py.algorithms.core import BaseAlgorithm
from pearl_py.plan import Plan
from pearl_py.runtime.checkpoints import (
    INTERRUPT_DIR,
    CheckpointOptions,
    PeriodicCheckpoints,
    restore_learner,
    session_seed,
)
from pearl_py.runtime.evaluation import EVAL_SEED_OFFSET, PeriodicEvaluation, evaluate, evaluation_points
from pearl_py.runtime.monitor import (
    AdaptOptions,
    ModeModel,
    Monitor,
    ThreadCount,
    ThreadSetting,
    VariantSetting,
    drift,
    result_fields,
    switched_plan,
)
from pearl_py.runtime.parallel.checkpoint import Checkpoint, Progress, load_checkpoint
from pearl_py.runtime.result import RunResult
from pearl_py.runtime.run_log import RunLog
from pearl_py.runtime.timing import merge_kernel_times


class ModeSwitched(Exception):  # noqa: N818 (a decision, not an error: the run goes on in ``plan``)
    """The monitor decided the run continues in the other mode: ``plan``, resumed from the checkpoint in ``folder``
    (:func:`pearl_py.pipeline.train.run_switching` builds that plan's executor and resumes it)."""

    def __init__(self, plan: Plan, folder: Path) -> None:
        super().__init__(f"the run continues as a {plan.mode} plan from {folder}")
        self.plan, self.folder = plan, folder


class SessionClock:
    """Training seconds of a run: earlier sessions' (``before``) plus this session's since :meth:`start`, less the
    seconds taken off it (evaluations, checkpoints: :meth:`paused`, :meth:`exclude`)."""

    def __init__(self, before: float = 0.0) -> None:
        self.before = before
        self.started = 0.0
        """``time.perf_counter()`` when this session's training started (0: not yet)."""
        self.off = 0.0
        self.stopped = 0.0
        """``time.perf_counter()`` when training ended (0: not yet): the final evaluation is not training time."""

    def start(self) -> None:
        """Start this session's training time (once: a later call keeps the first start)."""
        if not self.started:
            self.started = time.perf_counter()

    def stop(self) -> None:
        """Training ended: the clock reads the same from now on."""
        self.stopped = time.perf_counter()

    @property
    def seconds(self) -> float:
        """Training seconds of the run so far (earlier sessions' included)."""
        return self.before + self.session_seconds

    @property
    def session_seconds(self) -> float:
        """Training seconds of this session."""
        if not self.started:
            return 0.0
        return (self.stopped or time.perf_counter()) - self.started - self.off

    def exclude(self, seconds: float) -> None:
        """Take ``seconds`` (an evaluation, a checkpoint) off the training time."""
        self.off += seconds

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """The block's seconds are not training time."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.off += time.perf_counter() - started


class RunSession:
    """One session of a run (the first, or one resumed from a checkpoint); see the module docstring."""

    def __init__(self, executor: SessionExecutor, total_steps: int) -> None:
        self.entered = time.perf_counter()
        self.x, self.total_steps = executor, total_steps
        self.algorithm, self.plan, self.seed = executor.algorithm, executor.plan, executor.seed
        self.progress = Progress()
        """Where the run stood when this session started (restored when resuming); executors whose loop keeps the
        run's counters in a Progress update this one."""
        self.clock = SessionClock()
        self.log: RunLog | None = None
        self.monitor: Monitor | None = None
        self._periodic: PeriodicCheckpoints | None = None
        self._resumed_at = 0
        """Env steps the run had made when this session started (the next periodic checkpoint follows them)."""
        self._evaluation: PeriodicEvaluation | None = None

    # -- before the loop -------------------------------------------------------------------------------------

    def seed_torch(self, threads: int) -> None:
        """This process's torch threads and seed (every device's generator): the learner's initial weights."""
        torch.set_num_threads(threads)
        torch.manual_seed(self.seed)

    def restore(self, learner: Any) -> dict[str, Any] | None:
        """Resuming: ``learner``, the torch RNGs (the CPU's, every CUDA device's) and :attr:`progress` from the newest
        checkpoint (:meth:`resume`); its replay state (None for a fresh run)."""
        ckpt = self.resume()
        if ckpt is None:
            return None
        restore_learner(learner, ckpt.learner, ckpt.torch_rng, ckpt.cuda_rng, self.x.resume_from)
        return ckpt.replay

    def resume(self) -> Checkpoint | None:
        """The newest complete checkpoint of ``resume_from``, checked against this run, its session counted (None for
        a fresh run); :attr:`progress` and the observation transform's statistics become its."""
        if self.x.resume_from is None:
            return None
        ckpt = load_checkpoint(self.x.resume_from)
        ckpt.check_matches(self.algorithm, self.seed, self.total_steps)
        ckpt.progress.sessions += 1
        if self.algorithm.obs_transform is not None:   # before the workers start: they take the algorithm's
            self.algorithm.obs_transform.load(ckpt.obs_transform)
        self.progress = ckpt.progress
        self._resumed_at = self.progress.transitions
        self.clock.before = self.progress.wall_seconds
        return ckpt

    @property
    def env_seed(self) -> int:
        """The seed of this session's envs (a resumed session's envs start anew)."""
        return session_seed(self.seed, self.progress.sessions)

    def open_log(self, kernel_times: Callable[[], dict[str, dict[str, float]]] | None = None) -> RunLog:
        """The session's log (CSV, TensorBoard, progress line): the run folder, ``session<k>/`` per resume."""
        out, sessions = self.x.out_dir, self.progress.sessions
        self.log = RunLog(out / f"session{sessions}" if out is not None and sessions else out, self.total_steps,
                          self.x.progress, algorithm=self.algorithm, kernel_times=kernel_times)
        return self.log

    def evaluate_with(self, learner: Any) -> None:
        """The session's periodic evaluations are of ``learner``'s networks (each into :attr:`progress`'s history,
        the log and, when best, ``best_policy.pt``: :class:`PeriodicEvaluation`)."""
        self._evaluation = PeriodicEvaluation(self.algorithm, learner, self.x.eval_episodes, self.seed,
                                              self.progress.eval_history, self.log, self.x.out_dir)

    def evaluate(self, before: int, after: int, n_envs: int) -> None:
        """The periodic evaluations due at the vector steps from ``before`` (excluded) to ``after`` env steps
        (``eval_freq``; :func:`evaluation_points`), off the clock."""
        for at in evaluation_points(self.x.eval_freq, n_envs, before, after):
            self.clock.exclude(self._evaluation.run(at))

    def watch(self, threads: ThreadSetting, update: Callable[..., Any], modes: bool = False) -> Callable[..., Any]:
        """Start the run's monitor and return the threaded kernel's call, watched (``update`` itself without a
        monitor). ``modes``: the executor can hand the run to the other mode's (:meth:`switch_mode`)."""
        rule = self.x.adapt if isinstance(self.x.adapt, AdaptOptions) else AdaptOptions()
        model = ModeModel.of(self.plan, self.total_steps, rule) if modes and self.x.switch_modes else None
        self.monitor = Monitor.of(self.plan, threads, self.x.adapt, self.log, earlier=self.progress.corrections,
                                  modes=model)
        return update if self.monitor is None else self.monitor.watch(update)

    @property
    def mode_switch(self) -> bool:
        """Whether the monitor decided the run continues in the other mode (at this round boundary)."""
        return self.monitor is not None and self.monitor.switch_to is not None

    def switch_mode(self, learner_state: dict[str, Any], replay_state: dict[str, Any], progress: Progress) -> NoReturn:
        """Hand the run to the other mode at a round boundary: its checkpoint (``OUT/checkpoint``, or a temporary
        folder without an output folder), then :class:`ModeSwitched` with the plan in that mode."""
        folder = self.x.out_dir / INTERRUPT_DIR if self.x.out_dir is not None else Path(
            tempfile.mkdtemp(prefix="pearl-mode-"))
        with self.clock.paused():
            self.periodic.save_to(folder, learner_state, replay_state, progress)
        raise ModeSwitched(switched_plan(self.plan, self.monitor.switch_to), folder)

    def watch_remote(self, variant: str) -> None:
        """Start the run's monitor of a learner in another process (a Ray worker, planned ``variant``): each round it
        runs its calls at :meth:`remote_options` and hands their seconds to :meth:`round_ended`."""
        setting = VariantSetting(ThreadCount(self.plan.learner_threads), variant)
        self.monitor = Monitor.of(self.plan, setting, self.x.adapt, self.log, earlier=self.progress.corrections)

    def remote_options(self, calls: int) -> list[Any] | None:
        """The option (a thread count, or a ``LearnerOption`` where variants are options) of each of a remote
        learner's next ``calls`` updates (None: no monitor, the learner keeps its threads and variant)."""
        return self.monitor.schedule(calls) if self.monitor is not None else None

    def round_ended(self, steps: int, updates: int, timer: Any = None, seconds: list[float] = ()) -> None:
        """At a round boundary (after a training round, or a rollout's learning): the monitor's turn. ``timer``: this
        process's kernel times; a remote learner's monitor has none and gets its round's update ``seconds``."""
        if self.monitor is not None:
            self.monitor.ran(list(seconds))
            self.monitor.round_ended(steps, updates, timer)

    # -- checkpoints -----------------------------------------------------------------------------------------

    @property
    def periodic(self) -> PeriodicCheckpoints:
        """The run's periodic checkpoints and its stop checkpoint (:mod:`pearl_py.runtime.checkpoints`)."""
        if self._periodic is None:
            self._periodic = PeriodicCheckpoints(self.x.out_dir, self.x.checkpoints, self.algorithm, self.seed,
                                                 self.total_steps, self._resumed_at)
        return self._periodic

    def due(self, transitions: int) -> bool:
        """Whether a periodic checkpoint is due at ``transitions`` env steps."""
        return self.periodic.due(transitions)

    def snapshot(self, kernel_times: list[dict[str, dict[str, float]]], **reached: Any) -> Progress:
        """The run's progress now, as a checkpoint records it: :attr:`progress` with ``reached``'s counters, the
        training seconds so far, the kernel times (earlier sessions' and ``kernel_times``) and the corrections."""
        return dataclasses.replace(
            self.progress, wall_seconds=self.clock.seconds, eval_history=list(self.progress.eval_history),
            kernel_times=merge_kernel_times([self.progress.kernel_times, *kernel_times], {}),
            corrections=self.corrections(), **reached)

    def checkpoint(self, learner_state: dict[str, Any], replay_state: dict[str, Any], progress: Progress,
                   rng: tuple[torch.Tensor, list[torch.Tensor]] | None = None) -> Path:
        """Write a periodic checkpoint (off the clock)."""
        with self.clock.paused():
            return self.periodic.save(learner_state, replay_state, progress, rng)

    def stop_checkpoint(self, learner_state: dict[str, Any], replay_state: dict[str, Any], progress: Progress
                        ) -> Path | None:
        """Write the stop checkpoint (``OUT/checkpoint``; None without an output folder)."""
        return self.periodic.save_stop(learner_state, replay_state, progress)

    def corrections(self) -> list[dict[str, Any]]:
        """Every correction of the run so far (earlier sessions' and this one's), as a checkpoint keeps them."""
        if self.monitor is None:
            return list(self.progress.corrections)
        return [dataclasses.asdict(c) for c in self.monitor.corrections]

    # -- after the loop --------------------------------------------------------------------------------------

    def final_evaluation(self, nets: Any, device: Any) -> list[float]:
        """The returns of the trained networks' greedy policy (``eval_episodes`` episodes, the evaluation seed)."""
        return evaluate(self.algorithm, nets, device, self.x.eval_episodes, self.seed + EVAL_SEED_OFFSET)

    def result(self, *, env_steps: int, **fields: Any) -> RunResult:
        """The run's :class:`RunResult`: what every executor records and the executor's ``fields`` (``kernel_times``
        among them)."""
        algo = self.algorithm
        startup = self.clock.started - self.entered if self.clock.started else None
        unwatched = self.monitor is None and self.x.adapt is not False
        return RunResult(algorithm=algo.name, env=algo.env_id, seed=self.seed, env_steps=env_steps,
                         wall_seconds=self.clock.seconds, startup_seconds=startup, plan=self.plan.to_dict(),
                         eval_history=self.progress.eval_history,
                         drift=drift(self.plan, fields["kernel_times"]) if unwatched else {},
                         **result_fields(self.monitor, self.plan, env_steps), **fields)


class SessionExecutor:
    """What every executor takes beyond its own options, and its sessions (:meth:`session`).

    ``out_dir``: the run folder (None: nothing written); ``eval_freq``: env steps between periodic evaluations (0:
    none); ``progress``: the progress line (None: when on a terminal); ``resume_from``: a run or checkpoint folder;
    ``adapt``: the monitor's rule, or whether it runs; ``switch_modes``: the monitor may hand the run to the other
    mode's executor (:class:`ModeSwitched`).
    """

    def __init__(self, algorithm: BaseAlgorithm, plan: Plan, seed: int = 0, *, out_dir: Path | None = None,
                 eval_episodes: int = 10, eval_freq: int = 0, progress: bool | None = None,
                 resume_from: Path | None = None, checkpoints: CheckpointOptions | None = None,
                 adapt: bool | AdaptOptions = True, switch_modes: bool = False) -> None:
        self.algorithm = algorithm
        self.plan = plan
        self.seed = seed
        self.out_dir = Path(out_dir) if out_dir is not None else None
        self.eval_episodes = eval_episodes
        self.eval_freq = eval_freq
        self.progress = progress
        self.resume_from = Path(resume_from) if resume_from is not None else None
        self.checkpoints = checkpoints or CheckpointOptions()
        self.adapt = adapt
        self.switch_modes = switch_modes

    session_type: type[RunSession] = RunSession
    """The session every run of every executor opens: a run-level feature is a subclass set here
    (docs/extending.md, "A new run-level feature")."""

    def session(self, total_steps: int) -> RunSession:
        """A new session of a run of ``total_steps`` env steps."""
        return self.session_type(self, total_steps)
