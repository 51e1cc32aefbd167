"""Calibrate this CPU: run every kernel kind over a grid, fit a model per (kind, variant[, env][, threads]).

Runs single-threaded (``torch.set_num_threads(1)``), as every pearl_py actor and server
process does. The learner update may run more threads (the optimizer plans its thread
count): its variants in :data:`THREADED_VARIANTS` are also timed at 2 .. min(cores,
:data:`MAX_THREADS`) threads, in wall time beside an actor-like process, on the quick grid, each
count with its own model (``learner_update/fused@2threads``). ``pearl profile`` calls :func:`profile` and caches the
result per machine. Every variant with a micro-benchmark is calibrated where
``pearl_py.kernels`` says it can run here; a variant with a one-off setup (the ``compiled``
learner update's compile) also records that setup in ``calibration.meta["setup"]``.

Example::

    >>> cal = profile(quick=True)                 # ~1 minute on a 2-core VM
    >>> cal.model(INFERENCE, "reference").form
    'linear'
"""
from __future__ import annotations

import contextlib
import itertools
import math
import statistics
import time
from collections.abc import Callable, Collection, Iterator, Mapping

import torch

from pearl_py.estimate.calibration import (  # KINDS, CALIBRATED_ENVS: what this module calibrates
    CALIBRATED_ENVS,
    DEFERRED_KEY,
    IN_LOOP_KEY,
    KINDS,
    LOOP_KEY,
    NORMALIZE_KEY,
    MAX_THREADS,
    PROCESS_START_KEY,
    ROUND_TRIP_KEY,
    SPREAD_KEY,
    THREADED_VARIANTS,
    Calibration,
    machine_fingerprint,
    model_key,
    network_family,
)
from pearl_py.estimate.features import model_group, workload_features
from pearl_py.estimate.fit import FittedModel, select_model
from pearl_py.estimate.thread_bound import threads_can_win
from pearl_py.kernels.affinity import pinned_threads, usable_cpus
from pearl_py.kernels.registry import call_cores
from pearl_py.profile import microbench_on_policy  # noqa: F401  registers the on-policy kernels' runners
from pearl_py.profile.coverage import COVERS_KEY, MLP, NETWORKS, coverage, env_counts
from pearl_py.profile.load import (
    MAX_REPEATS,
    RULE,
    LoadProbe,
    LoadRecord,
    LoadSample,
    load_average,
)
from pearl_py.profile.loop_overhead import time_loop_work
from pearl_py.profile.microbench import (
    OFF_POLICY,
    BenchPoint,
    build,
    clear_compiled,
    families,
    time_call,
    variants,
)
from pearl_py.profile.neighbour import NeighbourNotStarted, neighbour
from pearl_py.profile.normalize_cost import time_normalize
from pearl_py.profile.power_profile import PowerProfile
from pearl_py.profile.process_start import time_child_process
from pearl_py.profile.progress import ProfileProgress
from pearl_py.protocol import Workload
from pearl_py.protocol.kernel import (
    ADVANTAGE,
    ENV_STEP,
    INFERENCE,
    LEARNER_UPDATE,
    PARAM_SYNC,
    PRIORITY_UPDATE,
    REPLAY_INSERT,
    REPLAY_SAMPLE,
    ROLLOUT_INSERT,
)
from pearl_py.runtime.families import family_named, registered_families
from pearl_py.runtime.run_log import clock


KIND_FEATURES: dict[str, tuple[str, list[str]]] = {
    LEARNER_UPDATE: ("flops", ["flops", "bytes", "ops", "activations"]),
    INFERENCE: ("flops", ["flops", "weights", "ops"]),
    REPLAY_INSERT: ("batch", ["batch", "bytes", "levels", "tree_work", "prioritized"]),
    REPLAY_SAMPLE: ("batch", ["batch", "bytes", "levels", "tree_work", "prioritized"]),
    PRIORITY_UPDATE: ("batch", ["batch", "levels", "tree_work"]),
    ENV_STEP: ("n_envs", ["n_envs"]),
    PARAM_SYNC: ("bytes", ["bytes", "tensors"]),
    ROLLOUT_INSERT: ("batch", ["batch", "bytes"]),
    ADVANTAGE: ("elements", ["steps", "elements"]),
}
"""Primary size (power-law and piecewise forms) and linear features of each kind's model."""


CALIBRATED_ALGORITHMS = ("dqn", "ddpg")
"""Algorithms of the calibration grids of the network kinds; a model is fitted on their workload features
(FLOPs, bytes, ops) and predicts any algorithm's (TD3 and SAC are held out: :func:`heldout_grid`)."""
HELDOUT_ALGORITHMS = ("dqn", "ddpg", "td3", "sac")
ON_POLICY_ALGORITHMS = ("ppo", "a2c")
"""The on-policy family's network grids (their categorical CartPole policies)."""
GAUSSIAN_POLICY = ("ppo", "Pendulum-v1")
"""A diagonal Gaussian policy, in the on-policy acting grids besides the categorical ones (docs/cost-models.md)."""
ON_POLICY_WIDTHS = (32, 64, 128, 256)
"""Hidden widths of the on-policy grids (SB3's default 64 and the zoo's largest actor-critic, 256)."""

def _network(kind: str, widths, batches, algos=CALIBRATED_ALGORITHMS) -> list[BenchPoint]:
    return [BenchPoint(kind, algo=a, width=w, batch=b) for a, w, b in itertools.product(algos, widths, batches)]


