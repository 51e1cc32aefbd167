"""The protocol is derived from the algorithm's own code and config, with the right rates and bytes."""
from __future__ import annotations

import dataclasses
import importlib

import pytest

import pearl_py as pearl
from pearl_py.protocol import DenseLayer, KernelKind


@pytest.fixture(scope="module")
def dqn_graph():
    algo = pearl.DQN("CartPole-v1", batch_size=64, net_arch=[256, 256], train_freq=256, gradient_steps=128,
                     buffer_size=100_000)
    return algo.protocol()


def test_kernels_and_rates_follow_the_update_to_data_ratio(dqn_graph):
    kinds = {k.kind for k in dqn_graph.kernels()}
    assert kinds == {"env_step", "inference", "replay_insert", "replay_sample", "learner_update", "param_sync"}
    assert all(isinstance(kind, KernelKind) for kind in kinds)
    assert dqn_graph.kernel("env_step").rate == 1.0
    assert dqn_graph.kernel("learner_update").rate == pytest.approx(128 / 256)
    assert dqn_graph.kernel("replay_sample").rate == pytest.approx(0.5)
    # the parallel runtime publishes every 4 updates (DEFAULT_SYNC_EVERY); the serial executor never copies
    assert dqn_graph.kernel("param_sync").rate == pytest.approx(128 / 256 / 4)
    assert pearl.DQN("CartPole-v1").protocol(serialized=True).kernel("param_sync").rate == 0.0
    assert dqn_graph.kernel("env_step").replicable and not dqn_graph.kernel("learner_update").replicable


def test_network_workloads_are_recorded_from_the_real_layers(dqn_graph):
    inference = dqn_graph.kernel("inference").workload
    assert inference.layers == (DenseLayer(4, 256, 1), DenseLayer(256, 256, 1), DenseLayer(256, 2, 1))
    learner = dqn_graph.kernel("learner_update").workload
    # target net on next_obs (no grad), then the online net on obs (with grad)
    assert [(l.n_in, l.n_out, l.batch, l.backward) for l in learner.layers] == [
        (4, 256, 64, False), (256, 256, 64, False), (256, 2, 64, False),
        (4, 256, 64, True), (256, 256, 64, True), (256, 2, 64, True)]
    assert learner.trained_params == 4 * 256 + 256 + 256 * 256 + 256 + 256 * 2 + 2
    forward = 2 * 64 * (4 * 256 + 256 * 256 + 256 * 2)
    assert learner.flops == 2 * forward + 2 * forward + 12 * learner.trained_params


def test_edges_carry_bytes(dqn_graph):
    item = 4 * (2 * 4 + 1 + 2)  # obs, next_obs, action, reward, done as float32
    assert dqn_graph.bytes_per_call("env_step", "replay_insert") == item
    assert dqn_graph.bytes_per_call("replay_sample", "learner_update") == 64 * (item + 4)
    params = 4 * dqn_graph.kernel("learner_update").workload.trained_params
    assert dqn_graph.bytes_per_call("learner_update", "param_sync") == params
    replay = dqn_graph.kernel("replay_sample").workload
    assert (replay.capacity, replay.batch, replay.item_bytes, replay.prioritized) == (100_000, 64, item, False)


def test_prioritized_ddpg_with_vector_envs():
    algo = pearl.DDPG("Pendulum-v1", prioritized_replay=True, replay_fanout=16, n_envs=4, batch_size=32,
                      net_arch=[64, 64])
    graph = algo.protocol()
    assert graph.kernel("priority_update").rate == pytest.approx(1 / 4)
    assert graph.kernel("env_step").rate == pytest.approx(1 / 4)
    assert graph.kernel("env_step").workload.n_envs == 4
    assert graph.kernel("inference").workload.batch == 4
    replay = graph.kernel("priority_update").workload
    assert replay.fanout == 16 and replay.tree_depth == 5  # ceil(log16(1e6))
    learner = graph.kernel("learner_update").workload
    # the actor loss back-propagates through the critic (backward=True) without training it
    assert sum(l.backward for l in learner.layers) == 9
    assert graph.bytes_per_call("learner_update", "priority_update") == 32 * 12


def test_deriving_does_not_touch_the_global_rng():
    import torch

    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    pearl.DQN("CartPole-v1").protocol()
    assert torch.equal(torch.rand(3), expected)


def test_delayed_losses_average_over_their_period():

    class DelayedDDPG(pearl.DDPG):
        name = "delayed-ddpg-test"

        def losses(self):
            critic, actor = super().losses()
            return [critic, pearl.Loss(actor.name, actor.trains, actor.fn, every=2)]

    plain = pearl.DDPG("Pendulum-v1", net_arch=[8]).protocol().kernel("learner_update").workload
    delayed = DelayedDDPG("Pendulum-v1", net_arch=[8]).protocol().kernel("learner_update").workload
    assert delayed.period == 2
    critic_only = sum(l.forward_flops for l in plain.layers[:6])  # target actor+critic, online critic
    assert delayed.forward_flops == pytest.approx((2 * critic_only + (plain.forward_flops - critic_only)) / 2)
    assert delayed.optimizer_flops < plain.optimizer_flops


