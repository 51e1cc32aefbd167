"""The roofline costs a replay on a GPU as the TorchReplayBuffer the runtime builds there: its torch calls per call
(each one launch), counted here on the CPU device, must be what estimators/roofline.yaml says (within 2 calls)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from pearl_py.estimate.roofline import RooflineParams, replay_latency
from pearl_py.platform import Platform
from pearl_py.protocol.workload import ReplayWorkload
from pearl_py.replay import TorchReplayBuffer

VIEWS = ("aten::view", "aten::_unsafe_view", "aten::as_strided", "aten::expand", "aten::slice", "aten::select",
         "aten::unsqueeze", "aten::squeeze", "aten::t", "aten::transpose", "aten::reshape", "aten::alias",
         "aten::detach", "aten::_reshape_alias")


class Calls(TorchDispatchMode):
    """Counts the non-view aten calls (each a kernel launch on a GPU)."""

    def __init__(self) -> None:
        super().__init__()
        self.n = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not func._schema.name.startswith(VIEWS):
            self.n += 1
        return func(*args, **(kwargs or {}))


def counted(call) -> int:
    with Calls() as calls:
        call()
    return calls.n


@pytest.mark.parametrize("capacity", [4_096, 65_536])
@pytest.mark.parametrize("prioritized", [False, True])
def test_the_modelled_launches_are_the_buffers_calls(capacity, prioritized):
    batch = 256
    buf = TorchReplayBuffer(capacity, (4,), prioritized=prioritized, fanout=16, seed=0)
    rng = np.random.default_rng(0)
    obs = rng.standard_normal((4_096, 4), dtype=np.float32)
    for _ in range(capacity // 4_096):  # full: every add is one run of slots, as in a long run
        buf.add(obs, rng.integers(0, 2, 4_096), np.ones(4_096, np.float32), obs, np.zeros(4_096, bool))
    o = obs[:batch]
    calls = {"replay_insert": counted(lambda: buf.add(o, rng.integers(0, 2, batch), np.ones(batch, np.float32), o,
                                                      np.zeros(batch, bool)))}
    sample = []
    calls["replay_sample"] = counted(lambda: sample.append(buf.sample(batch, 0.4)))
    if prioritized:
        td = torch.rand(batch, dtype=torch.float64)
        calls["priority_update"] = counted(lambda: buf.update_priorities(sample[0].indices, td))
    modelled = RooflineParams.load().gpu["replay_calls"]["prioritized" if prioritized else "uniform"]
    for kind, n in calls.items():
        # within 2 calls: on the CPU device the update's value check is read at once (on a GPU it is copied to pinned
        # memory instead), and the first sample of a batch size makes its strata once
        assert abs(modelled[kind] - n) <= 2, (kind, n)


@pytest.mark.parametrize("prioritized", [False, True])
def test_a_call_is_a_few_launches_whatever_the_capacity(prioritized):
    """The H200 run measured ~14 us per launch: a call of the old per-level tree (70 launches per prioritized sample
    at 2^20 items) cost ~880 us. Flat priorities keep every call under 30 launches, the same at any capacity."""
    counts = {}
    for capacity in (1_024, 1 << 18):
        buf = TorchReplayBuffer(capacity, (4,), prioritized=prioritized, seed=0)
        buf.add(*(np.zeros((1_024, 4), np.float32), np.zeros(1_024, np.int64), np.ones(1_024, np.float32),
                  np.zeros((1_024, 4), np.float32), np.zeros(1_024, bool)))
        buf.sample(256)                                  # the strata of batch 256, made once
        sample = []
        counts[capacity, "sample"] = counted(lambda: sample.append(buf.sample(256)))
        if prioritized:
            counts[capacity, "update"] = counted(lambda: buf.update_priorities(sample[0].indices, torch.rand(256)))
    assert max(counts.values()) <= 30 and counts[1_024, "sample"] == counts[1 << 18, "sample"], counts


def test_a_gpu_replay_costs_its_launches_plus_its_bytes():
    gpu = Platform.load("dgx-a100-node").device("gpu0").spec
    features = {"levels": 5, "prioritized": 1, "bytes": 256 * 40.0, "tree_work": 256 * 5, "batch": 256,
                "capacity": 2.0**20}
    seconds, terms = replay_latency("replay_sample", features, gpu, RooflineParams.load(), "reference", "accelerator")
    assert terms["dispatch"] == pytest.approx(18 * gpu.launch_overhead_us * 1e-6)
    scan = 3 * 8 * 2.0**20                              # cumsum's read and write, the minimum's read
    assert seconds == pytest.approx(terms["dispatch"] + (2 * 256 * 40.0 + scan) / (gpu.mem_bandwidth_gbs * 1e9))
    assert isinstance(ReplayWorkload(capacity=1024, batch=1, item_bytes=40, prioritized=True, fanout=16), ReplayWorkload)