CNN_SHAPES = {"small_cnn": ((4, 10, 10), (8, 10, 10), (4, 16, 16)), "nature_cnn": ((4, 84, 84),)}
"""Frames of the CNN calibration points: MinAtar-sized frames with the small CNN, Atari's with NatureCNN."""
CNN_HELDOUT_SHAPES = {"small_cnn": ((6, 10, 10), (4, 12, 12)), "nature_cnn": ((4, 64, 64),)}
CNN_HEADS = {"small_cnn": (128,), "nature_cnn": ()}
"""Hidden layers after each extractor (MinAtar's DQN: 128; NatureCNN's 512 features go straight to the outputs)."""
CNN_BATCHES = {LEARNER_UPDATE: {"small_cnn": (32, 128), "nature_cnn": (8, 16, 32)},
               INFERENCE: {"small_cnn": (1, 16), "nature_cnn": (1, 2, 4)}}
"""Batches of the CNN calibration points: every extractor's alone are enough to fit the ``cnn`` model (an Atari
run's first profile times NatureCNN only: :func:`~pearl_py.profile.coverage.covered`)."""


def _cnn(kind: str, shapes: dict, batches: dict[str, tuple[int, ...]], networks: tuple[str, ...] = NETWORKS
         ) -> list[BenchPoint]:
    """DQN points with a CNN extractor on random frames, of the extractors in ``networks``: a model of their own
    (``model_group`` "cnn")."""
    return [BenchPoint(kind, algo="dqn", batch=b, arch=CNN_HEADS[name], frames=frames, extractor=name)
            for name, frame_list in shapes.items() if name in networks for frames in frame_list for b in batches[name]]


def _replay(kind: str, capacities, batches) -> list[BenchPoint]:
    flags = (True,) if kind == PRIORITY_UPDATE else (False, True)
    return [BenchPoint(kind, capacity=c, batch=b, prioritized=p) for c, b, p in itertools.product(capacities, batches, flags)]


WIDTHS = (32, 64, 128, 256, 400)
"""Hidden widths of the network grids: up to the DDPG zoo's 400 (actor and critic [400, 300]), so zoo shapes
are interpolated, not extrapolated."""
COMPILED_WIDTHS = (32, 400)
"""Widths the ``compiled`` learner update is calibrated at: one compile each per algorithm (4 in all)."""


def _on_policy_network(kind: str, widths, batches, points: list[tuple[str, str]] | None = None) -> list[BenchPoint]:
    """Points of the on-policy network grids: ``(algorithm, env id or "" for its zoo env)`` x widths x batches."""
    points = points if points is not None else [(a, "") for a in ON_POLICY_ALGORITHMS]
    return [BenchPoint(kind, algo=a, env_id=e, width=w, batch=b)
            for (a, e), w, b in itertools.product(points, widths, batches)]


def calibration_grid(kind: str, quick: bool = False, variant: str = "reference", *,
                     family: str, envs: tuple[str, ...] = CALIBRATED_ENVS,
                     networks: tuple[str, ...] = NETWORKS, max_envs: int | None = None) -> list[BenchPoint]:
    """Points ``pearl profile`` measures; ``quick`` keeps the corners and the middle. ``envs``: the envs whose
    ``env_step`` is timed, at the vector sizes a run of up to ``max_envs`` envs reads (:func:`env_counts`; None:
    every size); ``networks``: the networks timed (:data:`~pearl_py.profile.coverage.NETWORKS`: a run of an MLP
    skips the CNNs, an Atari run the MLPs and MinAtar's small CNN). The ``compiled`` learner update compiles once
    per network shape, so its grid is two widths at every batch."""
    if family != OFF_POLICY and kind in (LEARNER_UPDATE, INFERENCE) and MLP not in networks:
        return []
    if family != OFF_POLICY and kind in (LEARNER_UPDATE, INFERENCE):
        batches = (16, 64, 256, 512) if kind == LEARNER_UPDATE else (1, 4, 8, 16, 32)
        widths = ON_POLICY_WIDTHS
        if quick:
            batches, widths = batches[::2] + batches[-1:], (32, 64, 256)
        points = [(a, "") for a in ON_POLICY_ALGORITHMS] + ([GAUSSIAN_POLICY] if kind == INFERENCE else [])
        return _on_policy_network(kind, widths, batches, points)
    if kind == ROLLOUT_INSERT:
        return [BenchPoint(kind, capacity=s, batch=n) for s, n in itertools.product((32, 512), (1, 4, 16, 64))]
    if kind == ADVANTAGE:
        steps = (5, 32, 256, 2048) if not quick else (5, 256, 2048)
        return [BenchPoint(kind, capacity=s, batch=n) for s, n in itertools.product(steps, (1, 8, 32))]
    if kind == LEARNER_UPDATE and variant == "channels_last":     # it changes only convolutions
        return _cnn(kind, CNN_SHAPES, CNN_BATCHES[kind], networks)
    if kind == LEARNER_UPDATE and variant == "compiled":
        batches = (32, 128, 256) if quick else (32, 64, 128, 256)
        return _network(kind, COMPILED_WIDTHS, batches) if MLP in networks else []
    if kind in (LEARNER_UPDATE, INFERENCE):
        batches = (32, 64, 128, 256) if kind == LEARNER_UPDATE else (1, 4, 16, 64)
        widths = WIDTHS
        if quick:
            batches, widths = batches[::2] + batches[-1:], (32, 128, 400)
        conv = _cnn(kind, CNN_SHAPES, CNN_BATCHES[kind], networks)
        return (_network(kind, widths, batches) if MLP in networks else []) + (conv if variant == "reference" else [])
    if kind in (REPLAY_INSERT, REPLAY_SAMPLE, PRIORITY_UPDATE):
        return _replay(kind, (1_000, 100_000) if quick else (1_000, 10_000, 100_000),
                       (1, 16, 256) if quick else (1, 8, 64, 256))
    if kind == ENV_STEP:
        return [BenchPoint(kind, env_id=e, batch=n) for e in stepped_envs(variant, envs) for n in env_counts(max_envs)]
    if kind == PARAM_SYNC:   # batch: the tensors the bytes are in
        return [BenchPoint(kind, nbytes=n, batch=t) for n, t in itertools.product(
            (1_000, 10_000, 100_000, 1_000_000, 4_000_000), (2, 8, 32))]
    raise KeyError(kind)


