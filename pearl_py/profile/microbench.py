"""Micro-benchmarks: run the real kernels of pearl_py on this CPU and time one call.

Each runner builds a kernel from the project's own code (the algorithm's
``Learner.update`` and ``act``, :class:`pearl_py.replay.ReplayBuffer`, gymnasium vector
envs as the runtime makes them) and returns its workload and a zero-argument callable.
Variants of a kernel kind (``pearl_py.kernels``) register their own runner under the
variant's name: ``learner_update/compiled`` (the ``torch.compile`` whole step, compiled
once per network shape with the batch dimension dynamic), ``learner_update/fused`` (the
numba DQN/DDPG/TD3/SAC step) and ``inference/fused`` (the numba act).
A callable with a one-off setup (a compile) carries it as ``call.setup_s`` (seconds).

Example::

    >>> point = BenchPoint(LEARNER_UPDATE, algo="dqn", width=64, batch=32)
    >>> workload, call = build(LEARNER_UPDATE, "reference", point, OFF_POLICY)
    >>> seconds = time_call(call)
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from pearl_py.kernels.env_step import ENVPOOL_THREADS
from pearl_py.protocol import SyncWorkload, Workload
from pearl_py.protocol.kernel import (
    ENV_STEP,
    INFERENCE,
    LEARNER_UPDATE,
    PARAM_SYNC,
    PRIORITY_UPDATE,
    REPLAY_INSERT,
    REPLAY_SAMPLE,
)

ALGO_ENVS = {"dqn": "CartPole-v1", "ddpg": "Pendulum-v1", "td3": "Pendulum-v1", "sac": "Pendulum-v1",
             "ppo": "CartPole-v1", "a2c": "CartPole-v1"}
"""The env of each algorithm's network points (its zoo env) unless the point names one (``env_id``)."""


@dataclass(frozen=True)
class BenchPoint:
    """One grid point. Network kinds read algo/width/depth/batch (or ``arch``, hidden widths, when
    given; ``env_id`` when not the algorithm's zoo env), and for a CNN point ``frames`` (the ``(C, H, W)`` uint8
    observations, on the random-frame env ``pearl/Frames-CxHxW-v0``) and ``extractor`` (``small_cnn``,
    ``nature_cnn``); replay reads capacity/batch/prioritized; env_step reads env_id/batch (= n_envs); param_sync
    reads nbytes and batch (the tensors they are in); rollout_insert reads batch (envs) and capacity (steps);
    advantage reads capacity (steps) and batch (envs); every reference runner and ``cuda_graph`` read
    ``device``."""

    kind: str
    algo: str = "dqn"
    width: int = 64
    depth: int = 2
    batch: int = 32
    capacity: int = 10_000
    prioritized: bool = False
    env_id: str = ""
    nbytes: int = 0
    arch: tuple[int, ...] = ()
    device: str = "cpu"
    """The torch device the kernel runs on (``cuda:0`` when ``pearl profile`` calibrates a GPU)."""
    frames: tuple[int, ...] = ()
    extractor: str = "auto"

    @property
    def hidden(self) -> tuple[int, ...]:
        """The hidden layer widths of a network point."""
        return self.arch or (self.width,) * self.depth


Runner = Callable[[BenchPoint], tuple[Workload, Callable[[], object]]]
_RUNNERS: dict[tuple[str, str, str], Runner] = {}
OFF_POLICY = "off_policy"


def register_runner(kind: str, variant: str, runner: Runner, family: str) -> None:
    """Make ``pearl profile`` calibrate ``variant`` of ``kind`` with ``runner`` (the implementation of algorithm
    family ``family``: :mod:`pearl_py.profile.microbench_on_policy` registers the on-policy family's)."""
    _RUNNERS[(kind, variant, family)] = runner


def variants(kind: str, family: str) -> list[str]:
    return sorted(v for k, v, f in _RUNNERS if k == kind and f == family)


def families(kind: str) -> list[str]:
    """Algorithm families with a micro-benchmark of ``kind``, the off-policy family first."""
    return sorted({f for k, _, f in _RUNNERS if k == kind}, key=lambda f: (f != OFF_POLICY, f))


def build(kind: str, variant: str, point: BenchPoint, family: str) -> tuple[Workload, Callable[[], object]]:
    """The workload of ``point`` and a callable running one call of the kernel."""
    try:
        runner = _RUNNERS[(kind, variant, family)]
    except KeyError:
        raise KeyError(f"no micro-benchmark for {family} {kind}/{variant}; registered: {sorted(_RUNNERS)}") from None
    return runner(point)


