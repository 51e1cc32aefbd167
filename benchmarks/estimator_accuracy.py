"""Estimator accuracy on this CPU: calibrate on one grid, predict and measure a held-out grid, per variant.

Every kernel kind and every implementation variant with a micro-benchmark, of every algorithm family
(``reference``; ``learner_update/compiled``, ``inference/fused``; the on-policy family's
``inference`` and ``learner_update`` (``reference``, ``fused``), ``rollout_insert`` and ``advantage``)
is calibrated exactly as
``pearl profile`` does (grid of :func:`pearl_py.profile.profiler.calibration_grid`), then
measured at batch sizes, layer widths, buffer capacities and copy sizes that were never
calibrated (:func:`heldout_grid`). CNN learners and acting networks (DQN with the MinAtar small CNN
and NatureCNN on random frames) have a model of their own (``learner_update/reference/cnn``,
``inference/reference/cnn``), calibrated on some frame shapes and batch sizes and held out on others.
Prints median and worst absolute percentage error per kind and variant, then the learner update at the zoo
shapes (DQN CartPole batch 64 [256, 256],
DDPG Pendulum batch 256 [400, 300]): predicted and measured per variant, and the speed-up.

The ``compiled`` learner update is calibrated as ``pearl profile`` does it (one compile per
network shape, batch dimension dynamic) but measured on the held-out points as the runtime
runs it: the registry's ``compiled`` variant, a static graph compiled per point (~10-20 s
each). Two ways of predicting it are compared on those points:

- ``fit``: its own model, fitted to its calibration points like any variant (what ``pearl profile`` stores);
- ``ratio``: the reference model's prediction divided by the measured reference/compiled
  speed-up of the calibration points in the same FLOP band (half a decade wide).

Usage::

    /work/venv/bin/python benchmarks/estimator_accuracy.py            # ~4-8 minutes on a 2-core VM (18 compiles)
    /work/venv/bin/python benchmarks/estimator_accuracy.py --no-compiled   # ~1 minute, no compiles
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
import time

import torch

from pearl_py.estimate.calibration import Calibration, machine_fingerprint, model_key
from pearl_py.estimate.estimator import Estimator
from pearl_py.estimate.features import model_group
from pearl_py.profile.microbench import (
    OFF_POLICY,
    BenchPoint,
    _algorithm,
    _random_batch,
    clear_compiled,
    families,
    register_runner,
    variants,
)
from pearl_py.profile.profiler import (
    KINDS,
    ZOO_POINTS,
    calibration_grid,
    fit_measurements,
    heldout_grid,
    measure,
    variant_available,
)
from pearl_py.platform import Platform
from pearl_py.protocol import Kernel, KernelKind

TARGET_PCT = 15.0
BAND_DECADES = 0.5


def static_compiled(point: BenchPoint):
    """The registry's ``compiled`` learner update as the runtime builds it: a static graph at this shape."""
    import pearl_py.kernels as kernels
    from pearl_py.algorithms.off_policy.learner import Learner

    algo = _algorithm(point, batch_size=point.batch)
    learner = Learner(algo, device="cpu")
    update = kernels.build("learner_update", "compiled", learner)
    batch = _random_batch(algo, point.batch, torch.Generator().manual_seed(0))
    start = time.perf_counter()
    with torch._dynamo.config.patch(recompile_limit=1024):
        update(batch)
    static_compiled.compile_s.append(time.perf_counter() - start)
    return algo.protocol().kernel("learner_update").workload, lambda: update(batch)


static_compiled.compile_s = []


def band(flops: float) -> int:
    return math.floor(math.log10(flops) / BAND_DECADES)


