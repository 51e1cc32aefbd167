"""The parallel runtime keeps the acting parameters within the policy-lag bound (measured by the actors)."""
from __future__ import annotations

import pytest

import pearl_py as pearl
from pearl_py.plan import Plan
from pearl_py.runtime.parallel import ParallelExecutor


@pytest.mark.parametrize("lag", [0, 2])
def test_actors_never_act_on_parameters_older_than_the_bound(lag):
    algo = pearl.DQN("CartPole-v1", batch_size=16, net_arch=[16], learning_starts=64, train_freq=16,
                     gradient_steps=8, target_update_interval=50, buffer_size=2_000)
    plan = Plan.single_device(algo.protocol())
    result = ParallelExecutor(algo, plan, seed=3, eval_episodes=1, progress=False, sync_every=4,
                              max_policy_lag=lag).run(640)
    assert result.env_steps == 640
    assert result.gradient_steps == (640 - 64) // 16 * 8
    assert result.policy_lag == {"bound": lag, "max_observed": result.policy_lag["max_observed"]}
    assert 0 <= result.policy_lag["max_observed"] <= lag
    assert result.to_dict()["policy_lag"]["bound"] == lag
