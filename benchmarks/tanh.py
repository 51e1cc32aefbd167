"""The fused kernels' tanh against glibc's, over a hidden layer: nanoseconds an element, side by side.

``mlp_numba.bias_act`` (bias, then ``tanh32``, in one pass over a layer's output: what every fused kernel
runs) against the same loop calling ``np.tanh`` (numba lowers it to glibc's ``tanhf``), on a
``--rows`` x ``--width`` float32 layer; best of ``--repeats`` calls each, interleaved. It also counts how
many of the layer's values differ from ``np.tanh`` in float64 rounded to float32 (0: correctly rounded).

Run (one job at a time on the machine; the load average is printed)::

    python benchmarks/tanh.py [--rows 256] [--width 64] [--repeats 200]
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np
from numba import njit

from pearl_py.kernels.mlp_numba import ACT_TANH, bias_act
from pearl_py.kernels.numba_blas import JIT


@njit(**JIT)
def bias_glibc_tanh(z, b):
    """The peer: the same pass with ``np.tanh`` (glibc's ``tanhf``)."""
    for i in range(z.shape[0]):
        zi = z[i]
        for j in range(zi.size):
            zi[j] = np.tanh(zi[j] + b[j])


def best_ns(call, layer: np.ndarray, repeats: int) -> float:
    """Fastest call over ``repeats`` on fresh copies of ``layer``, in nanoseconds per element."""
    best = float("inf")
    for _ in range(repeats):
        z = layer.copy()
        start = time.perf_counter()
        call(z)
        best = min(best, time.perf_counter() - start)
    return best / layer.size * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=256)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    layer = np.random.default_rng(0).normal(0.0, 2.0, (args.rows, args.width)).astype(np.float32)
    bias = np.zeros(args.width, np.float32)
    ours = lambda z: bias_act(z, bias, ACT_TANH)  # noqa: E731
    glibc = lambda z: bias_glibc_tanh(z, bias)  # noqa: E731
    for call in (ours, glibc):   # compile (or load the cache) before timing
        call(layer.copy())
    times = {"tanh32": [], "glibc tanhf": []}
    for _ in range(3):           # interleaved rounds: a change in the machine's load hits both
        times["tanh32"].append(best_ns(ours, layer, args.repeats))
        times["glibc tanhf"].append(best_ns(glibc, layer, args.repeats))
    z = layer.copy()
    ours(z)
    wrong = int((z != np.tanh(layer.astype(np.float64)).astype(np.float32)).sum())
    print(f"{os.cpu_count()} CPUs; load {os.getloadavg()[0]:.2f}; layer {args.rows} x {args.width}, best of "
          f"{args.repeats} calls, 3 interleaved rounds (in-process clock, ns an element)")
    for name, values in times.items():
        print(f"{name:<12} {min(values):6.2f} ns  (rounds: {', '.join(f'{v:.2f}' for v in values)})")
    print(f"ratio glibc / tanh32: {min(times['glibc tanhf']) / min(times['tanh32']):.1f}x; tanh32 values not "
          f"correctly rounded: {wrong} of {layer.size}")


if __name__ == "__main__":
    main()