class BenchCall:
    """A zero-argument kernel call with the one-off setup its kernel paid when built (``setup_s``, wall
    seconds); ``setup_cold`` is false when the setup was shortened by a cache (inductor's FX-graph cache)."""

    def __init__(self, fn: Callable[[], object], setup_s: float = 0.0, setup_cold: bool = True) -> None:
        self.fn, self.setup_s, self.setup_cold = fn, setup_s, setup_cold

    def __call__(self) -> object:
        return self.fn()


def time_call(call: Callable[[], object], target_s: float = 0.03, samples: int = 7,
              clock: Callable[[], float] = time.process_time) -> float:
    """Median seconds per call: warm up, then ``samples`` chunks of calls lasting ~target_s/samples each.

    The default clock is the process's CPU time: a single-threaded kernel's cost on a
    core of its own, unaffected by other processes sharing the machine (a 2-core VM
    running tests next to ``pearl profile`` would otherwise add their time slices).
    """
    for _ in range(3):
        call()
    start = clock()
    call()
    once = max(clock() - start, 1e-6)
    inner = max(1, int(target_s / samples / once))
    chunks = []
    for _ in range(samples):
        start = clock()
        for _ in range(inner):
            call()
        chunks.append((clock() - start) / inner)
    return float(np.median(chunks))


def _algorithm(point: BenchPoint, **extra):
    from pearl_py.algorithms import REGISTRY

    cls = REGISTRY[point.algo]
    if point.frames:   # the random-frame env of these frames (:mod:`pearl_py.envs.families`)
        env = f"pearl/Frames{'' if cls.discrete_actions else 'Box'}-{'x'.join(map(str, point.frames))}-v0"
        return cls(env, net_arch=list(point.hidden), features_extractor=point.extractor, **extra)
    return cls(point.env_id or ALGO_ENVS[point.algo], net_arch=list(point.hidden), **extra)


def _random_batch(algo, size: int, generator: torch.Generator, device: str = "cpu"):
    from pearl_py.algorithms.off_policy.derive import example_obs
    from pearl_py.algorithms.off_policy.learner import TensorBatch

    spec = algo.spec
    obs = example_obs(spec, size, generator)
    if spec.discrete:
        actions = torch.randint(0, spec.action_dim, (size,), generator=generator)
    else:
        actions = torch.rand(size, spec.action_dim, generator=generator) * 2 - 1
    fields = (obs, actions, torch.randn(size, generator=generator), example_obs(spec, size, generator),
              torch.zeros(size), torch.ones(size))
    return TensorBatch(*(t.to(device) for t in fields))


def _update_point(point: BenchPoint, device: str | None = None):
    """The algorithm of a ``learner_update`` point, its workload and a random batch on ``device`` (the point's)."""
    algo = _algorithm(point, batch_size=point.batch)
    batch = _random_batch(algo, point.batch, torch.Generator().manual_seed(0), device or point.device)
    return algo, algo.protocol().kernel(LEARNER_UPDATE).workload, batch


def learner_update_reference(point: BenchPoint):
    """The algorithm's own gradient step (eager torch, Adam) on a random batch, on ``point.device``."""
    from pearl_py.algorithms.off_policy.learner import Learner

    algo, workload, batch = _update_point(point)
    learner = Learner(algo, device=point.device)
    return workload, lambda: learner.update(batch)


def learner_update_cuda_graph(point: BenchPoint):
    """The ``cuda_graph`` variant on ``point.device`` (a CUDA device): the whole step captured once (its first
    call, ``setup_s``), replayed after; the batch is copied into the graph's static inputs per call, as at run time."""
    from pearl_py.algorithms.off_policy.learner import Learner
    from pearl_py.kernels.cuda_graph import make_cuda_graph

    algo, workload, batch = _update_point(point)
    start = time.perf_counter()
    update = make_cuda_graph(Learner(algo, device=point.device))
    update(batch)
    torch.cuda.synchronize(point.device)
    return workload, BenchCall(lambda: update(batch), time.perf_counter() - start)


_COMPILED: dict[tuple[str, tuple[int, ...]], tuple[object, Callable]] = {}
"""Compiled learners of this process by (algo, hidden widths): one compile serves every batch size."""


def clear_compiled() -> None:
    """Drop the compiled learners kept for calibration (their graphs stay in the inductor disk cache)."""
    _COMPILED.clear()


