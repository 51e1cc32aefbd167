"""The training loop's own work besides its kernels: ``pearl profile`` measures it per family.

Each family's calibration runs (:meth:`pearl_py.runtime.families.Family.calibration_runs`, under
:func:`calibration_plan`) give their ``loop`` timing totals (:data:`pearl_py.protocol.kernel.LOOP_WORK`), and
non-negative least squares over them the work per vector step ``a``, per update ``b`` and per round ``c``
(``loop = a * vector steps + b * updates + c * rounds``), kept as ``calibration.meta["loop_s"][family]``. The
same runs give each kernel kind's excess in the loop over its calibrated cost, per call
(``calibration.meta["in_loop_s"][family][kind]``) and per round (added to ``c``: :func:`split_excess`).
How the cost model charges them: docs/cost-models.md §8.

Example::

    >>> work = time_loop_work("on_policy", alone=lambda kernel, variant: estimator_cost(kernel, variant))
    >>> work.per_step, work.per_update, work.per_round, work.in_loop["env_step"]
"""
from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from scipy.optimize import nnls

from pearl_py.protocol import Kernel
from pearl_py.protocol.kernel import INFERENCE, LEARNER_UPDATE, LOOP_WORK
from pearl_py.runtime.families import family_named, family_of

FUSED = "fused"
"""The kernel variant the calibration runs use where this machine has it (:func:`calibration_plan`)."""


@dataclass(frozen=True)
class LoopWork:
    """Seconds of a training loop's own work per vector step, per update and per training round."""

    per_step: float
    per_update: float
    per_round: float = 0.0
    in_loop: dict[str, float] = field(default_factory=dict)
    """Seconds per call each kernel kind took more in the loop than its calibrated cost alone (never below 0)."""
    in_round: dict[str, float] = field(default_factory=dict)
    """Seconds per training round each kernel kind took more in the loop (never below 0; counted in ``per_round``)."""

    def to_dict(self) -> dict[str, float]:
        return {"per_step": round(self.per_step, 9), "per_update": round(self.per_update, 9),
                "per_round": round(self.per_round, 9)}


def calibration_plan(algo):
    """Every kernel on the CPU in one process, the learner update and the inference ``fused`` where this machine
    runs it (what ``pearl run --auto`` picks on a CPU; the loop around a reference update costs more: its loss
    figures are autograd tensors), else the reference."""
    from pearl_py.kernels import registry_of
    from pearl_py.plan import Placement, Plan

    protocol = algo.protocol(serialized=True)
    plan = Plan.single_device(protocol)
    for kind in (LEARNER_UPDATE, INFERENCE):
        kernel = protocol.by_kind(kind)[0]
        fused = next((v for v in registry_of(algo.family).variants(kind) if v.name == FUSED), None)
        if fused is not None and fused.available()[0] and fused.supports(kernel) is None:
            plan.placements[kernel.name] = Placement("cpu", FUSED)
    return plan


Alone = Callable[[Kernel, str], float | None]
"""``alone(kernel, variant)``: the calibrated seconds of one call of ``kernel`` as ``variant`` on this CPU, timed
back to back (the fitted models), to set the loop's measured calls against; None where no model was fitted (its
kind's excess is not measured)."""


def _loop_of_run(algo, steps: int, out_dir: Path):
    """One serial run of ``algo`` under :func:`calibration_plan` (one torch thread, logs in ``out_dir``): its result,
    its plan and the share of its wall time it had a core (its CPU seconds over its wall seconds, at most 1)."""
    plan = calibration_plan(algo)
    cpu, wall = time.process_time(), time.perf_counter()
    result = family_of(algo).serial(algo, 0, plan=plan, eval_episodes=0, progress=False, threads=1,
                                    out_dir=out_dir).run(steps)
    return result, plan, min((time.process_time() - cpu) / max(time.perf_counter() - wall, 1e-9), 1.0)


def time_loop_work(family: str, alone: Alone | None = None) -> LoopWork | None:
    """The loop's own work per vector step, per update and per round in ``family``'s serial executor (non-negative
    least squares over the calibration runs) and, with ``alone``, each kernel kind's excess per call in the loop
    over its calibrated cost (its excess per round goes to the round's work: :func:`split_excess`); None if the runs
    measured no loop (or the family has no calibration runs:
    :meth:`~pearl_py.runtime.families.Family.calibration_runs`). A run's wall seconds count at the share of them it
    had a core: the calibrated costs they are set against are CPU seconds
    (:func:`pearl_py.profile.microbench.time_call`), and other processes' time slices on a shared machine belong to
    neither."""
    threads = torch.get_num_threads()
    rows, seconds = [], []
    excess: dict[str, list[tuple[int, float, float]]] = {}   # kind: (calls, rounds, seconds over alone) per run
    try:
        for run in family_named(family).calibration_runs():
            with tempfile.TemporaryDirectory(prefix="pearl-loop-") as folder:
                result, plan, share = _loop_of_run(run.algorithm, run.steps, Path(folder))
            loop, updates = result.kernel_times.get(LOOP_WORK), result.kernel_times.get(LEARNER_UPDATE)
            calls = int(updates["calls"]) if updates else 0
            rows.append((int(loop["calls"]) if loop else 0, calls, calls / run.updates_per_round))
            seconds.append(loop["total_s"] * share if loop else 0.0)
            if alone is not None:
                for kernel in run.algorithm.protocol(serialized=True).kernels():
                    timing = result.kernel_times.get(kernel.name)
                    seconds_alone = alone(kernel, plan.placements[kernel.name].variant)
                    if timing and timing["calls"] and seconds_alone is not None:
                        over = timing["total_s"] * share - timing["calls"] * seconds_alone
                        excess.setdefault(str(kernel.kind), []).append((int(timing["calls"]), rows[-1][2], over))
    finally:
        torch.set_num_threads(threads)
    if not rows or not all(steps for steps, _, _ in rows):
        return None
    (per_step, per_update, per_round), _ = nnls(np.array(rows, float), np.array(seconds))
    split = {kind: split_excess(runs) for kind, runs in excess.items()}
    in_loop = {kind: round(per_call, 9) for kind, (per_call, _) in split.items()}
    in_round = {kind: round(rounds, 9) for kind, (_, rounds) in split.items()}
    return LoopWork(float(per_step), float(per_update), float(per_round) + sum(in_round.values()), in_loop, in_round)


def split_excess(runs: list[tuple[int, float, float]]) -> tuple[float, float]:
    """``(seconds per call, seconds per round)`` a kernel kind took more in the loop than alone, from its
    ``(calls, rounds, seconds over alone)`` in each calibration run (non-negative least squares).

    A training round costs the calls after it more than their steady excess (caches the other phase filled, weights
    it wrote); charged per call, a round's cost would come with every call (docs/cost-models.md §8).

        >>> [round(s * 1e6, 1) for s in split_excess([(5_000, 1_250, 5_000 * 6e-6 + 1_250 * 90e-6),
        ...                                               (5_000, 5_000, 5_000 * 96e-6)])]
        [6.0, 90.0]
    """
    (per_call, per_round), _ = nnls(np.array([(c, r) for c, r, _ in runs], float), np.array([s for _, _, s in runs]))
    return float(per_call), float(per_round)
