"""Bad input raises ValueError naming the argument, and leaves the buffer exactly as it was: one contract, run on
the numpy ``ReplayBuffer`` and on the ``TorchReplayBuffer`` on the CPU torch device and on CUDA (``make``)."""
from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

from pearl_py.replay import ReplayBuffer
from pearl_py.replay.torch_buffer import TorchReplayBuffer

from .conftest import CUDA
from .helpers import rejects, transitions

GOOD = transitions(3)
OBS, ACT, REW, NEXT, TERM = GOOD


def with_(position, value):
    args = list(GOOD)
    args[position] = value
    return args


BAD_ADDS = [
    ("obs", with_(0, OBS[:, :3]), "shape"),
    ("obs", with_(0, OBS[0]), "shape"),
    ("obs", with_(0, OBS.astype(str)), "numeric"),
    ("obs", with_(0, np.array(OBS, dtype=bool)), "cannot be stored"),
    ("obs", with_(0, np.full((3, 4), np.nan)), "NaN"),
    ("obs", with_(0, np.full((3, 4), 1e300)), "infinite"),
    ("obs", [o[:0] for o in GOOD], "batch of 0"),
    ("actions", with_(1, ACT.astype(np.float64)), "cannot be stored as int64"),
    ("actions", with_(1, ACT[:2]), "rows"),
    ("actions", with_(1, ACT[:, None]), "shape"),
    ("rewards", with_(2, np.array([1.0, np.inf, 0.0])), "infinite"),
    ("rewards", with_(2, REW[:, None]), "shape"),
    ("next_obs", with_(3, NEXT[:1]), "rows"),
    ("terminated", with_(4, np.array([0, 2, 1])), "0/1"),
    ("terminated", with_(4, TERM[:, None]), "shape"),
    # the stored dtypes: the compiled insert checks these values as it writes
    ("obs", with_(0, np.full((3, 4), np.nan, np.float32)), "NaN"),
    ("next_obs", with_(3, np.full((3, 4), np.inf, np.float32)), "infinite"),
    ("rewards", with_(2, np.array([1.0, np.nan, 0.0], np.float32)), "NaN"),
    ("terminated", with_(4, np.array([0, 2, 1], np.float32)), "0/1"),
]


@pytest.fixture(params=["numpy", pytest.param("cpu", id="torch-cpu"), pytest.param("cuda", marks=CUDA.marks,
                                                                                 id="torch-cuda")])
def make(request):
    """The buffer class under test: numpy, or torch on the CPU or CUDA (marked ``gpu``, skipped where absent)."""
    return ReplayBuffer if request.param == "numpy" else functools.partial(TorchReplayBuffer, device=request.param)


@pytest.fixture(params=[False, True], ids=["uniform", "prioritized"])
def buf(request, make):
    with make(8, (4,), prioritized=request.param, fanout=2, seed=0) as buffer:
        buffer.add(*transitions(6))
        if request.param:
            buffer.update_priorities(np.array([1, 2]), np.array([0.5, 3.0]))
        yield buffer


@pytest.mark.parametrize("name,args,detail", BAD_ADDS, ids=[f"{n}-{d}" for n, _, d in BAD_ADDS])
def test_bad_add_is_refused_without_changes(buf, name, args, detail):
    rejects(buf, lambda: buf.add(*args), name, detail)


def test_batch_larger_than_capacity_is_refused(buf):
    rejects(buf, lambda: buf.add(*transitions(9)), "obs", "expected 1..8")


@pytest.mark.parametrize("batch_size,beta,name", [(0, 0.4, "batch_size"), (2.0, 0.4, "batch_size"),
                                                   (True, 0.4, "batch_size"), (4, -0.1, "beta"),
                                                   (4, 1.5, "beta"), (4, float("nan"), "beta")])
def test_bad_sample_arguments_are_refused(buf, batch_size, beta, name):
    rejects(buf, lambda: buf.sample(batch_size, beta=beta), name, name)


def test_sampling_an_empty_buffer_is_refused(make):
    with make(8, (4,), prioritized=True) as empty:
        rejects(empty, lambda: empty.sample(4), "batch_size", "empty buffer")
        rejects(empty, lambda: empty.update_priorities(np.array([0]), np.array([1.0])), "indices", "never written")


BAD_UPDATES = [
    ("indices", [6], [1.0], "never written"),
    ("indices", [-1], [1.0], "never written"),
    ("indices", [0.5], [1.0], "integer"),
    ("indices", np.array([], dtype=np.int64), [], "non-empty"),
    ("indices", [[0, 1]], [[1.0, 1.0]], "1-D"),
    ("td_errors_abs", [0, 1], [1.0], "shape"),
    ("td_errors_abs", [0, 1], [1.0, -0.5], "negative"),
    ("td_errors_abs", [0, 1], [1.0, np.nan], "NaN"),
    ("td_errors_abs", [0, 1], [np.inf, 1.0], "infinite"),
    ("td_errors_abs", [0, 1], [True, False], "bool"),
]


@pytest.mark.parametrize("name,indices,values,detail", BAD_UPDATES, ids=[f"{n}-{d}" for n, _, _, d in BAD_UPDATES])
def test_bad_priority_updates_are_refused(make, name, indices, values, detail):
    """As numpy arrays; the torch buffer also as tensors on its device."""
    with make(8, (4,), prioritized=True, fanout=2) as buf:
        buf.add(*transitions(6))
        forms = [(np.array(indices), np.array(values))]
        if isinstance(buf, TorchReplayBuffer):
            forms.append(tuple(torch.as_tensor(np.array(a), device=buf.device) for a in (indices, values)))
        for args in forms:
            rejects(buf, lambda: buf.update_priorities(*args), name, detail)


def test_priority_update_on_a_uniform_buffer_is_refused(make):
    with make(8, (4,)) as buf:
        buf.add(*transitions(6))
        rejects(buf, lambda: buf.update_priorities(np.array([0]), np.array([1.0])), "indices", "prioritized=True")


BAD_CONSTRUCTION = [({"capacity": 0}, "capacity"), ({"capacity": 2.5}, "capacity"), ({"obs_shape": (-1,)}, "obs_shape"),
                    ({"obs_shape": "x"}, "obs_shape"), ({"action_dtype": np.bool_}, "action_dtype"),
                    ({"fanout": 1}, "fanout"), ({"alpha": -1.0}, "alpha"), ({"eps": 0.0}, "eps")]


@pytest.mark.parametrize("cls,kwargs,name", [(cls, *case) for cls in (ReplayBuffer, TorchReplayBuffer)
                                              for case in BAD_CONSTRUCTION] + [
    (ReplayBuffer, {"shared_name": ""}, "shared_name"), (TorchReplayBuffer, {"action_dtype": np.uint32}, "action_dtype"),
    (TorchReplayBuffer, {"seed": -1}, "seed"), (TorchReplayBuffer, {"seed": 1.5}, "seed"),
    (TorchReplayBuffer, {"device": "gpu0"}, "device"), (TorchReplayBuffer, {"device": "meta"}, "device"),
])
def test_bad_construction_is_refused(cls, kwargs, name):
    with pytest.raises(ValueError, match=name):
        cls(**{"capacity": 8, "obs_shape": (4,)} | kwargs)


def test_workload_is_the_numpy_buffers_and_needs_a_positive_batch(buf):
    with ReplayBuffer(8, (4,), prioritized=buf.prioritized, fanout=2) as reference:
        assert buf.workload(256) == reference.workload(256)
    rejects(buf, lambda: buf.workload(0), "batch_size", "integer")