ZOO_POINTS = (BenchPoint(LEARNER_UPDATE, algo="dqn", width=256, batch=64),
              BenchPoint(LEARNER_UPDATE, algo="ddpg", batch=256, arch=(400, 300)),
              BenchPoint(LEARNER_UPDATE, algo="td3", batch=256, arch=(400, 300)),
              BenchPoint(LEARNER_UPDATE, algo="sac", batch=256, arch=(256, 256)))
"""The zoo configurations' learner updates (DQN CartPole batch 64 [256, 256]; DDPG and TD3 Pendulum batch 256
[400, 300]; SAC Pendulum batch 256 [256, 256])."""


def heldout_grid(kind: str, variant: str = "reference", *, family: str) -> list[BenchPoint]:
    """Points never used in calibration (other batch sizes, widths, frame shapes, capacities, sizes); CNN points
    for the variants calibrated on CNNs (reference; channels_last has only those); on-policy: also PPO's Gaussian
    policy (calibrated on other widths and batches for acting; never for learning)."""
    if family != OFF_POLICY and kind in (LEARNER_UPDATE, INFERENCE):
        batches = (40, 128, 384) if kind == LEARNER_UPDATE else (2, 6, 12)
        points = [(a, "") for a in ON_POLICY_ALGORITHMS] + [GAUSSIAN_POLICY]
        return _on_policy_network(kind, (48, 96, 192), batches, points)
    if kind == ROLLOUT_INSERT:
        return [BenchPoint(kind, capacity=s, batch=n) for s, n in itertools.product((128,), (2, 8, 32))]
    if kind == ADVANTAGE:
        return [BenchPoint(kind, capacity=s, batch=n) for s, n in itertools.product((16, 128, 1024), (4, 16))]
    if kind in (LEARNER_UPDATE, INFERENCE):
        batches = (48, 96, 192) if kind == LEARNER_UPDATE else (2, 8, 32)
        cnn = _cnn(kind, CNN_HELDOUT_SHAPES, {"small_cnn": (48, 96), "nature_cnn": (24,)} if kind == LEARNER_UPDATE
                   else {"small_cnn": (2, 8), "nature_cnn": (3,)})
        if variant == "channels_last":
            return cnn
        return _network(kind, (48, 96, 192), batches, HELDOUT_ALGORITHMS) + (cnn if variant == "reference" else [])
    if kind in (REPLAY_INSERT, REPLAY_SAMPLE, PRIORITY_UPDATE):
        return _replay(kind, (3_000, 30_000), (4, 32, 128))
    if kind == ENV_STEP:
        return [BenchPoint(kind, env_id=e, batch=n) for e in stepped_envs(variant, CALIBRATED_ENVS) for n in (3, 6, 12)]
    if kind == PARAM_SYNC:
        return [BenchPoint(kind, nbytes=n, batch=t) for n, t in itertools.product(
            (3_000, 30_000, 300_000, 2_000_000), (4, 16))]
    raise KeyError(kind)


def stepped_envs(variant: str, envs: tuple[str, ...]) -> tuple[str, ...]:
    """The envs of ``envs`` that ``env_step``'s ``variant`` steps (an env backend serves some envs only:
    :attr:`~pearl_py.kernels.Variant.env_support`)."""
    from pearl_py.kernels import REGISTRY

    support = REGISTRY.get(ENV_STEP, variant, "cpu").env_support
    return tuple(e for e in envs if support is None or support(e) is None)


THREAD_PASSES = 5
"""Passes over the grid at more than one thread (wall time: each point keeps the slowest)."""


def usable_cores() -> int:
    return len(usable_cpus())


def thread_counts(kind: str, variant: str, family: str) -> list[int]:
    """Thread counts beyond one that ``variant`` of ``kind`` is calibrated at on this machine (the off-policy
    learner's threaded variants only: an on-policy learner runs while its actors wait, one thread as calibrated)."""
    if not family_named(family).threaded or variant not in THREADED_VARIANTS.get(kind, ()):
        return []
    return list(range(2, min(usable_cores(), MAX_THREADS) + 1))


@contextlib.contextmanager
def threads(n: int) -> Iterator[None]:
    """``n`` intra-op threads (torch, and through it MKL; the fused kernels set scipy's OpenBLAS alike when
    built); restores the previous count, and scipy's OpenBLAS to it."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
        if n != before:
            from pearl_py.kernels.numba_blas import numba_available, set_blas_threads

            if numba_available()[0]:
                set_blas_threads(before)


def _built(kind: str, variant: str, points: list[BenchPoint], family: str,
           on_build: Callable[[float], None] | None) -> list[tuple[Workload, Callable[[], object]]]:
    """Every point's kernel built (:func:`build`), ``on_build`` called after each with its setup seconds."""
    benches = []
    for point in points:
        benches.append(build(kind, variant, point, family))
        if on_build is not None:
            on_build(getattr(benches[-1][1], "setup_s", 0.0))
    return benches