def ratio_predictions(reference: list, compiled: list, estimator: Estimator, heldout: list) -> list[float]:
    """Reference prediction / the median measured speed-up of calibration points in the held-out point's FLOP band."""
    ref_at = {(w.flops, w.n_ops): s for w, s in reference}
    ratios: dict[int, list[float]] = {}
    for workload, seconds in compiled:
        ref = ref_at.get((workload.flops, workload.n_ops))
        if ref is not None:
            ratios.setdefault(band(workload.flops), []).append(ref / seconds)
    bands = sorted(ratios)
    cpu = Platform.local().device("cpu")
    out = []
    for workload, _ in heldout:
        b = min(bands, key=lambda x: abs(x - band(workload.flops)))
        ref = estimator.kernel_cost(Kernel("learner_update", KernelKind.LEARNER_UPDATE, workload, rate=1.0), cpu).latency_s
        out.append(ref / statistics.median(ratios[b]))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-compiled", action="store_true", help="skip the compiled learner update (no compiles)")
    args = parser.parse_args()
    torch.set_num_threads(1)   # as every runtime process runs (and pearl profile times): no pool threads spinning
    start = time.perf_counter()
    calibration = Calibration(machine_fingerprint())
    calibrated: dict[tuple[str, str, str], list] = {}
    heldout: dict[tuple[str, str, str], list] = {}
    for kind in KINDS:
        for family, variant in ((f, v) for f in families(kind) for v in variants(kind, f)):
            if variant == "compiled" and args.no_compiled or variant == "compiled_static":
                continue
            if not variant_available(kind, variant, "cpu", family=family)[0]:   # a GPU's variant (cuda_graph) on a CPU
                continue
            key = (kind, variant, family)
            calibrated[key] = measure(kind, variant, calibration_grid(kind, variant=variant, family=family),
                                      family=family)
            for env_id, model in fit_measurements(kind, calibrated[key]).items():
                calibration.models[model_key(kind, variant, env_id, family=_model_family(calibrated[key]))] = model
            if variant == "compiled":
                clear_compiled()
                register_runner("learner_update", "compiled_static", static_compiled, family)
                heldout[key] = measure(kind, "compiled_static", heldout_grid(kind, variant, family=family), family=family)
            else:
                heldout[key] = measure(kind, variant, heldout_grid(kind, variant, family=family), family=family)
            print(f"  measured {kind}/{variant} ({family}) ({time.perf_counter() - start:.0f} s)", file=sys.stderr,
                  flush=True)
    estimator = Estimator(calibration)
    cpu = Platform.local().device("cpu")

    print(f"{'kernel kind / variant':<34} {'model':<10} {'points':>6} {'median |err|':>13} {'max |err|':>10}")
    failed = False
    rows: dict[str, list[float]] = {}
    for (kind, variant, _), measured in heldout.items():
        for workload, seconds in measured:
            cost = estimator.kernel_cost(Kernel(kind, KernelKind(kind), workload, rate=1.0), cpu, variant)
            assert cost.source == "calibrated"
            key = model_key(kind, variant, model_group(workload), family=_model_family([(workload, seconds)]))
            rows.setdefault(key, []).append(abs(cost.latency_s - seconds) / seconds * 100)
    for key, errors in rows.items():
        median = statistics.median(errors)
        failed |= median > TARGET_PCT
        print(f"{key:<34} {calibration.models[key].form:<10} {len(errors):>6} {median:>12.1f}% {max(errors):>9.1f}%")
    if ("learner_update", "compiled", OFF_POLICY) in heldout:
        measured = heldout[("learner_update", "compiled", OFF_POLICY)]
        predicted = ratio_predictions(calibrated[("learner_update", "reference", OFF_POLICY)],
                                      calibrated[("learner_update", "compiled", OFF_POLICY)], estimator, measured)
        errors = [abs(p - s) / s * 100 for p, s in zip(predicted, (s for _, s in measured))]
        print(f"{'learner_update/compiled':<34} {'ratio':<10} {len(errors):>6} {statistics.median(errors):>12.1f}% "
              f"{max(errors):>9.1f}%   (alternative: reference / speed-up per FLOP band)")
        speedups = [r / c for (_, c), (_, r) in zip(measured, _reference_at(heldout, measured))]
        print(f"held-out speed-up of compiled over reference: {min(speedups):.2f}x-{max(speedups):.2f}x; "
              f"static compiles {statistics.median(static_compiled.compile_s):.1f} s median "
              f"({min(static_compiled.compile_s):.1f}-{max(static_compiled.compile_s):.1f})")
        zoo_ref = measure("learner_update", "reference", list(ZOO_POINTS), family=OFF_POLICY)
        zoo_cmp = measure("learner_update", "compiled_static", list(ZOO_POINTS), family=OFF_POLICY)
        print(f"\n{'zoo learner update':<30} {'variant':<10} {'predicted':>10} {'measured':>10} {'error':>7}")
        for point, (w, ref_s), (_, cmp_s) in zip(ZOO_POINTS, zoo_ref, zoo_cmp):
            kernel = Kernel("learner_update", KernelKind.LEARNER_UPDATE, w, rate=1.0)
            label = f"{point.algo} b{point.batch} {list(point.hidden)}"
            predicted = {}
            for variant, seconds in (("reference", ref_s), ("compiled", cmp_s)):
                predicted[variant] = estimator.kernel_cost(kernel, cpu, variant).latency_s
                print(f"{label:<30} {variant:<10} {predicted[variant] * 1e3:>8.3f}ms {seconds * 1e3:>8.3f}ms "
                      f"{(predicted[variant] - seconds) / seconds * 100:>+6.1f}%")
            print(f"{label:<30} {'speed-up':<10} {predicted['reference'] / predicted['compiled']:>9.2f}x "
                  f"{ref_s / cmp_s:>9.2f}x")
    print(f"(held-out points only; CPU time of one core, torch single-threaded; {time.perf_counter() - start:.0f} s)")
    return 1 if failed else 0


def _model_family(measured: list) -> str | None:
    """The family a kind's model is kept under: a network workload's own (different code per family); None (the
    shared model) for the other kinds."""
    return getattr(measured[0][0], "family", None)


def _reference_at(heldout: dict, measured: list) -> list:
    ref = {(w.flops, w.n_ops): (w, s) for w, s in heldout[("learner_update", "reference", OFF_POLICY)]}
    return [ref[(w.flops, w.n_ops)] for w, _ in measured]


if __name__ == "__main__":
    sys.exit(main())
