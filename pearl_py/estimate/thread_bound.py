"""Whether calibrating a variant at more threads could pay for a run: a lower bound on its threaded cost.

A learner update at ``n`` threads takes at least its one-thread time over ``n`` (perfect scaling; calibrated beside
a neighbour, in wall time, it only loses to that). When the fastest one-thread option of the run's own learner
workloads beats that bound for every one of them, no plan of the run would take the threaded option, so a run's
first calibration leaves it out (``calibration.meta["deferred"]``, key ``learner_update/reference@2threads``): for
the README job, reference 1.40 ms / 2 = 0.70 ms against fused's 0.46 ms at one thread. A later run whose workloads
it could win (a bigger learner) calibrates it first (:meth:`pearl_py.pipeline.planning.CalibrationNeeds.missing`).

Example::

    >>> threads_can_win(calibration, LEARNER_UPDATE, "reference", 2, [kernel.workload], "off_policy")
    False
"""
from __future__ import annotations

from collections.abc import Collection

from pearl_py.estimate.calibration import Calibration
from pearl_py.estimate.features import model_group, workload_features
from pearl_py.estimate.fit import FittedModel
from pearl_py.protocol import Workload


def threads_can_win(calibration: Calibration, kind: str, variant: str, threads: int, workloads: Collection[Workload],
                    family: str | None) -> bool:
    """Whether ``variant`` of ``kind`` at ``threads`` threads could be faster than every calibrated one-thread
    variant for one of ``workloads`` (models of ``family``): True where the bound cannot rule it out (no workloads,
    no one-thread model of ``variant`` for one of them)."""
    return not workloads or any(_can_win_on(calibration, kind, variant, threads, workload, family)
                                for workload in workloads)


def _can_win_on(calibration: Calibration, kind: str, variant: str, threads: int, workload: Workload,
                family: str | None) -> bool:
    group = model_group(workload)
    own = calibration.model(kind, variant, group, family=family)
    if own is None:
        return True
    features = workload_features(workload)
    fastest = min(model.predict(features) for model in one_thread_models(calibration, kind, group, family))
    return own.predict(features) / threads < fastest


def one_thread_models(calibration: Calibration, kind: str, group: str | None, family: str | None
                      ) -> list[FittedModel]:
    """The calibrated one-thread models of every CPU variant of ``kind`` (the network kernels' ``family``'s) for
    the workloads of model group ``group``."""
    from pearl_py.estimate.estimator import registered_variants

    found = [calibration.model(kind, name, group, family=family)
             for name, _ in registered_variants(kind, "cpu", family or "off_policy")]
    return [model for model in found if model is not None]
