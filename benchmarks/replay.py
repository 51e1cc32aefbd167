"""Replay micro-benchmark: insert(B), sample(B), update(B) at capacity 2^20, pearl_py against peers.

Peers, each timed in this same script on the same inputs:

* Tianshou's ``PrioritizedReplayBuffer`` (``pip install tianshou``). Its ``add`` stores one
  transition per call, so insert(B) is timed two ways: B calls of ``add`` on a
  ``PrioritizedReplayBuffer``, and one batched ``add`` on a ``PrioritizedVectorReplayBuffer``
  with B sub-buffers (its batched path). Ratios use the faster of the two.
* PEARL's Python sum tree from HeteroRL (``Libs_Torch/replay.py``, class
  ``PrioritizedReplayMemory``), only if ``--heterorl PATH`` points at that file of a
  checkout; it is imported from there, never copied.

Every buffer is prefilled with ``--prefill`` items, then each op is run ``--repeats``
times, sample and update before insert (so every implementation samples and updates
at the prefill level, not after its own inserts) and after as many untimed calls (the
steady state of training: the first few hundred samples of a fresh buffer miss the
caches and take up to twice as long); the table shows the median in microseconds and
Tianshou's time divided by ours (higher is better). update(B) writes the same B
sampled slots each call but cycles through 8 different arrays of TD errors, so every
call really changes the priorities (pearl_py stops propagating where a node keeps its
value; repeating identical priorities would flatter it). Peak memory: run under ``/usr/bin/time -v`` with ``--only``.

Usage::

    python benchmarks/replay.py                       # pearl_py and Tianshou
    python benchmarks/replay.py --heterorl /tmp/heterorl/Libs_Torch/replay.py
    /usr/bin/time -v python benchmarks/replay.py --only pearl_py-16 --repeats 20
"""
from __future__ import annotations

import argparse
import importlib.util
import itertools
import resource
import statistics
import time
from collections.abc import Callable

import numpy as np

from pearl_py.replay import ReplayBuffer

OBS_DIM = 4
TD_ROUNDS = 8
Ops = dict[str, Callable[[], object]]