def _calls(workload) -> list[tuple[int, int, int, bool]]:
    return [(layer.n_in, layer.n_out, layer.batch, layer.backward) for layer in workload.layers]


def test_td3_records_twin_critics_and_its_delayed_actor_over_the_period():
    """Per period of policy_delay = 2 steps: every step the target actor, both target critics and both online
    critics (trained); on the second also the actor (trained) through the first critic only."""
    graph = pearl.TD3("Pendulum-v1", batch_size=32, net_arch=[8]).protocol()
    learner = graph.kernel("learner_update").workload
    actor, q_in = [(3, 8), (8, 1)], [(4, 8), (8, 1)]
    no_grad = [(i, o, 32, False) for i, o in actor + q_in + q_in]
    critics = [(i, o, 32, True) for i, o in q_in + q_in]
    actor_step = [(i, o, 32, True) for i, o in actor + q_in]
    assert learner.period == 2 and _calls(learner) == (no_grad + critics) * 2 + actor_step
    actor_params, critic_params = 3 * 8 + 8 + 8 + 1, 2 * (4 * 8 + 8 + 8 + 1)
    assert learner.trained_params == 2 * critic_params + actor_params     # over the period
    assert graph.kernel("param_sync").workload.param_bytes == 4 * actor_params


@pytest.mark.parametrize("ent_coef, entropy_loss", [("auto", True), (0.2, False)])
def test_sac_records_twin_critics_the_sampling_actor_and_the_entropy_coefficient(ent_coef, entropy_loss):
    """Critic loss: the online actor samples a' (no grad), both target critics, both online critics (trained);
    actor loss: the actor (trained) and both critics at its action; entropy loss: the actor again (no grad)."""
    graph = pearl.SAC("Pendulum-v1", batch_size=32, net_arch=[8], ent_coef=ent_coef).protocol()
    learner = graph.kernel("learner_update").workload
    actor, q_in = [(3, 8), (8, 2)], [(4, 8), (8, 1)]          # the actor's 2 outputs: mean and log std
    expected = [(i, o, 32, False) for i, o in actor + q_in + q_in] + [(i, o, 32, True) for i, o in q_in + q_in]
    expected += [(i, o, 32, True) for i, o in actor + q_in + q_in]
    expected += [(i, o, 32, False) for i, o in actor] if entropy_loss else []
    assert learner.period == 1 and _calls(learner) == expected
    actor_params, critic_params = 3 * 8 + 8 + 8 * 2 + 2, 2 * (4 * 8 + 8 + 8 + 1)
    assert learner.trained_params == actor_params + critic_params + (1 if entropy_loss else 0)   # + log(alpha)
    assert [(l.n_in, l.n_out, l.batch) for l in graph.kernel("inference").workload.layers] == [(3, 8, 1), (8, 2, 1)]
    assert graph.kernel("param_sync").workload.param_bytes == 4 * actor_params   # the actor only


@pytest.mark.parametrize("family, make", [
    ("off_policy", lambda: pearl.DQN("CartPole-v1", batch_size=64)),
    ("on_policy", lambda: pearl.PPO("CartPole-v1", n_envs=8, n_steps=32, batch_size=64, n_epochs=4)),
])
def test_the_code_is_observed_once_per_config_for_both_modes(monkeypatch, family, make):
    """A run derives its protocol several times (the calibration's needs, each plan, both modes): one throwaway
    learner is built for them all, and the graphs equal fresh derivations; a new config observes anew."""
    derive = importlib.import_module(f"pearl_py.algorithms.{family}.derive")
    algo = make()
    fresh = {serialized: derive.derive_protocol(make(), serialized) for serialized in (False, True)}
    built = []
    probe = derive._probe_learner
    monkeypatch.setattr(derive, "_probe_learner", lambda algorithm: built.append(algorithm) or probe(algorithm))
    for serialized in (False, True, False, True):
        graph = algo.protocol(serialized=serialized)
        assert [(k.name, k.workload, k.rate) for k in graph.kernels()] == \
            [(k.name, k.workload, k.rate) for k in fresh[serialized].kernels()]
        assert graph.to_dict() == fresh[serialized].to_dict()
    assert len(built) == 1
    algo.config = dataclasses.replace(algo.config, batch_size=32)
    assert algo.protocol().kernel("learner_update").workload.batch == 32 and len(built) == 2
