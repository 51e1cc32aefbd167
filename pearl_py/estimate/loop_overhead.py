"""The training loop's own work besides its kernels: ``pearl profile`` measures it per family.

A serial run's training time is its kernels' time plus the loop around them: per vector step the
collector's bookkeeping (episode tracking, final observations, the step record) and the progress
counters; per update the minibatch's indices, the loss figures kept for the logs and the timing
around the call; per training round or rollout the log rows (``train.csv``, TensorBoard). The serial
executors measure that remainder as the timing entry ``loop`` (:data:`pearl_py.protocol.kernel.LOOP_WORK`).
Here each family's calibration config (CartPole at the README's and the zoo's shapes, the ``fused`` learner
update and inference where they run, logs written to a temporary folder as ``pearl run`` writes them) runs twice, with few and with many
updates per env step, and the two ``loop`` totals give the work per vector step ``a`` and per update
``b`` (``loop = a * vector steps + b * updates``), kept as ``calibration.meta["loop_s"][family]``. The
cost model charges ``a`` with every ``env_step`` call and ``b`` with every ``learner_update`` call
(``Cost.loop_s``): actors run the same collector, so a plan's actors carry their part too.

The same runs show the kernels themselves slower in a loop than alone: a kernel timed back to back
with itself (``pearl profile``'s micro-benchmarks) finds its code and data in the caches, one that
runs between an env step and a replay insert does not (env step 1.6x, inference 1.3-1.5x, replay
insert 1.3x on the 2-core VM). Each kind's mean excess per call over its calibrated cost is kept as
``calibration.meta["in_loop_s"][family][kind]``, and the estimator adds it to that kind's calls on a
CPU (docs/cost-models.md §8).

Example::

    >>> work = time_loop_work("on_policy", alone=lambda kernel, variant: estimator_cost(kernel, variant))
    >>> work.per_step, work.per_update, work.in_loop["env_step"]     # ~24 us, ~14 us, ~8 us on the 2-core VM
"""
from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from pearl_py.protocol import Kernel
from pearl_py.protocol.kernel import INFERENCE, LEARNER_UPDATE, LOOP_WORK

LOOP_KEY = "loop_s"
"""``Calibration.meta`` key: ``{family: {"per_step": s, "per_update": s}}``."""
IN_LOOP_KEY = "in_loop_s"
"""``Calibration.meta`` key: ``{family: {kind: seconds per call a kernel of that kind takes more in a loop}}``."""
FAMILIES = ("off_policy", "on_policy")
FUSED = "fused"
"""The kernel variant the calibration runs use where this machine has it (:func:`calibration_plan`)."""


@dataclass(frozen=True)
class LoopWork:
    """Seconds of a training loop's own work per vector step and per update."""

    per_step: float
    per_update: float
    in_loop: dict[str, float] = field(default_factory=dict)
    """Seconds per call each kernel kind took more in the loop than its calibrated cost alone (never below 0)."""

    def to_dict(self) -> dict[str, float]:
        return {"per_step": round(self.per_step, 9), "per_update": round(self.per_update, 9)}


def _calibration_runs(family: str):
    """The family's two calibration configs (few and many updates per env step) and their length in env steps:
    the README's DQN shapes (one env) and the zoo's PPO CartPole shapes (8 envs x 32 steps), each about a second
    on the 2-core VM."""
    import pearl_py as pearl

    if family == "on_policy":
        return [(pearl.PPO("CartPole-v1", n_envs=8, n_steps=32, batch_size=256, n_epochs=epochs), 16_384)
                for epochs in (2, 16)]
    return [(pearl.DQN("CartPole-v1", net_arch=[64, 64], batch_size=64, learning_starts=1_000, train_freq=4,
                       gradient_steps=updates, buffer_size=10_000), 6_000) for updates in (1, 4)]


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


Alone = Callable[[Kernel, str], float]
"""``alone(kernel, variant)``: the calibrated seconds of one call of ``kernel`` as ``variant`` on this CPU, timed
back to back (the fitted models), to set the loop's measured calls against."""


def _loop_of_run(algo, steps: int, out_dir: Path):
    """One serial run of ``algo`` under :func:`calibration_plan` (one torch thread, logs in ``out_dir``): its result
    and plan."""
    from pearl_py.runtime.on_policy_serial import OnPolicySerialExecutor
    from pearl_py.runtime.serial import SerialExecutor

    executor = OnPolicySerialExecutor if algo.family == "on_policy" else SerialExecutor
    plan = calibration_plan(algo)
    return executor(algo, seed=0, plan=plan, eval_episodes=0, progress=False, threads=1,
                    out_dir=out_dir).run(steps), plan


def time_loop_work(family: str, alone: Alone | None = None) -> LoopWork | None:
    """The loop's own work per vector step and per update in ``family``'s serial executor (least squares over the
    two calibration runs, neither below 0) and, with ``alone``, each kernel kind's excess per call in the loop
    over its calibrated cost; None if the runs measured no loop."""
    threads = torch.get_num_threads()
    rows, seconds = [], []
    excess: dict[str, list[float]] = {}
    try:
        for algo, steps in _calibration_runs(family):
            with tempfile.TemporaryDirectory(prefix="pearl-loop-") as folder:
                result, plan = _loop_of_run(algo, steps, Path(folder))
            loop, updates = result.kernel_times.get(LOOP_WORK), result.kernel_times.get(LEARNER_UPDATE)
            rows.append((int(loop["calls"]) if loop else 0, int(updates["calls"]) if updates else 0))
            seconds.append(loop["total_s"] if loop else 0.0)
            if alone is not None:
                for kernel in algo.protocol(serialized=True).kernels():
                    timing = result.kernel_times.get(kernel.name)
                    if timing and timing["calls"]:
                        spent, calls = excess.setdefault(str(kernel.kind), [0.0, 0])
                        over = timing["total_s"] - timing["calls"] * alone(kernel, plan.placements[kernel.name].variant)
                        excess[str(kernel.kind)] = [spent + over, calls + int(timing["calls"])]
    finally:
        torch.set_num_threads(threads)
    if not all(steps for steps, _ in rows):
        return None
    in_loop = {kind: round(max(spent / calls, 0.0), 9) for kind, (spent, calls) in excess.items()}
    (per_step, per_update), *_ = np.linalg.lstsq(np.array(rows, float), np.array(seconds), rcond=None)
    if per_update < 0:  # the runs differ by less than their noise: all of it per step
        return LoopWork(max(sum(seconds) / sum(s for s, _ in rows), 0.0), 0.0, in_loop)
    if per_step < 0:
        return LoopWork(0.0, sum(seconds) / sum(u for _, u in rows), in_loop)
    return LoopWork(float(per_step), float(per_update), in_loop)
