"""``pearl profile --check``: re-time a few points and say whether the cached calibration still holds.

The points are the zoo configurations' learner updates (DQN CartPole, DDPG, TD3 and SAC Pendulum), a
single-observation inference, a CartPole step and a replay sample, each timed as the profile
times it (three passes, fastest kept, under the load rule of :mod:`pearl_py.profile.load`) and
compared with what the calibration predicts for it. The calibration holds when every point is
within :data:`TOLERANCE` of its prediction and none stayed distorted by other processes.

Example::

    >>> rows = check_calibration(Calibration.load_default())
    >>> [(r.key, round(r.ratio, 2), r.holds) for r in rows][:1]
    [('learner_update/reference', 1.04, True)]
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pearl_py.estimate.calibration import Calibration, model_key
from pearl_py.estimate.features import workload_features
from pearl_py.profile.load import LoadProbe, LoadRecord
from pearl_py.profile.microbench import OFF_POLICY, BenchPoint
from pearl_py.profile.profiler import ZOO_POINTS, measure, usable_cores
from pearl_py.protocol.kernel import ENV_STEP, INFERENCE, REPLAY_SAMPLE

TOLERANCE = 0.25
"""Largest relative difference between a re-timed point and the calibration's prediction that still holds."""
CHECK_POINTS = (*ZOO_POINTS, BenchPoint(INFERENCE, algo="dqn", width=256, batch=1),
                BenchPoint(ENV_STEP, env_id="CartPole-v1", batch=1),
                BenchPoint(REPLAY_SAMPLE, capacity=100_000, batch=64))


@dataclass(frozen=True)
class CheckRow:
    key: str
    point: BenchPoint
    calibrated_s: float
    measured_s: float
    distorted: bool
    """Other processes still distorted the point after its repeats (its figure then proves nothing)."""

    @property
    def ratio(self) -> float:
        return self.measured_s / self.calibrated_s

    @property
    def holds(self) -> bool:
        return abs(self.ratio - 1.0) <= TOLERANCE and not self.distorted


def check_calibration(calibration: Calibration, points: tuple[BenchPoint, ...] = CHECK_POINTS,
                      probe: LoadProbe | None = None, log: Callable[[str], None] = lambda line: None
                      ) -> list[CheckRow]:
    """Re-time ``points`` (reference variant, one thread) and set each beside the calibration's prediction;
    points whose model the calibration lacks are logged and left out."""
    probe = probe or LoadProbe(usable_cores())
    rows = []
    for point in points:
        env_id = point.env_id if point.kind == ENV_STEP else None
        key = model_key(point.kind, "reference", env_id)
        model = calibration.models.get(key)
        if model is None:
            log(f"{key:<34} not in the calibration: not checked")
            continue
        record = LoadRecord()
        (workload, seconds), = measure(point.kind, "reference", [point], passes=3, probe=probe, load=record,
                                       family=OFF_POLICY)
        rows.append(CheckRow(key, point, model.predict(workload_features(workload)), seconds, record.distorted > 0))
    return rows
