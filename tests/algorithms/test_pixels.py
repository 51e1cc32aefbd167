"""Image observations: env families and their preprocessing, feature extractors chosen by shape, every family."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import pearl_py as pearl
from pearl_py.algorithms.cnn import build_extractor, resolve_extractor
from pearl_py.envs import EnvError, EnvSpec, make_env, make_vector_env
from pearl_py.envs.families import family
from pearl_py.algorithms.networks import Networks
from pearl_py.errors import ConfigError

FRAMES = "pearl/Frames-4x10x10-v0"
FRAMES_BOX = "pearl/FramesBox-3x12x12-v0"


def test_families_are_read_from_the_id():
    assert [family(i) for i in ("ALE/Pong-v5", "PongNoFrameskip-v4", "MinAtar/Breakout-v1", FRAMES, "CartPole-v1")] \
        == ["atari", "atari", "minatar", "frames", "gym"]


def test_random_frames_env_makes_uint8_frames_of_its_shape_and_ends_after_32_steps():
    env = make_env(FRAMES)
    obs, _ = env.reset(seed=3)
    assert obs.shape == (4, 10, 10) and obs.dtype == np.uint8
    steps, done = 0, False
    while not done:
        obs, reward, terminated, truncated, _ = env.step(0)
        steps, done = steps + 1, terminated or truncated
        assert reward == 1.0
    assert (steps, truncated, terminated) == (32, True, False)


def test_spec_of_frames_and_of_vectors():
    spec = EnvSpec.from_env_id(FRAMES)
    assert (spec.obs_shape, spec.obs_dtype, spec.obs_dim, spec.obs_item_bytes, spec.is_image) == \
        ((4, 10, 10), "uint8", 400, 400, True)
    vector = EnvSpec.from_env_id("CartPole-v1")
    assert (vector.obs_shape, vector.obs_dtype, vector.obs_item_bytes, vector.is_image) == ((4,), "float32", 16, False)


def test_frame_stack_stacks_channel_first():
    spec = EnvSpec.from_env_id(FRAMES, frame_stack=2)
    assert spec.obs_shape == (8, 10, 10) and spec.frame_stack == 2
    envs = make_vector_env(FRAMES, 2, seed=0, frame_stack=2)
    obs, _ = envs.reset(seed=0)
    assert obs.shape == (2, 8, 10, 10) and obs.dtype == np.uint8
    envs.close()


def test_minatar_breakout_frames_are_channel_first_0_or_255():
    pytest.importorskip("minatar")
    env = make_env("MinAtar/Breakout-v1")
    obs, _ = env.reset(seed=0)
    assert env.observation_space.shape == (4, 10, 10) and obs.dtype == np.uint8
    assert set(np.unique(obs)) <= {0, 255} and obs.max() == 255


def test_atari_preprocessing_gives_four_stacked_84x84_grayscale_frames():
    pytest.importorskip("ale_py")
    pytest.importorskip("cv2")
    spec = EnvSpec.from_env_id("PongNoFrameskip-v4")
    assert (spec.obs_shape, spec.obs_dtype, spec.frame_stack, spec.discrete) == ((4, 84, 84), "uint8", 4, True)
    env = make_env("PongNoFrameskip-v4")
    env.reset(seed=0)
    _, reward, *_ = env.step(0)
    assert reward in (-1.0, 0.0, 1.0)                  # clipped to its sign


def test_an_uninstalled_family_names_the_extra(monkeypatch):
    import importlib

    real = importlib.import_module

    def no_minatar(name, *args):
        if name == "minatar":
            raise ImportError(name)
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", no_minatar)
    with pytest.raises(EnvError, match=r"pip install 'pearl_py\[minatar\]'"):
        make_env("MinAtar/Asterix-v1")


def test_auto_extractor_follows_the_observation_shape():
    assert resolve_extractor(EnvSpec.from_env_id(FRAMES), "auto") == "small_cnn"
    assert resolve_extractor(EnvSpec.from_env_id("pearl/Frames-4x84x84-v0"), "auto") == "nature_cnn"
    assert resolve_extractor(EnvSpec.from_env_id("CartPole-v1"), "auto") == "flatten"
    assert build_extractor(EnvSpec.from_env_id("CartPole-v1"), "auto") is None
    nature = build_extractor(EnvSpec.from_env_id("pearl/Frames-4x84x84-v0"), "auto")
    assert nature.n_features == 512
    assert [tuple(m.weight.shape) for m in nature.net if isinstance(m, torch.nn.Conv2d)] == \
        [(32, 4, 8, 8), (64, 32, 4, 4), (64, 64, 3, 3)]


def test_an_extractor_that_cannot_apply_is_refused_with_the_shapes():
    with pytest.raises(EnvError, match=r"nature_cnn needs frames of at least 36x36.*\(4, 10, 10\)"):
        pearl.DQN(FRAMES, features_extractor="nature_cnn")
    with pytest.raises(EnvError, match=r"small_cnn needs uint8 frames.*float32 of shape \(4,\)"):
        pearl.DQN("CartPole-v1", features_extractor="small_cnn")
    with pytest.raises(ConfigError, match="features_extractor"):
        pearl.DQN(FRAMES, features_extractor="resnet")


def test_networks_divide_uint8_frames_by_255():
    algo = pearl.DQN(FRAMES, net_arch=[8])
    q = algo.build_networks()["q"]
    frames = torch.randint(0, 256, (3, 4, 10, 10), dtype=torch.uint8)
    assert torch.allclose(q(frames), q(frames.float()))
    conv = q[0][1]
    assert torch.allclose(q[0][:2](frames), conv(frames.float() / 255))


@pytest.mark.parametrize("cls, env", [(pearl.DQN, FRAMES), (pearl.DDPG, FRAMES_BOX), (pearl.TD3, FRAMES_BOX),
                                      (pearl.SAC, FRAMES_BOX)])
def test_off_policy_algorithms_act_and_learn_on_frames(cls, env):
    from pearl_py.algorithms.off_policy.derive import _random_batch

    algo = cls(env, net_arch=[16], batch_size=8)
    learner = pearl.algorithms.Learner(algo)
    obs = torch.randint(0, 256, (2, *algo.spec.obs_shape), dtype=torch.uint8)
    actions = algo.act(learner.nets, obs, explore=True, progress=0.5)
    assert actions.shape[0] == 2
    before = [p.clone() for p in learner.nets.parameters()]
    learner.update(_random_batch(algo, 8))
    assert any(not torch.equal(a, b) for a, b in zip(before, learner.nets.parameters()))


@pytest.mark.parametrize("cls", [pearl.PPO, pearl.A2C])
def test_on_policy_actor_critic_shares_one_cnn(cls):
    from pearl_py.algorithms.on_policy import OnPolicyLearner

    algo = cls(FRAMES, net_arch=[16])
    policy = OnPolicyLearner(algo).nets.online.policy
    convs = [m for m in policy.modules() if isinstance(m, torch.nn.Conv2d)]
    assert len(convs) == 1                              # pi and vf read the same features
    step = algo.act(Networks({"policy": policy}), torch.zeros(5, 4, 10, 10, dtype=torch.uint8), explore=True)
    assert step.actions.shape == (5,) and step.values.shape == (5,)
    assert algo.make_rollout(0).obs.dtype == np.uint8


def test_dqn_trains_on_frames_through_the_serial_executor_with_uint8_replay():
    algo = pearl.DQN(FRAMES, net_arch=[16], learning_starts=64, buffer_size=500, batch_size=16, train_freq=4)
    result = pearl.train(algo, total_steps=256, seed=0, eval_episodes=1, progress=False)
    assert result.env_steps == 256 and result.gradient_steps == (256 - 64) // 4
    assert result.eval_returns[0] >= 0


def test_ppo_trains_on_frames_with_a_uint8_rollout():
    algo = pearl.PPO(FRAMES, net_arch=[16], n_steps=64, batch_size=32, n_epochs=2)
    result = pearl.train(algo, total_steps=128, seed=0, eval_episodes=1, progress=False)
    assert result.env_steps == 128 and 0.0 <= result.eval_returns[0] <= 32.0   # 32 steps, reward 1 for action 0
