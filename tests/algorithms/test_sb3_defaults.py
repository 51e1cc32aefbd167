"""A hyperparameter a config leaves out takes Stable-Baselines3's default: compared with the installed SB3.

Constructor defaults are read with ``inspect.signature`` from SB3's ``DQN``/``DDPG``/``TD3``/``SAC``;
the defaults SB3 sets inside its policies (``net_arch``, Adam's ``eps``, SAC's log-std clamp
and entropy coefficient) and DDPG's TD3 settings (``policy_delay``: the target update
interval) from a model built on the env. PPO and A2C: every key of their configs, from the
constructors, ``ActorCriticPolicy``'s keywords and a built model.
"""
from __future__ import annotations

import dataclasses
import inspect

import pytest
import torch

import pearl_py as pearl
from pearl_py.envs import EnvKwargs
from pearl_py.envs.normalize import Normalize

sb3 = pytest.importorskip("stable_baselines3", reason="stable_baselines3 is not installed: "
                          "no SB3 defaults to compare with (pip install -c constraints.txt '.[bench]')")

SAME_NAME = ("learning_rate", "buffer_size", "learning_starts", "batch_size", "tau", "gamma", "train_freq",
             "gradient_steps")
"""Fields that are constructor parameters of SB3's off-policy algorithms under the same name."""


def _signature_defaults(cls: type) -> dict[str, object]:
    return {name: p.default for name, p in inspect.signature(cls.__init__).parameters.items()
            if p.default is not inspect.Parameter.empty}


def _ours(config_cls: type) -> dict[str, object]:
    """Our defaults; a constant schedule (the off-policy learning rates) as its number, as SB3 holds it."""
    return {f.name: f.default.initial if isinstance(f.default, pearl.algorithms.on_policy.Schedule)
            and not f.default.linear else f.default for f in dataclasses.fields(config_cls)}


def test_dqn_defaults_equal_sb3():
    sb3_defaults = _signature_defaults(sb3.DQN)
    ours = _ours(pearl.DQN.Config)
    names = SAME_NAME + ("target_update_interval", "exploration_fraction", "exploration_initial_eps",
                         "exploration_final_eps", "max_grad_norm")
    assert {n: ours[n] for n in names} == {n: sb3_defaults[n] for n in names}
    model = sb3.DQN("MlpPolicy", "CartPole-v1", device="cpu")
    assert list(ours["net_arch"]) == model.policy.net_arch
    assert ours["adam_eps"] == model.policy.optimizer.defaults["eps"]
    assert not ours["double_q"]          # SB3's DQN has no double-Q
    assert not ours["prioritized_replay"]  # nor prioritized replay


def test_ddpg_defaults_equal_sb3():
    sb3_defaults = _signature_defaults(sb3.DDPG)
    ours = _ours(pearl.DDPG.Config)
    assert {n: ours[n] for n in SAME_NAME} == {n: sb3_defaults[n] for n in SAME_NAME}
    assert sb3_defaults["action_noise"] is None and ours["noise_std"] == 0.0
    model = sb3.DDPG("MlpPolicy", "Pendulum-v1", device="cpu")
    assert list(ours["net_arch"]) == model.policy.net_arch
    assert ours["adam_eps"] == model.actor.optimizer.defaults["eps"] == model.critic.optimizer.defaults["eps"]
    assert ours["target_update_interval"] == model.policy_delay       # soft update after every critic step
    assert ours["max_grad_norm"] is None and not hasattr(model, "max_grad_norm")  # TD3/DDPG never clip


def test_td3_defaults_equal_sb3():
    sb3_defaults = _signature_defaults(sb3.TD3)
    ours = _ours(pearl.TD3.Config)
    names = SAME_NAME + ("policy_delay", "target_policy_noise", "target_noise_clip")
    assert {n: ours[n] for n in names} == {n: sb3_defaults[n] for n in names}
    assert sb3_defaults["action_noise"] is None and ours["noise_std"] == 0.0
    model = sb3.TD3("MlpPolicy", "Pendulum-v1", device="cpu")
    assert list(ours["net_arch"]) == model.policy.net_arch == [400, 300]
    assert ours["adam_eps"] == model.actor.optimizer.defaults["eps"] == model.critic.optimizer.defaults["eps"]
    assert model.critic.n_critics == 2 and ours["max_grad_norm"] is None
    # SB3 moves the targets with each actor step: our unset interval means the same
    assert ours["target_update_interval"] is None and pearl.TD3.Config().target_interval == model.policy_delay


