"""One-off first-call costs stay out of the per-call measured figures: the replay's numba kernels are compiled
(or loaded) in the executor's start-up, before the clock, not in the first timed insert and sample (the parallel
executor's processes: ``parallel/test_first_calls_parallel.py``)."""
from __future__ import annotations

import sys

import numpy as np
import pytest
from numba.core.dispatcher import Dispatcher

import pearl_py as pearl
from pearl_py.runtime import serial
from pearl_py.runtime.first_calls import warm_up
from pearl_py.runtime.session import SessionClock

TINY_DQN = dict(net_arch=[16], batch_size=8, learning_starts=50, train_freq=25, gradient_steps=2, buffer_size=500)


def replay_kernels() -> dict[str, int]:
    """Every numba kernel of the replay modules, with the number of specializations it holds (compiled here or
    loaded from numba's disk cache: a first call of either kind pays for it, 1.2 s measured for a cached insert)."""
    modules = [m for name, m in sys.modules.items() if name.startswith("pearl_py.replay.")]
    return {f"{m.__name__}.{name}": len(k.signatures) for m in modules for name, k in vars(m).items()
            if isinstance(k, Dispatcher)}


@pytest.mark.parametrize("env,settings", [("CartPole-v1", {}), ("CartPole-v1", {"prioritized_replay": True}),
                                          ("MinAtar/Breakout-v1", {"features_extractor": "small_cnn"})])
def test_after_the_warm_up_the_runs_replay_loads_no_kernel(env, settings):
    if env.startswith("MinAtar"):
        pytest.importorskip("minatar")                          # uint8 frames: the FrameReplayBuffer's kernels
    algo = pearl.DQN(env, **(TINY_DQN | settings))
    warm_up(algo, replay_device="cpu")
    with algo.make_replay(seed=0) as replay:
        before = replay_kernels()
        obs = np.ones((1, *algo.spec.obs_shape), algo.spec.obs_dtype)      # the dtypes the collector hands over
        replay.add(obs, np.ones(1, algo.spec.action_dtype), np.ones(1, np.float32), obs, np.zeros(1, bool))
        batch = replay.sample(8)
        if replay.prioritized:
            replay.update_priorities(batch.indices, np.full(8, 0.5, np.float32))
    assert replay_kernels() == before


def test_the_serial_executor_warms_its_replay_and_inference_before_the_clock(monkeypatch):
    order = []
    start, build = SessionClock.start, serial.SerialExecutor._inference

    def inference(self, algo, acting):
        infer = build(self, algo, acting)
        return lambda obs, explore, progress: (order.append(("infer", explore)), infer(obs, explore=explore,
                                                                                      progress=progress))[1]

    monkeypatch.setattr(serial, "warm_up", lambda *args, **kwargs: (order.append("warm up"), warm_up(*args, **kwargs)))
    monkeypatch.setattr(SessionClock, "start", lambda clock: (order.append("clock"), start(clock))[1])
    monkeypatch.setattr(serial.SerialExecutor, "_inference", inference)
    pearl.train(pearl.SAC("Pendulum-v1", net_arch=[16], batch_size=8, learning_starts=20, buffer_size=500),
                total_steps=40, seed=0, eval_episodes=1, progress=False)
    assert order[:4] == ["warm up", ("infer", False), "clock", ("infer", True)]
