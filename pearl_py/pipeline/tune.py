"""Online refinement, as Auturi does: trial the model's top-k plans briefly, run the fastest measured.

Each candidate trains a throwaway copy of the algorithm for a few seconds under its plan
(the executor the real run would use, its own seed, logs in a temporary folder); the
trial's steady-state samples/s after learning starts is what is compared. The real run's
RNGs and torch's thread count are as they were; every trial's processes and shared
memory are gone when it returns (the executors guarantee it).

Example::

    >>> candidates = candidate_plans(algo, k=3, total_steps=50_000)        # pearl_py.pipeline.planning
    >>> plan = tune_plan(candidates, TrialRunner(algo, seed=0, total_steps=50_000), TuneOptions(seconds=5))
    >>> [(t.rank, round(t.measured_samples_per_s)) for t in plan.prediction.tuning.trials]
    [(1, 1205), (2, 1391), (3, 1010)]
    >>> plan.prediction.tuning.kept
    2
"""
from __future__ import annotations

import contextlib
import copy
import csv
import dataclasses
import math
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from pearl_py.algorithms.off_policy.base import Algorithm
from pearl_py.algorithms.off_policy.config import OffPolicyConfig
from pearl_py.errors import UserError
from pearl_py.pipeline.train import make_executor, runs_serially
from pearl_py.plan import Plan, Trial, Tuning
from pearl_py.protocol.schedule import TrainSchedule

MIN_ROUNDS = 2
"""Training rounds a trial measures at least (after the first, which carries one-off setup)."""


@dataclass(frozen=True)
class TuneOptions:
    """``top_k`` candidate plans, each trialled for about ``seconds`` of steady-state training."""

    top_k: int = 3
    seconds: float = 5.0

    def __post_init__(self) -> None:
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, int) or self.top_k < 1:
            raise UserError(f"tune top_k must be an integer >= 1, got {self.top_k!r}")
        if isinstance(self.seconds, bool) or not isinstance(self.seconds, (int, float)) \
                or not math.isfinite(self.seconds) or self.seconds <= 0:
            raise UserError(f"tune seconds must be a number > 0, got {self.seconds!r}")


@dataclass(frozen=True)
class Measurement:
    """What one trial measured; every figure is measured on this machine.

    ``samples_per_s`` = ``window_env_steps / window_s``: env steps per second of training time
    (the runtime's clock, as ``RunResult.samples_per_second``) from the end of the first
    training round to the end of the last, so prefill, process start and compiles are outside.
    """

    samples_per_s: float
    window_env_steps: int
    window_s: float
    trial_env_steps: int
    trial_s: float
    """Wall seconds of the whole trial: start-up, prefill, training and clean-up."""


Measure = Callable[[Plan, float, float], Measurement]
"""``measure(plan, seconds, expected_samples_per_s)``: trial ``plan`` for about ``seconds``."""


class TrialRunner:
    """Trials plans on a copy of ``algorithm`` that starts learning after a short prefill.

    The copy's ``learning_starts`` is ``min(learning_starts, max(batch_size, train_freq × n_envs))``:
    the rate after learning starts follows the update-to-data ratio (``train_freq``,
    ``gradient_steps``), which is kept, not how many transitions were stored first.
    """

    def __init__(self, algorithm: Algorithm, seed: int, total_steps: int) -> None:
        self.algorithm = trial_algorithm(algorithm)
        self.seed = seed
        self.total_steps = total_steps

    def __call__(self, plan: Plan, seconds: float, expected_samples_per_s: float) -> Measurement:
        steps = trial_steps(self.algorithm.config, expected_samples_per_s, seconds, self.total_steps)
        started = time.perf_counter()
        with isolated_state(), tempfile.TemporaryDirectory(prefix="pearl-tune-") as tmp:
            executor = make_executor(self.algorithm, plan, self.seed, out_dir=Path(tmp), eval_episodes=0,
                                     eval_freq=0, progress=False)
            result = executor.run(steps)
            clock = round_clock(Path(tmp) / "train.csv")
        if len(clock) < 2 or clock[-1][1] <= clock[0][1]:
            raise RuntimeError(f"the trial logged {len(clock)} training rounds; measuring needs two")
        window_steps, window_s = clock[-1][0] - clock[0][0], clock[-1][1] - clock[0][1]
        return Measurement(samples_per_s=window_steps / window_s, window_env_steps=window_steps, window_s=window_s,
                           trial_env_steps=result.env_steps, trial_s=time.perf_counter() - started)