def test_sac_defaults_equal_sb3():
    from stable_baselines3.sac import policies

    sb3_defaults = _signature_defaults(sb3.SAC)
    ours = _ours(pearl.SAC.Config)
    names = SAME_NAME + ("target_update_interval", "ent_coef", "target_entropy")
    assert {n: ours[n] for n in names} == {n: sb3_defaults[n] for n in names}
    assert sb3_defaults["action_noise"] is None and not sb3_defaults["use_sde"]
    model = sb3.SAC("MlpPolicy", "Pendulum-v1", device="cpu")
    algo = pearl.SAC("Pendulum-v1")
    assert list(ours["net_arch"]) == model.policy.net_arch == [256, 256]
    assert algo.target_entropy == model.target_entropy == -1.0
    learner = pearl.algorithms.Learner(algo)
    assert float(learner.nets.online.ent_coef().detach()) == float(model.log_ent_coef.detach().exp()) == 1.0
    assert {opt.defaults["lr"] for opt in learner.optimizers.values()} == {
        model.ent_coef_optimizer.defaults["lr"], model.actor.optimizer.defaults["lr"]}
    assert ours["adam_eps"] == model.actor.optimizer.defaults["eps"] == model.ent_coef_optimizer.defaults["eps"]
    assert (pearl.algorithms.sac.LOG_STD_MIN, pearl.algorithms.sac.LOG_STD_MAX) == (policies.LOG_STD_MIN,
                                                                                    policies.LOG_STD_MAX)
    # SB3's mu and log_std heads are our actor's last layer, its two halves
    assert learner.nets.online.actor[-1].out_features == model.actor.mu.out_features + model.actor.log_std.out_features
    assert model.critic.n_critics == 2 and ours["max_grad_norm"] is None


def test_our_algorithms_build_optimizers_with_the_config_eps():
    learner = pearl.algorithms.Learner(pearl.DDPG("Pendulum-v1", net_arch=[8]))
    assert {opt.defaults["eps"] for opt in learner.optimizers.values()} == {pearl.DDPG.Config().adam_eps}


# -- on-policy: every field of PPOConfig / A2CConfig against SB3 ---------------------------------
def _sb3_on_policy_defaults(sb3_cls: type, env_id: str) -> tuple[dict[str, object], object]:
    """SB3's defaults by our key: constructor parameters, ``ActorCriticPolicy`` keyword defaults, and
    what a model built on ``env_id`` holds (network widths, optimizer, number of envs)."""
    from stable_baselines3.common.policies import ActorCriticPolicy

    defaults = _signature_defaults(sb3_cls)
    policy_defaults = _signature_defaults(ActorCriticPolicy)
    model = sb3_cls("MlpPolicy", env_id, device="cpu")
    assert model.policy.net_arch == {"pi": [64, 64], "vf": [64, 64]}   # separate networks of the same widths
    by_key = {name: defaults[name] for name in defaults if name in _ours(pearl.PPO.Config) | _ours(pearl.A2C.Config)}
    by_key.update(
        policy="MlpPolicy",
        net_arch=tuple(model.policy.net_arch["pi"]),
        activation_fn=policy_defaults["activation_fn"].__name__.lower(),
        ortho_init=policy_defaults["ortho_init"],
        log_std_init=policy_defaults["log_std_init"],
        n_envs=model.n_envs,
        features_extractor="auto",   # SB3's MlpPolicy/CnnPolicy choice, made by the observation space
        frame_stack=None,            # SB3 stacks no frames unless a VecFrameStack wrapper is added
        env_kwargs=EnvKwargs(),      # the zoo's make_vec_env(env_kwargs=...): none unless given
        normalize=Normalize(),       # no VecNormalize wrapper unless the zoo's normalize adds one
    )
    return by_key, model


def _ours_as_sb3(config_cls: type) -> dict[str, object]:
    """Our defaults with schedules read at the start of training, as SB3 holds them (floats)."""
    return {name: value(1.0) if isinstance(value, pearl.algorithms.on_policy.Schedule) else value
            for name, value in _ours(config_cls).items()}


def test_ppo_defaults_equal_sb3():
    sb3_defaults, model = _sb3_on_policy_defaults(sb3.PPO, "CartPole-v1")
    ours = _ours_as_sb3(pearl.PPO.Config)
    sb3_defaults["adam_eps"] = model.policy.optimizer.defaults["eps"]
    assert isinstance(model.policy.optimizer, torch.optim.Adam)
    assert set(ours) == set(sb3_defaults), "every PPO key is compared with SB3"
    assert ours == sb3_defaults


def test_a2c_defaults_equal_sb3():
    sb3_defaults, model = _sb3_on_policy_defaults(sb3.A2C, "CartPole-v1")
    ours = _ours_as_sb3(pearl.A2C.Config)
    assert isinstance(model.policy.optimizer, torch.optim.RMSprop)
    assert model.policy.optimizer.defaults["alpha"] == pearl.algorithms.a2c.RMSPROP_ALPHA
    adam = sb3.A2C("MlpPolicy", "CartPole-v1", use_rms_prop=False, device="cpu").policy.optimizer
    sb3_defaults["adam_eps"] = adam.defaults["eps"]   # the eps of A2C's Adam (use_rms_prop: false)
    assert set(ours) == set(sb3_defaults), "every A2C key is compared with SB3"
    assert ours == sb3_defaults


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_actor_critic_has_sb3_parameter_shapes(env_id):
    from pearl_py.algorithms.on_policy import OnPolicyLearner

    ours = OnPolicyLearner(pearl.PPO(env_id)).nets.online.policy
    theirs = sb3.PPO("MlpPolicy", env_id, device="cpu").policy
    assert sorted(p.shape for p in ours.parameters()) == sorted(p.shape for p in theirs.parameters())
