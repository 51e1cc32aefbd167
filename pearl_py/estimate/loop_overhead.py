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
(``Cost.loop_s``): actors run the same collector, so a plan's actors carry their part too
(docs/cost-models.md §8).

Example::

    >>> work = time_loop_work("on_policy")      # ~35 us per vector step of 8 envs, ~20 us per update
    >>> calibration.meta[LOOP_KEY] = {"on_policy": work.to_dict()}
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from pearl_py.protocol.kernel import INFERENCE, LEARNER_UPDATE, LOOP_WORK

LOOP_KEY = "loop_s"
"""``Calibration.meta`` key: ``{family: {"per_step": s, "per_update": s}}``."""
FAMILIES = ("off_policy", "on_policy")
FUSED = "fused"
"""The kernel variant the calibration runs use where this machine has it (:func:`calibration_plan`)."""


@dataclass(frozen=True)
class LoopWork:
    """Seconds of a training loop's own work per vector step and per update."""

    per_step: float
    per_update: float

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


def _loop_of_run(algo, steps: int, out_dir: Path) -> tuple[float, int, int]:
    """``(loop seconds, vector steps, updates)`` of one serial run of ``algo`` (one torch thread, logs in
    ``out_dir``)."""
    from pearl_py.runtime.on_policy_serial import OnPolicySerialExecutor
    from pearl_py.runtime.serial import SerialExecutor

    executor = OnPolicySerialExecutor if algo.family == "on_policy" else SerialExecutor
    result = executor(algo, seed=0, plan=calibration_plan(algo), eval_episodes=0,
                      progress=False, threads=1, out_dir=out_dir).run(steps)
    loop, updates = result.kernel_times.get(LOOP_WORK), result.kernel_times.get(LEARNER_UPDATE)
    return (loop["total_s"] if loop else 0.0, int(loop["calls"]) if loop else 0,
            int(updates["calls"]) if updates else 0)


def time_loop_work(family: str) -> LoopWork | None:
    """The loop's own work per vector step and per update in ``family``'s serial executor (least squares over the
    two calibration runs, neither below 0); None if the runs measured none."""
    threads = torch.get_num_threads()
    rows, seconds = [], []
    try:
        for algo, steps in _calibration_runs(family):
            with tempfile.TemporaryDirectory(prefix="pearl-loop-") as folder:
                total, vector_steps, updates = _loop_of_run(algo, steps, Path(folder))
            rows.append((vector_steps, updates))
            seconds.append(total)
    finally:
        torch.set_num_threads(threads)
    if not all(steps for steps, _ in rows):
        return None
    (per_step, per_update), *_ = np.linalg.lstsq(np.array(rows, float), np.array(seconds), rcond=None)
    if per_update < 0:  # the runs differ by less than their noise: all of it per step
        return LoopWork(max(sum(seconds) / sum(s for s, _ in rows), 0.0), 0.0)
    if per_step < 0:
        return LoopWork(0.0, sum(seconds) / sum(u for _, u in rows))
    return LoopWork(float(per_step), float(per_update))
