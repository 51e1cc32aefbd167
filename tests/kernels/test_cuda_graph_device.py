"""The CUDA-graph update captures on the learner's device, not the current one (CUDA faked: on a machine with two
GPUs, a learner on cuda:1 captured from cuda:0's current context would record its graph on the wrong device)."""
from __future__ import annotations

import contextlib

import numpy as np
import torch

import pearl_py as pearl
from pearl_py.algorithms.off_policy.learner import Learner, TensorBatch
from pearl_py.kernels.cuda_graph import CudaGraphUpdate

CUDA1 = torch.device("cuda", 1)


def test_capture_and_its_streams_are_on_the_learners_device(monkeypatch):
    asked: list[tuple[str, object]] = []

    class Stream:
        def __init__(self, device=None) -> None:
            asked.append(("stream", device))

        def wait_stream(self, other) -> None:
            pass

    @contextlib.contextmanager
    def on_device(device):
        asked.append(("device", device))
        yield

    class Graph:
        def replay(self) -> None:
            asked.append(("replay", None))

    def current_stream(device=None):
        asked.append(("current", device))
        return Stream.__new__(Stream)

    for name, fake in {"Stream": Stream, "device": on_device, "current_stream": current_stream, "CUDAGraph": Graph,
                       "stream": lambda s: contextlib.nullcontext(), "graph": lambda g: contextlib.nullcontext()
                       }.items():
        monkeypatch.setattr(torch.cuda, name, fake)
    algo = pearl.DQN("CartPole-v1", net_arch=[8], batch_size=4)
    learner = Learner(algo, "cpu")
    learner.device = CUDA1   # its tensors stay on the CPU: the fakes run the step there
    rng = np.random.default_rng(0)
    batch = TensorBatch(torch.as_tensor(rng.standard_normal((4, 4), dtype=np.float32)), torch.tensor([0, 1, 0, 1]),
                        torch.ones(4), torch.as_tensor(rng.standard_normal((4, 4), dtype=np.float32)), torch.zeros(4),
                        torch.ones(4))
    update = CudaGraphUpdate(learner)
    assert update.sets_up_next()        # the first call captures: the run times it as the update's setup
    update(batch)
    assert not update.sets_up_next()    # DQN's one loss set is captured: every later call replays
    assert asked[0] == ("device", CUDA1)
    assert {where for what, where in asked if what in ("stream", "current")} == {CUDA1}
    assert asked[-1] == ("replay", None)
