"""Learner update at 1 vs 2 threads, side by side, with and without a second process on the machine.

For the DDPG zoo shapes (Pendulum, batch 256, actor and critic [400, 300]; ``--workload dqn``:
the DQN zoo's CartPole, batch 64, [256, 256]; ``--workload atari``: the zoo's Atari DQN, NatureCNN at batch 32
on 4x84x84 frames) it times one update of each variant (``fused`` and the eager ``reference``; for the CNN
``channels_last`` and ``reference``) at 1 and at 2 threads (``torch.set_num_threads``
and scipy's OpenBLAS via ``set_blas_threads``), interleaved: every repeat times every
(variant, threads) pair in turn, so a change in the machine's load hits all of them. Wall
time per update, median over repeats. Each of three neighbours runs once:

* ``none``: nothing else of ours runs;
* ``spin``: a child process busy-loops (a worst case: the second core is never free);
* ``actor``: a child process that wakes once per 6.8 ms, as the parallel actor does on its
  doorbell, and works ~30 us (Pendulum's step plus the fused act per learner update at the
  DDPG zoo's one update per step): the neighbour ``pearl profile`` times the threaded
  learner update beside (``pearl_py.profile.neighbour``).

Two threads are timed unpinned and pinned to two cores (``pearl_py.kernels.affinity``, as the
executors and ``pearl profile`` run them).

The load average (``os.getloadavg``) is printed with every row: other jobs share the machine.

Run::

    python benchmarks/learner_threads.py                      # ~2 minutes
    python benchmarks/learner_threads.py --workload dqn --repeats 9
    python benchmarks/learner_threads.py --workload atari --calls 10 --repeats 5 --neighbours none
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time
from collections.abc import Callable

import torch

import pearl_py as pearl
from pearl_py.algorithms import Algorithm, Learner, TensorBatch
from pearl_py.algorithms.off_policy.derive import example_obs
from pearl_py.profile.neighbour import KINDS, neighbour
from pearl_py.kernels.affinity import pinned_threads
from pearl_py.kernels.channels_last import make_channels_last
from pearl_py.kernels.fused_cpu import make_fused_cpu
from pearl_py.kernels.learner_update import make_reference
from pearl_py.kernels.numba_blas import set_blas_threads

Variants = dict[str, Callable[[Learner], Callable[[TensorBatch], object]]]
MLP_VARIANTS: Variants = {"fused": make_fused_cpu, "reference": make_reference}
CNN_VARIANTS: Variants = {"channels_last": make_channels_last, "reference": make_reference}
WORKLOADS: dict[str, Callable[[], Algorithm]] = {
    "ddpg": lambda: pearl.DDPG("Pendulum-v1"),
    "dqn": lambda: pearl.DQN("CartPole-v1", batch_size=64, net_arch=[256, 256], learning_rate=2.3e-3,
                             target_update_interval=10),
    "atari": lambda: pearl.DQN("pearl/Frames-4x84x84-v0", features_extractor="nature_cnn", net_arch=[],
                               batch_size=32, learning_rate=1e-4),
}


def variants_of(algo: Algorithm) -> Variants:
    """The variants timed for ``algo``: its network's (the numba ``fused`` handles dense layers only)."""
    return CNN_VARIANTS if len(algo.spec.obs_shape) == 3 else MLP_VARIANTS


def set_threads(n: int) -> None:
    """The thread count of every library the updates use: torch (MKL, OpenMP) and scipy's OpenBLAS."""
    torch.set_num_threads(n)
    set_blas_threads(n)


def random_batches(algo: Algorithm, n: int) -> list[TensorBatch]:
    """``n`` batches of ``algo``'s shapes: observations as its env makes them (float vectors, uint8 frames)."""
    g = torch.Generator().manual_seed(0)
    spec, size = algo.spec, algo.config.batch_size
    out = []
    for _ in range(n):
        actions = (torch.randint(0, spec.action_dim, (size,), generator=g) if spec.discrete
                   else torch.rand(size, spec.action_dim, generator=g) * 2 - 1)
        out.append(TensorBatch(example_obs(spec, size, g), actions, torch.randn(size, generator=g),
                               example_obs(spec, size, g), torch.zeros(size), torch.ones(size)))
    return out


CONFIGS = ((1, False), (2, False), (2, True))
"""(threads, pinned) timed for every variant: one thread, two unpinned, two pinned as the executors run them."""


def time_pairs(algo: Algorithm, repeats: int, calls: int) -> dict[tuple[str, int, bool], float]:
    """Median wall seconds per update of every (variant, threads, pinned), interleaved over repeats."""
    batches = random_batches(algo, 16)
    updates = {}
    for name, make in variants_of(algo).items():
        torch.manual_seed(0)
        updates[name] = make(Learner(algo))
    times: dict[tuple[str, int, bool], list[float]] = {(n, t, p): [] for n in updates for t, p in CONFIGS}
    for _ in range(repeats):
        for (name, t, pin), samples in times.items():
            set_threads(t)
            update = updates[name]
            with pinned_threads(t) if pin else contextlib.nullcontext():
                for b in batches[:3]:
                    update(b)
                start = time.perf_counter()
                for i in range(calls):
                    update(batches[i % len(batches)])
                samples.append((time.perf_counter() - start) / calls)
    set_threads(1)
    return {key: statistics.median(samples) for key, samples in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="ddpg")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--calls", type=int, default=40, help="updates per timed repeat")
    parser.add_argument("--neighbours", nargs="+", choices=["none", *KINDS], default=["none", *KINDS])
    args = parser.parse_args()
    algo = WORKLOADS[args.workload]()
    print(f"{args.workload} learner update, wall ms per update, median of {args.repeats} interleaved repeats "
          f"of {args.calls} calls")
    print(f"{'neighbour':>9} {'variant':>9} {'1 thr ms':>9} {'2 thr ms':>9} {'pinned':>9} {'1/2':>6} {'1/pinned':>8}"
          "  load 1-min (before, after)")
    for kind in args.neighbours:
        with neighbour(kind) if kind != "none" else contextlib.nullcontext():
            before = os.getloadavg()[0]
            medians = time_pairs(algo, args.repeats, args.calls)
            after = os.getloadavg()[0]
        for name in variants_of(algo):
            one, two, pinned = (medians[(name, t, p)] for t, p in CONFIGS)
            print(f"{kind:>9} {name:>9} {one * 1e3:9.3f} {two * 1e3:9.3f} {pinned * 1e3:9.3f} {one / two:5.2f}x "
                  f"{one / pinned:7.2f}x  ({before:.2f}, {after:.2f})", flush=True)


if __name__ == "__main__":
    main()