def median_us(fn: Callable[[], object], repeats: int, warmup: int = 1) -> float:
    """Median wall time of ``repeats`` calls after ``warmup`` untimed ones, in microseconds."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def data(batch: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    obs = rng.standard_normal((batch, OBS_DIM)).astype(np.float32)
    return {"obs": obs, "act": rng.integers(0, 2, batch), "rew": rng.standard_normal(batch).astype(np.float32),
            "next": obs + 1, "term": rng.random(batch) < 0.01, "td": np.abs(rng.standard_normal(batch)),
            "tds": [np.abs(rng.standard_normal(batch)) for _ in range(TD_ROUNDS)]}


def cycling(arrays: list[np.ndarray]) -> Callable[[], np.ndarray]:
    """Each call the next array, round robin: repeated updates store new priorities, as in training."""
    return itertools.cycle(arrays).__next__


def pearl_ops(capacity: int, batch: int, prefill: int, fanout: int | None) -> Ops:
    d = data(batch)
    buf = ReplayBuffer(capacity, (OBS_DIM,), prioritized=fanout is not None, fanout=fanout or 2, seed=0)
    for _ in range(prefill // batch):
        buf.add(d["obs"], d["act"], d["rew"], d["next"], d["term"])
    indices = buf.sample(batch).indices
    ops: Ops = {"insert": lambda: buf.add(d["obs"], d["act"], d["rew"], d["next"], d["term"]),
                "sample": lambda: buf.sample(batch, beta=0.4)}
    if fanout is not None:
        td = cycling(d["tds"])
        ops["update"] = lambda: buf.update_priorities(indices, td())
    return ops


def tianshou_ops(capacity: int, batch: int, prefill: int) -> Ops:
    from tianshou.data import (
        Batch,
        PrioritizedReplayBuffer,
        PrioritizedVectorReplayBuffer,
    )

    d = data(batch)
    singles = [Batch(obs=d["obs"][i], act=d["act"][i], rew=d["rew"][i], terminated=d["term"][i], truncated=False,
                     obs_next=d["next"][i], info={}) for i in range(batch)]
    buf = PrioritizedReplayBuffer(capacity, alpha=0.6, beta=0.4)

    def insert_loop() -> None:
        for item in singles:
            buf.add(item)

    for _ in range(prefill // batch):
        insert_loop()
    vec = PrioritizedVectorReplayBuffer(capacity, buffer_num=batch, alpha=0.6, beta=0.4)
    stacked = Batch(obs=d["obs"], act=d["act"], rew=d["rew"], terminated=d["term"],
                    truncated=np.zeros(batch, dtype=bool), obs_next=d["next"], info=Batch())
    ids = np.arange(batch)
    _, indices = buf.sample(batch)
    td = cycling(d["tds"])
    return {"insert": insert_loop, "insert (vector add)": lambda: vec.add(stacked, buffer_ids=ids),
            "sample": lambda: buf.sample(batch), "update": lambda: buf.update_weight(indices, td())}


def heterorl_ops(path: str, capacity: int, batch: int, prefill: int) -> Ops:
    spec = importlib.util.spec_from_file_location("heterorl_replay", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    d = data(batch)
    memory = module.PrioritizedReplayMemory(capacity, batch, batch)
    items = [(d["obs"][i], d["act"][i], d["rew"][i], d["next"][i], d["term"][i]) for i in range(batch)]
    priorities = list(d["td"])
    for _ in range(prefill // batch):
        memory.insert_through(items, priorities)
    td = cycling(d["tds"])

    def sample() -> object:
        memory.memoize_ind = []       # it appends forever otherwise; update reads the latest batch
        return memory.sample_through()

    sample()
    return {"insert": lambda: memory.insert_through(items, priorities), "sample": sample,
            "update": lambda: memory.update_through(list(td()))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--capacity", type=int, default=2**20)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--prefill", type=int, default=2**16)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--heterorl", help="path to HeteroRL's Libs_Torch/replay.py")
    parser.add_argument("--only", help="run one implementation (for /usr/bin/time -v): "
                                       "pearl_py-uniform, pearl_py-2, pearl_py-16, tianshou, heterorl")
    args = parser.parse_args()
    cap, batch, prefill = args.capacity, args.batch, args.prefill

    builders: dict[str, Callable[[], Ops]] = {
        "pearl_py-uniform": lambda: pearl_ops(cap, batch, prefill, None),
        "pearl_py-2": lambda: pearl_ops(cap, batch, prefill, 2),
        "pearl_py-16": lambda: pearl_ops(cap, batch, prefill, 16),
        "tianshou": lambda: tianshou_ops(cap, batch, prefill),
    }
    if args.heterorl:
        builders["heterorl"] = lambda: heterorl_ops(args.heterorl, cap, batch, prefill)
    if args.only:
        builders = {args.only: builders[args.only]}

    results: dict[str, dict[str, float]] = {}
    for name, build in builders.items():
        try:
            ops = build()
        except ImportError as error:
            print(f"{name}: not measured ({error})")
            continue
        repeats = {"heterorl": max(3, args.repeats // 20), "tianshou": args.repeats}.get(name, args.repeats)
        timed = sorted(ops.items(), key=lambda item: "insert" in item[0])     # inserts last: they grow the buffer
        times = {op: median_us(fn, repeats, warmup=repeats) if "insert" not in op else
                 median_us(fn, repeats if "pearl" in name else max(3, repeats // 10)) for op, fn in timed}
        results[name] = {op: times[op] for op in ops}

    print(f"\ncapacity {cap}, batch {batch}, prefilled {prefill}; median microseconds per call")
    reference = results.get("tianshou", {})
    baseline = {"insert": min(reference.get("insert", np.inf), reference.get("insert (vector add)", np.inf)),
                "sample": reference.get("sample", np.nan), "update": reference.get("update", np.nan)}
    print(f"| {'implementation':<18} | {'op':<19} | {'time (us)':>10} | {'Tianshou / this':>15} |")
    print(f"|{'-' * 20}|{'-' * 21}|{'-' * 12}|{'-' * 17}|")
    for name, times in results.items():
        for op, us in times.items():
            base = baseline.get(op.split(" ")[0], np.nan)
            print(f"| {name:<18} | {op:<19} | {us:>10.1f} | {base / us:>14.2f}x |")
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak RSS of this process: {peak_mib:.0f} MiB")


if __name__ == "__main__":
    main()