def measure(kind: str, variant: str, points: list[BenchPoint], passes: int = 3,
            setup: list[tuple[Workload, float, bool]] | None = None, n_threads: int = 1,
            clock: Callable[[], float] | None = None,
            window: Callable[[], contextlib.AbstractContextManager[object]] = contextlib.nullcontext,
            probe: LoadProbe | None = None, load: LoadRecord | None = None,
            on_point: Callable[[], None] | None = None, *, family: str,
            spread: list[tuple[float, float]] | None = None,
            on_build: Callable[[float], None] | None = None) -> list[tuple[Workload, float]]:
    """Seconds per call of ``kind``/``variant`` (of algorithm family ``family``) at every point, with
    ``n_threads`` threads (default one), the grid timed ``passes`` times, interleaved.

    One thread: the process's CPU time (or ``clock``: a GPU's, synchronized, :mod:`gpu_profile`), each point keeping
    its fastest pass (neighbours only ever add time). More threads: wall time beside an actor-like process
    (:mod:`neighbour`), each point keeping its *slowest* pass, so a second thread is planned only where it pays in
    every pass (docs/kernels.md); a point is not timed again once :func:`settled`. ``setup`` gets the one-off setups
    (compiles) paid building the kernels; ``window``: a context around the timed passes only (a power meter).
    With ``probe``, every point is timed under the load rule of :mod:`pearl_py.profile.load`, ``load`` recording
    what it saw; at more threads timing stops at the first point still distorted and nothing is returned (the model
    is refused: :func:`profile`). ``on_point``/``on_build``: called after each point timed and each kernel built
    (with its compile's seconds); ``spread`` gets each point's median and p90 over its passes.
    """
    if clock is not None:
        keep = min
    elif n_threads == 1 and call_cores(kind, variant, family) == 1:
        clock, keep = time.process_time, min
    else:   # a call holding several cores (an env backend's worker threads) is timed as a threaded learner is
        clock, keep = time.perf_counter, max
    beside = neighbour("actor") if n_threads > 1 else contextlib.nullcontext()
    with threads(n_threads), beside:
        benches = _built(kind, variant, points, family, on_build)
        if setup is not None:
            setup += [(w, call.setup_s, getattr(call, "setup_cold", True)) for w, call in benches
                      if getattr(call, "setup_s", 0.0) > 0]
        samples: list[list[float]] = [[] for _ in benches]
        with pinned_threads(n_threads), window():  # pinned as the executors run a threaded learner
            for _ in range(passes):
                for times, (_, call) in zip(samples, benches):
                    if settled(times):
                        continue
                    times.append(_timed(call, clock, n_threads, probe, load))
                    if on_point is not None:
                        on_point()
                    if n_threads > 1 and load is not None and load.distorted:
                        return []
    if spread is not None:
        spread += [(statistics.median(times), _p90(times)) for times in samples]
    return [(workload, keep(times)) for (workload, _), times in zip(benches, samples)]


SETTLED_PASSES = 3
"""Passes a point is timed at least before :func:`settled` may stop it."""
SETTLED_WITHIN = 0.05
"""How close to a point's median its passes must all be for :func:`settled` (a fraction of the median)."""


def settled(times: list[float]) -> bool:
    """Whether a point's passes so far settle its figure, so that more passes (a threaded phase's
    :data:`THREAD_PASSES`) would not move it: after :data:`SETTLED_PASSES` passes, the distribution-free interval of
    its median, the passes' range (it holds the median with probability 1 - 2 x 0.5^passes: 75% at 3, 88% at 4),
    lies within :data:`SETTLED_WITHIN` of the median. A point switching between two speeds spreads wider and is
    timed every pass, so the slowest pass a threaded model keeps still catches its slow speed.

        >>> settled([1.00, 1.02, 0.99]), settled([1.00, 1.30, 0.99]), settled([1.00, 1.00])
        (True, False, False)
    """
    if len(times) < SETTLED_PASSES:
        return False
    middle = statistics.median(times)
    return max(times) - middle <= SETTLED_WITHIN * middle and middle - min(times) <= SETTLED_WITHIN * middle


def _p90(values: list[float]) -> float:
    """The 90th percentile (linear between the nearest ranks)."""
    ordered = sorted(values)
    at = 0.9 * (len(ordered) - 1)
    low = int(at)
    return ordered[low] + (at - low) * (ordered[min(low + 1, len(ordered) - 1)] - ordered[low])


LIGHT_WINDOW_S = 0.1
"""Wall seconds a point runs per pass when its slowdown beside the light neighbour is timed: about 18 of the
neighbour's 5.5 ms spins, counted by the mean per call (a median of short chunks would step over them)."""


def _mean_wall(call: Callable[[], object], window_s: float = LIGHT_WINDOW_S) -> float:
    for _ in range(3):
        call()
    calls, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < window_s:
        call()
        calls += 1
    return elapsed / calls


LIGHT_POINTS = 3
"""Points of a model's grid its slowdown beside the light neighbour is timed at: the smallest, middle and largest by
size; the slowdown is one figure per model, the median of the points' ratios (docs/cost-models.md, "Spread")."""


def light_points(points: list[BenchPoint]) -> list[BenchPoint]:
    """:data:`LIGHT_POINTS` of ``points``, evenly spaced in size (a network's batch x (its layers' squared widths + its
    frame's values)), smallest and largest included; all of them when there are no more."""
    if len(points) <= LIGHT_POINTS:
        return list(points)
    ordered = sorted(points, key=lambda p: p.batch * (sum(w * w for w in p.hidden) + math.prod(p.frames or (0,))))
    return [ordered[round(i * (len(ordered) - 1) / (LIGHT_POINTS - 1))] for i in range(LIGHT_POINTS)]


LIGHT_PASSES = 3
"""Windows per point alone and beside the light neighbour (each side keeps their median)."""


