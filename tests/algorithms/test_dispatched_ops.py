"""The operators each off-policy zoo config's inference and learner update dispatch, as the derivation counts them
(torch 2.13 on the CPU, pinned by constraints.txt: another torch decomposes some operators differently), and
which count each cost model reads: the GPU model the counted one, a CPU model the one it was calibrated on."""
from __future__ import annotations

import pytest

import pearl_py as pearl
from pearl_py.estimate.features import workload_features

COUNTED = {   # config: (inference ops, learner update ops per update, the layer estimate of the update)
    "dqn_cartpole": (9, 139, 36),
    "ddpg_pendulum": (9, 299, 93),     # its two targets (actor, critic) follow in one _foreach_lerp_
    "td3_pendulum": (9, 336.5, 108),   # per update over its period of 2 (the actor and targets every 2nd)
    "sac_pendulum": (11, 592, 165),
}


@pytest.mark.parametrize("config", sorted(COUNTED))
def test_off_policy_derivation_counts_the_operators_its_calls_dispatch(config):
    protocol = pearl.load_config(f"examples/configs/{config}.yaml").make_algorithm().protocol()
    inference, update = (protocol.kernel(k).workload for k in ("inference", "learner_update"))
    assert (inference.dispatched_ops, update.dispatched_ops, update.layer_ops) == COUNTED[config]
    features = workload_features(update)
    # the GPU's launches are the counted operators; the CPU models keep the layer estimate they were fitted on
    assert (features["launches"], features["ops"]) == (update.dispatched_ops, update.layer_ops)


def test_on_policy_cpu_models_read_the_counted_operators_they_were_fitted_on():
    update = pearl.load_config("examples/configs/ppo_cartpole.yaml").make_algorithm().protocol().kernel(
        "learner_update").workload
    features = workload_features(update)
    assert features["ops"] == features["launches"] == update.dispatched_ops > update.layer_ops