def learner_update_channels_last(point: BenchPoint):
    """The ``channels_last`` variant: the eager step with NHWC convolutions (CNN points only), on ``point.device``
    (the GPU when ``pearl profile`` calibrates one)."""
    from pearl_py.algorithms.off_policy.learner import Learner
    from pearl_py.kernels.channels_last import make_channels_last

    algo, workload, batch = _update_point(point)
    update = make_channels_last(Learner(algo, device=point.device))
    return workload, lambda: update(batch)


def learner_update_compiled(point: BenchPoint):
    """The ``compiled`` variant's whole step: one ``torch.compile`` per (algo, hidden widths), batch dim dynamic.

    The first call (the compile, ``setup_s`` wall seconds; ``setup_cold`` unless inductor's
    FX-graph cache served it) happens here. Marking only the
    batch dimension dynamic keeps every other size static, as in the runtime's
    ``dynamic=False`` graph: the same MKL GEMMs and fused loops, timed within 0-4 % of the
    static graph at the same shape (docs/cost-models.md), without a compile per batch size.
    """
    import torch._dynamo

    from pearl_py.algorithms.off_policy.learner import Learner
    from pearl_py.kernels.functional_step import batch_tensors
    from pearl_py.kernels.learner_update import COMPILE_OPTIONS, FusedUpdate

    algo, workload, batch = _update_point(point, "cpu")
    for tensor in batch_tensors(batch):
        torch._dynamo.mark_dynamic(tensor, 0)
    from torch._dynamo.utils import counters

    key = (point.algo, point.hidden)
    setup_s, cold = 0.0, True
    if key not in _COMPILED:
        learner = Learner(algo, device="cpu")
        update = FusedUpdate(learner, lambda step: torch.compile(step, fullgraph=True, dynamic=None,
                                                                options=COMPILE_OPTIONS))
        # Calibration compiles several learners of one code object: lift dynamo's per-code limit meanwhile.
        with torch._dynamo.config.patch(recompile_limit=max(64, torch._dynamo.config.recompile_limit)):
            misses = counters["inductor"]["fxgraph_cache_miss"]
            start = time.perf_counter()
            update(batch)
            setup_s = time.perf_counter() - start
            cold = counters["inductor"]["fxgraph_cache_miss"] > misses
        _COMPILED[key] = (learner, update)
    _, update = _COMPILED[key]
    return workload, BenchCall(lambda: update(batch), setup_s, cold)


def learner_update_fused(point: BenchPoint):
    """The ``fused`` variant (the whole step in one numba function); ``setup_s``: building it and
    the first call (numba loads its on-disk cache, or compiles, ~10-20 s, the first time on a machine)."""
    from pearl_py.algorithms.off_policy.learner import Learner
    from pearl_py.kernels.fused_cpu import make_fused_cpu

    algo, workload, batch = _update_point(point, "cpu")
    start = time.perf_counter()
    update = make_fused_cpu(Learner(algo, device="cpu"))
    update(batch)
    setup_s = time.perf_counter() - start
    return workload, BenchCall(lambda: update(batch), setup_s, setup_s > 2.0)


def _acting(point: BenchPoint):
    from pearl_py.algorithms.off_policy.learner import Learner

    algo = _algorithm(point, n_envs=point.batch)
    workload = algo.protocol().kernel(INFERENCE).workload
    nets = Learner(algo, device=point.device).nets
    from pearl_py.algorithms.off_policy.derive import example_obs

    obs = example_obs(algo.spec, point.batch, torch.Generator().manual_seed(0)).numpy()
    return algo, nets, workload, obs


def inference_bench(variant: str) -> Runner:
    """The acting network's forward (with exploration) on ``batch`` observations, as actors run it, as ``variant``
    of :mod:`pearl_py.kernels.inference` builds it: ``reference`` (numpy in, ``algo.act`` under ``no_grad``, numpy
    out) or ``fused`` (one numba call; its compile, cached on disk by numba, is not reported as a setup)."""

    def run(point: BenchPoint):
        from pearl_py.kernels import inference

        algo, nets, workload, obs = _acting(point)
        infer = getattr(inference, f"make_{variant}")(algo, nets)
        return workload, lambda: infer(obs, explore=True, progress=0.5)

    return run