def light_neighbour_slowdown(kind: str, variant: str, points: list[BenchPoint], n_threads: int,
                             family: str, passes: int = LIGHT_PASSES,
                             progress: ProfileProgress | None = None) -> float:
    """How much slower ``variant`` of ``kind`` runs at ``n_threads`` threads (pinned, as the executors run it) beside
    a light neighbour than alone: the median over ``points`` of the ratio of a call's mean wall time (median of
    ``passes``) beside the neighbour to alone; ``progress`` counts its builds and windows."""
    with threads(n_threads):
        benches = _built(kind, variant, points, family, progress.built if progress is not None else None)

        def timed() -> list[float]:
            runs = []
            with pinned_threads(n_threads):
                for _ in range(passes):
                    runs.append([])
                    for _, call in benches:
                        runs[-1].append(_mean_wall(call))
                        if progress is not None:
                            progress.point()
            return [statistics.median(run[i] for run in runs) for i in range(len(benches))]

        alone = timed()
        with neighbour("light"):
            beside = timed()
    return statistics.median(b / a for a, b in zip(alone, beside))


def light_windows(kind: str, variant: str, family: str, points: list[BenchPoint]) -> int:
    """How many windows :func:`spread_entry` times beside and apart from the light neighbour for a model of ``points``
    (0: a variant it does not time there), for the profile's progress."""
    if not family_named(family).threaded or variant not in THREADED_VARIANTS.get(kind, ()) or usable_cores() < 2:
        return 0
    return 2 * LIGHT_PASSES * len(light_points(points))


def light_counts(kind: str, variant: str, family: str, points: list[BenchPoint]) -> tuple[int, int, int]:
    """The windows :func:`spread_entry` times beside and apart from the light neighbour (:func:`light_windows`), the
    kernels it builds for them and how many of those compile (all, for a variant that compiles: :func:`setup_cached`),
    for the profile's progress."""
    windows = light_windows(kind, variant, family, points)
    builds = len(light_points(points)) if windows else 0
    return windows, builds, builds if setup_cached(kind, variant, family) else 0


def _timed(call: Callable[[], object], clock: Callable[[], float], n_threads: int, probe: LoadProbe | None,
           load: LoadRecord | None) -> float:
    """One point's seconds per call; under ``probe``, timed again (up to MAX_REPEATS) while distorted."""
    if probe is None:
        return time_call(call, clock=clock)
    for repeated in range(MAX_REPEATS + 1):
        with probe.timing(n_threads) as sample:
            seconds = time_call(call, clock=clock)
        if not sample.distorted:
            break
    if load is not None:
        load.add(sample, repeated)
    return seconds


def spread_entry(kind: str, variant: str, n: int, family: str, spread: list[tuple[float, float]],
                 log: Callable[[str], None], points: list[BenchPoint],
                 progress: ProfileProgress | None = None) -> dict[str, float]:
    """``meta["spread"]``'s entry of a model (:class:`~pearl_py.estimate.calibration.Spread`): its points' p90 over
    median and, for a variant the off-policy learner may run threaded, the slowdown beside a light neighbour at
    ``n`` threads (the one-thread model's too, to compare with), timed at :func:`light_points` of the model's
    ``points``."""
    entry = {"p90_over_median": round(statistics.median(p90 / max(median, 1e-12) for median, p90 in spread), 4)}
    if light_windows(kind, variant, family, points):
        key = model_key(kind, variant, threads=n, family=family)

        def timed() -> float:
            return light_neighbour_slowdown(kind, variant, light_points(points), n, family, progress=progress)

        try:
            entry["light_neighbour"] = round(checked_slowdown(timed, key, log, progress,
                                                              *light_counts(kind, variant, family, points)), 4)
        except NeighbourNotStarted as exc:   # a threaded model is then refused (profile); a one-thread one kept
            if n > 1:
                raise
            log(f"warning: {key} not timed beside a light neighbour: {exc}")
            return entry
        log(f"{key:<33} beside a light neighbour: {entry['light_neighbour']:.2f}x its time alone")
    return entry


LIGHT_NOISE = 0.05
"""How far below 1 a slowdown beside the light neighbour is read as noise about 1 (kept as 1, not timed again)."""


def checked_slowdown(timed: Callable[[], float], key: str, log: Callable[[str], None],
                     progress: ProfileProgress | None = None, windows: int = 0, builds: int = 0,
                     compiled: int = 0) -> float:
    """A slowdown beside the light neighbour of at least 1: a neighbour only adds time, so a figure below 1 means the
    load changed between the windows alone and those beside (docs/cost-models.md). A figure below 1 - :data:`LIGHT_NOISE` is timed once more
    (its ``windows`` and ``builds``, ``compiled`` of them compiling, counted into ``progress``); still below 1, it is kept as 1 and said so.

        >>> figures, said = iter([0.65, 0.18]), []
        >>> checked_slowdown(lambda: next(figures), "learner_update/fused", said.append), said[0][:40]
        (1.0, 'warning: learner_update/fused ran faster')
    """
    slowdown = timed()
    if slowdown >= 1.0 - LIGHT_NOISE:
        return max(slowdown, 1.0)
    if progress is not None:
        progress.counted(windows, builds, compiled)
    first, slowdown = slowdown, timed()
    if slowdown < 1.0:
        log(f"warning: {key} ran faster beside a light neighbour than alone, twice ({first:.2f}x, then "
            f"{slowdown:.2f}x): other processes' load changed between its windows; kept as 1.00x")
    return max(slowdown, 1.0)


def fit_measurements(kind: str, measured: list[tuple[Workload, float]]) -> dict[str | None, FittedModel]:
    """One model per kind and :func:`~pearl_py.estimate.features.model_group`: per env id for ``env_step``, one for
    the CNN networks (``cnn``) and one for the rest (None)."""
    primary, features = KIND_FEATURES[kind]
    groups: dict[str | None, list[tuple[Workload, float]]] = {}
    for workload, seconds in measured:
        groups.setdefault(model_group(workload), []).append((workload, seconds))
    return {key: select_model([workload_features(w) for w, _ in rows], [s for _, s in rows], primary, features)
            for key, rows in groups.items()}


