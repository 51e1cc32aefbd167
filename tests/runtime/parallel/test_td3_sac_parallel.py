"""TD3 and SAC on the parallel runtime with the fused learner and inference: the serial run's counts, the
fused variants really run (no fallback), the actors act through the acting network they were sent."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import pearl_py as pearl
from pearl_py.kernels.fused_cpu import numba_available
from pearl_py.plan import Placement, Plan
from pearl_py.runtime.parallel import ParallelExecutor

pytestmark = pytest.mark.skipif(not numba_available()[0], reason=numba_available()[1])
TINY = dict(net_arch=[32], batch_size=16, learning_starts=200, train_freq=50, gradient_steps=10, buffer_size=5_000)


@pytest.mark.parametrize("make_algo", [lambda: pearl.TD3("Pendulum-v1", noise_std=0.1, **TINY),
                                       lambda: pearl.SAC("Pendulum-v1", **TINY)], ids=["td3", "sac"])
def test_fused_twin_critic_runs_keep_the_serial_counts(make_algo, tmp_path):
    algo = make_algo()
    plan = Plan.single_device(algo.protocol())
    for kernel in ("learner_update", "inference"):
        plan.placements[kernel] = Placement("cpu", "fused", plan.placements[kernel].replicas)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)      # a fallback to the reference would warn
        result = ParallelExecutor(algo, plan, seed=1, out_dir=tmp_path, eval_episodes=2).run(1_000)
    serial = pearl.train(make_algo(), total_steps=1_000, seed=1, eval_episodes=2, progress=False)
    assert result.layout["learner_variant"] == "fused" and result.layout["inference_variant"] == "fused"
    assert result.env_steps == serial.env_steps == 1_000
    assert result.gradient_steps == serial.gradient_steps == 160
    assert result.kernel_times["learner_update"]["calls"] == 160
    assert np.isfinite(result.eval_return_mean) and -2000 < result.eval_return_mean < 0   # Pendulum's range