def _filled_replay(point: BenchPoint):
    """A full replay of ``point.capacity`` items: the numpy buffer on the CPU, a ``TorchReplayBuffer`` on a GPU
    (what the runtime builds there, pearl_py.runtime.device_replay)."""
    from pearl_py.replay import ReplayBuffer, TorchReplayBuffer

    obs_dim = 4
    cpu = point.device == "cpu"
    buf = (ReplayBuffer if cpu else TorchReplayBuffer)(capacity=point.capacity, obs_shape=(obs_dim,),
                                                       prioritized=point.prioritized, seed=0,
                                                       **({} if cpu else {"device": point.device}))
    rng = np.random.default_rng(0)
    chunk = min(point.capacity, 4096)
    for start in range(0, point.capacity, chunk):
        n = min(chunk, point.capacity - start)
        obs = rng.standard_normal((n, obs_dim), dtype=np.float32)
        buf.add(obs, rng.integers(0, 2, n), rng.standard_normal(n, dtype=np.float32), obs, np.zeros(n, dtype=bool))
    return buf, rng


def replay_insert_reference(point: BenchPoint):
    buf, rng = _filled_replay(point)
    obs = rng.standard_normal((point.batch, 4), dtype=np.float32)
    actions, rewards, dones = rng.integers(0, 2, point.batch), np.ones(point.batch, np.float32), np.zeros(point.batch, bool)
    return buf.workload(point.batch), lambda: buf.add(obs, actions, rewards, obs, dones)


def replay_sample_reference(point: BenchPoint):
    buf, _ = _filled_replay(point)
    return buf.workload(point.batch), lambda: buf.sample(point.batch, beta=0.4)


def priority_update_reference(point: BenchPoint):
    buf, rng = _filled_replay(point)
    indices = buf.sample(point.batch).indices
    td = rng.random(point.batch) + 0.01
    if point.device != "cpu":  # the learner's |td| tensor, where it is
        td = torch.as_tensor(td, device=point.device)
    return buf.workload(point.batch), lambda: buf.update_priorities(indices, td)


def env_step_bench(variant: str) -> Runner:
    """One step of the vector env that ``env_step``'s ``variant`` (:mod:`pearl_py.kernels.env_step`) makes, exactly
    as the runtime makes it."""

    def run(point: BenchPoint):
        from pearl_py import kernels
        from pearl_py.protocol import EnvWorkload

        envs = kernels.build(ENV_STEP, variant, point.env_id, point.batch, 0)
        envs.reset(seed=0)
        envs.action_space.seed(0)
        actions = envs.action_space.sample()
        space = envs.single_observation_space
        discrete = hasattr(envs.single_action_space, "n")
        action_dim = int(envs.single_action_space.n) if discrete else int(np.prod(envs.single_action_space.shape))
        workload = EnvWorkload(point.env_id, int(np.prod(space.shape)), action_dim, point.batch, OFF_POLICY, discrete)
        return workload, lambda: envs.step(actions)

    return run


def param_sync_reference(point: BenchPoint):
    """One publication as the parallel runtime makes it (:class:`~pearl_py.runtime.parallel.params.ParamBoard`):
    ``batch`` float32 tensors of ``nbytes`` in all written one by one into a flat buffer (the board's shared
    memory) by the learner, then copied out of it into an actor's tensors; the learner's tensors in
    ``point.device``'s memory (a GPU learner publishing its weights)."""
    from pearl_py.runtime.parallel.params import pack, unpack

    count = max(1, point.batch)
    total = max(count, point.nbytes // 4)
    sizes = [total // count + (1 if i < total % count else 0) for i in range(count)]
    learner = [torch.randn(k, device=point.device) for k in sizes]
    actor = [torch.empty(k) for k in sizes]
    flat = torch.empty(total)

    def call() -> None:
        pack(flat, learner)
        unpack(flat, actor)

    return SyncWorkload(total * 4, tensors=count), call


for (_kind, _variant), _runner in {
    (LEARNER_UPDATE, "reference"): learner_update_reference, (INFERENCE, "reference"): inference_bench("reference"),
    (REPLAY_INSERT, "reference"): replay_insert_reference, (REPLAY_SAMPLE, "reference"): replay_sample_reference,
    (PRIORITY_UPDATE, "reference"): priority_update_reference, (PARAM_SYNC, "reference"): param_sync_reference,
    (LEARNER_UPDATE, "channels_last"): learner_update_channels_last, (INFERENCE, "fused"): inference_bench("fused"),
    (LEARNER_UPDATE, "compiled"): learner_update_compiled, (LEARNER_UPDATE, "cuda_graph"): learner_update_cuda_graph,
    (LEARNER_UPDATE, "fused"): learner_update_fused,
    **{(ENV_STEP, v): env_step_bench(v) for v in ("reference", "native_vector", "envpool",
                                                  *(f"envpool_t{n}" for n in ENVPOOL_THREADS))},
}.items():
    register_runner(_kind, _variant, _runner, OFF_POLICY)