def variant_available(kind: str, variant: str, device_class: str = "cpu", *, family: str) -> tuple[bool, str]:
    """Whether ``pearl_py.kernels`` can run ``variant`` of ``kind`` (algorithm family ``family``'s) on this machine's
    ``device_class`` (``cpu`` or ``gpu``; kinds it does not list: the reference only)."""
    from pearl_py.kernels import registry_of

    registry = registry_of(family)
    try:
        return registry.get(kind, variant, device_class).available()
    except (KeyError, ValueError):
        if variant == "reference" and not registry.variants(kind, device_class):
            return True, ""
        return False, f"no {kind} variant {variant!r} on {device_class}"


def setup_cached(kind: str, variant: str, family: str) -> bool:
    """Whether ``variant``'s compile is cached for every shape (:attr:`Variant.setup_cached`)."""
    from pearl_py.kernels import registry_of

    try:
        return registry_of(family).get(kind, variant, "cpu").setup_cached
    except (KeyError, ValueError):
        return False


def setup_entry(setup: list[tuple[Workload, float, bool]], cached: bool = False) -> dict:
    """``calibration.meta["setup"]`` entry: the one-off setup (compile wall seconds) a run pays.

    ``cached`` (:attr:`pearl_py.kernels.registry.Variant.setup_cached`: numba's disk cache serves
    every shape): the median warm setup, the profile having filled the cache (the median cold one when no build
    was warm). Otherwise the median cold one, one figure per variant (docs/cost-models.md); compiles a cache
    shortened are kept as ``warm`` but not used (``seconds`` None then: the estimator falls back to
    ``estimators/roofline.yaml``).
    """
    cold = sorted(s for _, s, is_cold in setup if is_cold)
    warm = [round(s, 2) for _, s, is_cold in setup if not is_cold]
    pick = sorted(warm) if cached and warm else cold
    return {"seconds": round(pick[len(pick) // 2], 2) if pick else None,
            "cold": [round(s, 2) for s in cold], "warm": warm}


def profile(quick: bool = False, kinds: tuple[str, ...] = KINDS,
            log: Callable[[str], None] = lambda line: None, power: PowerProfile | None = None,
            gpus: bool = True, probe: LoadProbe | None = None, families_of: tuple[str, ...] | None = None,
            into: Calibration | None = None, envs: tuple[str, ...] = CALIBRATED_ENVS,
            networks: tuple[str, ...] = NETWORKS, max_envs: int | None = None,
            skip: Mapping[str, str] | None = None, only: Collection[str] | None = None,
            workloads: Mapping[str, Collection[Workload]] | None = None) -> Calibration:
    """Measure and fit every registered variant of every kind that can run on this CPU, then on each local GPU
    (``gpus``, where CUDA is present: :mod:`gpu_profile`); with the power each draws where a counter reads it
    (``power``: default, this machine's counters; ``calibration.meta["energy"]``).

    Reports its progress through ``log``, warns when the machine is loaded, and applies the load rule
    (:mod:`pearl_py.profile.load`, measured by ``probe``, default ``/proc/stat``): the load goes to
    ``meta["load"]``, and a multi-thread model with points still distorted is refused. ``families_of``: only these
    algorithm families' implementations (default: all); ``into``: add the models to this calibration (a cache
    missing some kinds; its power and load records stay). ``envs``, ``networks``, ``max_envs``: the envs whose
    ``env_step`` is timed, the networks timed and the vector sizes (:func:`calibration_grid`;
    :func:`pearl_py.pipeline.planning.ensure_calibration`), what each model covers recorded in
    ``meta["covers"]`` (:mod:`pearl_py.profile.coverage`). ``skip``: variants
    (``kind/variant`` keys, a network kernel's with its family: ``on_policy/learner_update/compiled``) left for
    later, with why, in ``meta["deferred"]``; ``only``: just these variants (a threaded model by its key,
    ``learner_update/reference@2threads``); a variant profiled leaves ``meta["deferred"]``. ``workloads``: the
    run's own per kind; a threaded model that cannot beat the kind's fastest one-thread model on any of them
    (:func:`~pearl_py.estimate.thread_bound.threads_can_win`) is deferred, not timed (None: every one is timed).
    """
    threaded = {model_key(kind, v): [1, *thread_counts(kind, v, OFF_POLICY)] for kind in kinds
                for v in variants(kind, OFF_POLICY) if thread_counts(kind, v, OFF_POLICY)}
    cores = usable_cores()
    calibration = into if into is not None else Calibration(
        machine_fingerprint(), meta={"quick": quick, "threads": 1, "threaded": threaded, "torch": torch.__version__})
    if power is None:
        from pearl_py.platform import Platform
        from pearl_py.platform.energy import local_readers

        power = PowerProfile(local_readers(Platform.local()))
    power.start()
    start_load = load_average()
    load_meta: dict = calibration.meta.setdefault("load", {
        "usable_cores": cores, "rule": RULE, "load_average_start": start_load, "models": {}, "refused": {}})
    warn_if_loaded(start_load, cores, log)
    phases = profile_phases(kinds, quick, log, families_of, envs, networks, skip or {}, only, max_envs)
    deferred = calibration.meta.setdefault(DEFERRED_KEY, {})
    deferred.update(skip or {})
    for kind, variant, n, _, _, family in phases:
        deferred.pop(model_key(kind, variant, threads=n, family=network_family(kind, family)), None)
    # a phase the load rule will likely refuse at its first point is counted in the ETA's totals only once it starts
    later = [refusal_expected(n, cores, start_load) for _, _, n, _, _, _ in phases]
    counts = [phase_counts(*phase) for phase in phases]
    points, builds, compiled = (sum(column) for column in zip(*(c for c, late in zip(counts, later) if not late),
                                                              (0, 0, 0)))
    progress = ProfileProgress(points, len(phases), log, total_builds=builds, total_compiled=compiled)
    probe = probe or LoadProbe(cores)
    start = time.perf_counter()
    fitted: dict[str, tuple[FittedModel, float]] = {}
    try:
        for (kind, variant, n, points, passes, family), late, count in zip(phases, later, counts):
            keyed = network_family(kind, family)   # a network kernel's model is its family's (different code)
            key = model_key(kind, variant, threads=n, family=keyed)
            if n > 1 and workloads is not None and not threads_can_win(calibration, kind, variant, n,
                                                                       workloads.get(kind, ()), keyed):
                deferred[key] = (f"at {n} threads it cannot beat the fastest one-thread variant on this run's "
                                 f"{kind} workloads (its one-thread time over {n} is slower)")
                log(f"{key:<32} deferred: {deferred[key]}")
                if not late:   # a late phase is not in the totals yet
                    progress.dropped(*count)
                progress.phases -= 1
                continue
            if late:
                progress.counted(*count)
            progress.phase(key, len(points) * passes, compiles=setup_cached(kind, variant, family))
            t0 = time.perf_counter()
            record = LoadRecord()
            setup: list[tuple[Workload, float, bool]] = []
            spread: list[tuple[float, float]] = []
            not_started = ""
            try:
                measured = measure(kind, variant, points, passes, setup=setup if n == 1 else None, n_threads=n,
                                   window=lambda key=key: power.window("cpu", key), probe=probe, load=record,
                                   on_point=progress.point, family=family, spread=spread, on_build=progress.built)
                if measured:   # a threaded model timing stopped (refused below) has no spread to keep
                    progress.part = "light neighbour"
                    calibration.meta.setdefault(SPREAD_KEY, {})[key] = spread_entry(kind, variant, n, family, spread,
                                                                                    log, points, progress)
            except NeighbourNotStarted as exc:   # too busy to time beside another process: refused below
                measured, not_started = [], str(exc)
            progress.part = "grid"
            load_meta["models"][key] = record.to_dict()
            progress.dropped(len(points) * passes - record.points)   # settled points (and a refused model's rest)
            if setup:
                entry = setup_entry(setup, cached=setup_cached(kind, variant, family))
                calibration.meta.setdefault("setup", {})[model_key(kind, variant, family=keyed)] = entry
                log(f"{model_key(kind, variant, family=keyed):<32} setup (compile) {sum(s for _, s, _ in setup):.1f}s "
                    f"for {len(setup)} shapes ({len(entry['cold'])} cold)")
            if (record.distorted or not_started) and n > 1:
                progress.dropped(*light_counts(kind, variant, family, points))   # not timed: the model is refused
                load_meta["refused"][key] = not_started or (
                    f"point {record.points} of {len(points) * passes} stayed distorted (timing stopped there): other "
                    f"processes kept up to {record.max_others_cores:.1f} cores busy")
                rule = "the load rule above" if len(load_meta["refused"]) > 1 else f"rule: {RULE}"
                log(f"warning: {key} refused: {load_meta['refused'][key]} ({rule}); plans use one thread")
                continue
            if record.distorted:
                log(f"warning: {key}: {record.distorted} of {record.points} points stayed distorted by other "
                    f"processes (up to {record.max_others_cores:.1f} cores busy); kept (CPU time), flagged in meta")
            models = fit_measurements(kind, measured)
            for env_id, model in models.items():
                fitted[model_key(kind, variant, env_id, n, family=keyed)] = (model, time.perf_counter() - t0)
                covers = coverage(env_id, points)
                if covers is not None:
                    calibration.meta.setdefault(COVERS_KEY, {})[model_key(kind, variant, env_id, n, family=keyed)] = covers
            for k in sorted(model_key(kind, variant, env_id, n, family=keyed) for env_id in models):
                model, seconds = fitted[k]
                calibration.models[k] = model
                log(f"{k:<33} {model.form:<9} cv error {model.cv_mape:5.1f}%  ({model.n_points} points, "
                    f"{seconds:.1f}s)")
        if ENV_STEP in kinds or ROLLOUT_INSERT in kinds:   # a profile of the collection side: its loop, its actors
            profile_loops(calibration, families_of, log)
        if gpus:
            from pearl_py.profile.gpu_profile import profile_gpus

            profile_gpus(calibration, quick, kinds, log, power, skip=skip,
                         grid={"envs": envs, "networks": networks, "max_envs": max_envs})
    finally:
        clear_compiled()
        if into is None or "energy" not in calibration.meta:
            calibration.meta["energy"] = power.meta()
    load_meta["load_average_end"] = load_average()
    before = calibration.meta.get("seconds", 0.0) if into is not None else 0.0
    calibration.meta["seconds"] = round(before + time.perf_counter() - start, 1)
    log(f"profiled in {clock(time.perf_counter() - start)}: {progress.breakdown(time.perf_counter() - start)}")
    return calibration


def phase_counts(kind: str, variant: str, n: int, points: list[BenchPoint], passes: int, family: str
                 ) -> tuple[int, int, int]:
    """The timed points (the grid's passes and the light-neighbour windows), the builds of a profile phase
    (:func:`profile_phases`' tuple) and how many of those compile (all, for a variant that compiles), for the
    profile's progress."""
    windows, builds, compiled = light_counts(kind, variant, family, points)
    compiling = setup_cached(kind, variant, family)
    return len(points) * passes + windows, len(points) + builds, compiled + (len(points) if compiling else 0)


def refusal_expected(threads: int, cores: int, load: float | None) -> bool:
    """Whether a phase at ``threads`` threads will likely be refused at its first point (:mod:`load`'s rule), read
    from the machine's load average before the profile (``load``, less this process's one core): the ETA then
    counts it only once it starts (docs/cost-models.md)."""
    if threads < 2 or load is None:
        return False
    return LoadSample(threads, max(cores - threads, 0), max(load - 1.0, 0.0)).distorted


def profile_loops(calibration: Calibration, families_of: tuple[str, ...] | None, log: Callable[[str], None]) -> None:
    """Time the training loop's own work of each family (:mod:`loop_overhead`; a kind's excess in the loop where
    ``calibration`` has its kernels' model), the ``normalize`` transform's
    (:mod:`normalize_cost`), the start of a child process and a handshake with it (:mod:`process_start`) into
    ``calibration.meta``."""
    from pearl_py.estimate.estimator import Estimator
    from pearl_py.platform import Platform

    estimator, cpu = Estimator(calibration), Platform.local().by_kind("cpu")[0]

    def alone(kernel, variant: str) -> float | None:   # None: this profile fitted no model of it (a CNN run's MLP)
        cost = estimator.kernel_cost(kernel, cpu, variant)
        return cost.latency_s if cost.source == "calibrated" else None

    for family in (f.name for f in registered_families() if families_of is None or f.name in families_of):
        work = time_loop_work(family, alone=alone)
        if work is not None:
            calibration.meta.setdefault(LOOP_KEY, {})[family] = work.to_dict()
            calibration.meta.setdefault(IN_LOOP_KEY, {})[family] = work.in_loop
            excess = ", ".join(f"{kind} +{seconds * 1e6:.1f}us (+{work.in_round[kind] * 1e6:.0f}us a round)"
                               for kind, seconds in sorted(work.in_loop.items()))
            log(f"{'loop work (' + family + ')':<33} {work.per_step * 1e6:.1f}us per vector step, "
                f"{work.per_update * 1e6:.1f}us per update, {work.per_round * 1e6:.1f}us per round; "
                f"in a loop: {excess}")
    lines = calibration.meta[NORMALIZE_KEY] = time_normalize()
    log(f"{'normalize (VecNormalize)':<33} " + "; ".join(
        f"{part} {line['per_call'] * 1e6:.1f}us + {line['per_value'] * 1e9:.2f}ns per observation value"
        for part, line in lines.items()))
    child = time_child_process()
    if child is not None:
        calibration.meta[PROCESS_START_KEY] = round(child.start_s, 3)
        calibration.meta[ROUND_TRIP_KEY] = round(child.round_trip_s, 9)
        log(f"{'process start (spawn, imports)':<33} {child.start_s:.2f}s; a handshake with it "
            f"{child.round_trip_s * 1e6:.0f}us")


def profile_phases(kinds: tuple[str, ...], quick: bool, log: Callable[[str], None],
                   families_of: tuple[str, ...] | None = None, envs: tuple[str, ...] = CALIBRATED_ENVS,
                   networks: tuple[str, ...] = NETWORKS, skip: Mapping[str, str] | None = None,
                   only: Collection[str] | None = None, max_envs: int | None = None
                   ) -> list[tuple[str, str, int, list[BenchPoint], int, str]]:
    """``(kind, variant, threads, points, passes, family)`` of every model the profile fits, in order (variants that
    cannot run here are logged and left out); ``families_of``: of a kind several families implement (the
    networks'), only these families' (default: all; a kind one family's code serves, env_step's, is timed
    whichever family asks); ``envs``, ``networks``, ``max_envs``: as :func:`calibration_grid` (a variant left without
    points, ``channels_last`` without CNNs, is left out); ``skip``, ``only``: as :func:`profile`."""
    phases = []
    for kind in kinds:
        implemented = families(kind)
        for family in (f for f in implemented if families_of is None or f in families_of or len(implemented) == 1):
            threaded = []   # after the kind's one-thread phases, whose models bound them (profile's ``workloads``)
            for variant in variants(kind, family):
                key = model_key(kind, variant, family=network_family(kind, family))
                if skip and key in skip:
                    log(f"{key:<32} deferred: {skip[key]}")
                    continue
                counts = [n for n in (1, *thread_counts(kind, variant, family)) if only is None or
                          model_key(kind, variant, threads=n, family=network_family(kind, family)) in only]
                if not counts:
                    continue
                ok, reason = variant_available(kind, variant, family=family)
                if not ok:
                    log(f"{key:<32} skipped: {reason}")
                    continue
                grid = calibration_grid(kind, quick, variant, family=family, envs=envs, networks=networks,
                                        max_envs=max_envs)
                if not grid:
                    continue
                phases += [(kind, variant, 1, grid, 3, family)] if counts[0] == 1 else []
                quick_grid = calibration_grid(kind, True, variant, family=OFF_POLICY, envs=envs, networks=networks,
                                              max_envs=max_envs)
                threaded += [(kind, variant, n, quick_grid, THREAD_PASSES, family) for n in counts if n > 1]
            phases += threaded
    return phases


def warn_if_loaded(load: float | None, cores: int, log: Callable[[str], None]) -> None:
    """Say so when the machine is already busy: its load will distort the timings."""
    if load is not None and load > cores - 0.5:
        log(f"warning: the machine's load average is {load:.1f} on {cores} usable cores: other processes will "
            "distort the calibration (distorted points are timed again; multi-thread models they still distort "
            "are refused). Calibrate on an idle machine for figures that hold.")