def trial_algorithm(algorithm: Algorithm) -> Algorithm:
    """A deep copy of ``algorithm`` whose learning starts after a short prefill (see :class:`TrialRunner`)."""
    cfg = algorithm.config
    trial = copy.deepcopy(algorithm)
    trial.config = dataclasses.replace(
        cfg, learning_starts=min(cfg.learning_starts, max(cfg.batch_size, cfg.train_freq * cfg.n_envs)))
    return trial


def trial_steps(cfg: OffPolicyConfig, expected_samples_per_s: float, seconds: float, total_steps: int) -> int:
    """Env steps of a trial: up to the first training round, then whole rounds for about ``seconds``
    at the expected rate (at least ``MIN_ROUNDS``; no more than the run itself has)."""
    n, per_round = cfg.n_envs, cfg.train_freq * cfg.n_envs
    schedule = TrainSchedule.from_config(cfg, max(total_steps, cfg.learning_starts + (MIN_ROUNDS + 1) * per_round))
    first = schedule.next_round(cfg.learning_starts // n)
    wanted = math.ceil(expected_samples_per_s * seconds / per_round)
    rounds = max(MIN_ROUNDS, min(wanted, (schedule.vector_steps - first) // cfg.train_freq))
    return (first + rounds * cfg.train_freq) * n


def round_clock(train_csv: Path) -> list[tuple[int, float]]:
    """``(env steps, training seconds)`` at the end of every training round, from a run's ``train.csv``
    (each row holds the steps and the run's rate so far, ``steps / training seconds``)."""
    with train_csv.open(newline="") as f:
        rows = list(csv.DictReader(f))
    return [(int(r["step"]), int(r["step"]) / float(r["steps_per_second"])) for r in rows
            if float(r["steps_per_second"]) > 0]


@contextlib.contextmanager
def isolated_state() -> Iterator[None]:
    """Torch's, numpy's and Python's global RNGs and torch's thread count are restored afterwards."""
    np_state, py_state, threads = np.random.get_state(), random.getstate(), torch.get_num_threads()
    with torch.random.fork_rng():
        try:
            yield
        finally:
            np.random.set_state(np_state)
            random.setstate(py_state)
            torch.set_num_threads(threads)


def tune_plan(candidates: Sequence[Plan], measure: Measure, options: TuneOptions = TuneOptions(),
              log: Callable[[str], None] = print) -> Plan:
    """Trial every candidate (best predicted first) and return the fastest measured, with the record.

    Each trial is sized for ``options.seconds`` at the candidate's predicted rate, scaled by the
    median measured/predicted ratio of the trials so far (the model's error is shared by the
    candidates). A trial that raises is recorded with its error and not kept. The returned plan's
    ``prediction.tuning`` lists every trial (``candidates`` order), the one kept and why.
    """
    if not candidates:
        raise ValueError("tune_plan needs at least one candidate plan")
    log(f"tuning: trying {len(candidates)} candidate plans for about {options.seconds:g} s each "
        "(steady-state samples/s after learning starts)")
    started = time.perf_counter()
    trials: list[Trial] = []
    for rank, plan in enumerate(candidates, start=1):
        trial = trial_record(rank, plan)
        ratios = [t.measured_samples_per_s / t.predicted_samples_per_s for t in trials
                  if t.measured_samples_per_s is not None and t.predicted_samples_per_s]
        expected = trial.predicted_samples_per_s * (statistics.median(ratios) if ratios else 1.0)
        try:
            measured = measure(plan, options.seconds, expected)
        except KeyboardInterrupt:
            raise KeyboardInterrupt(f"interrupted while tuning (trial {rank} of {len(candidates)}); "
                                    "the run had not started") from None
        except Exception as exc:  # a plan that fails its trial is not kept; the others still compete
            trial = dataclasses.replace(trial, error=f"{type(exc).__name__}: {exc}")
            log(f"tuning: {rank}/{len(candidates)} {trial.executor}, {_variants(plan)}: failed ({trial.error})")
        else:
            trial = dataclasses.replace(trial, measured_samples_per_s=measured.samples_per_s,
                                        window_env_steps=measured.window_env_steps, window_s=measured.window_s,
                                        trial_env_steps=measured.trial_env_steps, trial_s=measured.trial_s)
            log(f"tuning: {rank}/{len(candidates)} {trial.executor}, {_variants(plan)}: predicted "
                f"{trial.predicted_samples_per_s:,.0f} samples/s, measured {measured.samples_per_s:,.0f} "
                f"({measured.trial_s:.1f} s trial)")
        trials.append(trial)
    kept, reason = choose(trials)
    record = Tuning(top_k=options.top_k, seconds=options.seconds, kept=kept, reason=reason,
                    tuning_s=time.perf_counter() - started,
                    trials=tuple(dataclasses.replace(t, kept=t.rank == kept) for t in trials))
    log(f"tuning: kept plan {kept} of {len(candidates)} ({reason}); tuning took {record.tuning_s:.1f} s")
    chosen = candidates[kept - 1]
    return chosen.with_prediction(dataclasses.replace(chosen.prediction, tuning=record))


def choose(trials: Sequence[Trial]) -> tuple[int, str]:
    """The rank of the fastest measured trial (ties: the better predicted) and a sentence on why."""
    measured = [t for t in trials if t.measured_samples_per_s is not None]
    if not measured:
        return trials[0].rank, "every trial failed, so the optimizer's first choice is run"
    best = max(measured, key=lambda t: (t.measured_samples_per_s, -t.rank))
    rate = best.measured_samples_per_s
    first = trials[0]
    if best is first:
        others = [t.measured_samples_per_s for t in measured if t is not first]
        if not others:
            return first.rank, "the optimizer's first choice was the only plan measured"
        return first.rank, (f"the optimizer's first choice was also the fastest measured: {rate:,.0f} samples/s, "
                            f"{rate / max(others):.2f}× the next")
    if first.measured_samples_per_s is None:
        return best.rank, (f"fastest measured: {rate:,.0f} samples/s; the optimizer's first choice failed its "
                           f"trial ({first.error})")
    return best.rank, (f"fastest measured: {rate:,.0f} samples/s, {rate / first.measured_samples_per_s:.2f}× "
                       f"the optimizer's first choice ({first.measured_samples_per_s:,.0f} samples/s)")


def trial_record(rank: int, plan: Plan) -> Trial:
    """A trial before it runs: the plan and its prediction."""
    return Trial(rank=rank, executor="serial" if runs_serially(plan) else "parallel", mode=plan.mode,
                 placements=dict(plan.placements), predicted_samples_per_s=plan.prediction.samples_per_s,
                 predicted_source=prediction_source(plan))


def prediction_source(plan: Plan) -> str:
    """How the plan's per-call costs are known: ``calibrated``, ``modelled``, ``measured`` or a mix ("a+b")."""
    sources = set()
    for kernel, place in plan.placements.items():
        cost = plan.prediction.cost(kernel, place.device, place.variant)
        sources.add(cost.source if cost is not None else "modelled")
    return "+".join(sorted(sources))


def _variants(plan: Plan) -> str:
    """The non-reference variants of a plan, e.g. ``inference fused, learner_update compiled``."""
    named = [f"{k} {p.variant}" for k, p in plan.placements.items() if p.variant != "reference"]
    return ", ".join(named) or "reference kernels"
