"""The Atari family against Stable-Baselines3's AtariWrapper and the zoo's frame stack, on fixed seeds and fixed
actions: the same frames, rewards, terminations (lost lives and game over) and true episodes (Monitor's games)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("ale_py")
pytest.importorskip("cv2")
gym = pytest.importorskip("gymnasium")
atari_wrappers = pytest.importorskip("stable_baselines3.common.atari_wrappers")
from stable_baselines3.common.monitor import Monitor  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack, VecTransposeImage  # noqa: E402

from pearl_py.envs import make_env, make_vector_env  # noqa: E402
from pearl_py.envs.atari import AtariPreprocessing  # noqa: E402
from pearl_py.runtime.collect import EpisodeTracker  # noqa: E402
from pearl_py.runtime.evaluation import play  # noqa: E402

BREAKOUT = "BreakoutNoFrameskip-v4"


def sb3_atari(env_id: str) -> gym.Env:
    """The zoo's env: Monitor under SB3's AtariWrapper (make_atari_env's order)."""
    return atari_wrappers.AtariWrapper(Monitor(gym.make(env_id)))


def sb3_stacked(env_id: str, n_envs: int, seed: int) -> VecTransposeImage:
    """The zoo's vector env for an Atari entry with frame_stack 4, env i seeded seed + i."""
    venv = VecTransposeImage(VecFrameStack(DummyVecEnv([lambda: sb3_atari(env_id)] * n_envs), n_stack=4))
    venv.seed(seed)
    return venv


def test_one_env_gives_sb3s_frames_rewards_lives_and_games_over_600_steps():
    gym.register_envs(pytest.importorskip("ale_py"))
    ours, theirs = AtariPreprocessing(gym.make(BREAKOUT)), sb3_atari(BREAKOUT)
    actions = np.random.default_rng(7).integers(0, 4, 600)
    obs, _ = ours.reset(seed=5)
    expected, _ = theirs.reset(seed=5)
    lives = games = 0
    for t, action in enumerate(actions):
        assert np.array_equal(obs[0], expected[..., 0]), t
        obs, reward, terminated, truncated, info = ours.step(action)
        expected, sb3_reward, sb3_terminated, sb3_truncated, sb3_info = theirs.step(action)
        assert (reward, terminated, truncated) == (sb3_reward, sb3_terminated, sb3_truncated), t
        if terminated or truncated:
            # Monitor, under the wrapper, ends its episode at game over only: the game's unclipped return, frames
            assert info["game_over"] == ("episode" in sb3_info), t
            if info["game_over"]:
                games += 1
                assert (info["game_return"], info["game_frames"]) == (sb3_info["episode"]["r"],
                                                                      sb3_info["episode"]["l"])
            lives += not info["game_over"]
            obs, _ = ours.reset()
            expected, _ = theirs.reset()
    assert lives >= 5 and games >= 2      # both kinds of reset were compared


def test_the_vector_env_and_its_tracker_give_the_zoos_stacks_final_frames_and_games():
    n_envs, seed = 2, 11
    ours, theirs = make_vector_env(BREAKOUT, n_envs, seed), sb3_stacked(BREAKOUT, n_envs, seed)
    obs, _ = ours.reset(seed=[seed + i for i in range(n_envs)])
    expected = theirs.reset()
    assert obs.shape == (n_envs, 4, 84, 84) and not obs[:, :3].any()       # zeros before the first frame
    tracker, games, sb3_games = EpisodeTracker(n_envs), [], []
    for t, actions in enumerate(np.random.default_rng(3).integers(0, 4, (500, n_envs))):
        assert np.array_equal(obs, expected), t
        obs, rewards, terminated, truncated, infos = ours.step(actions)
        expected, sb3_rewards, sb3_dones, sb3_infos = theirs.step(actions)
        done = terminated | truncated
        assert np.array_equal(rewards, sb3_rewards) and np.array_equal(done, sb3_dones), t
        for i in np.flatnonzero(done):
            assert np.array_equal(infos["final_obs"][i], sb3_infos[i]["terminal_observation"]), t
        games += [(t, *game) for game in tracker.step(rewards, done, infos)]
        sb3_games += [(t, i, info["episode"]["r"], info["episode"]["l"]) for i, info in enumerate(sb3_infos)
                      if "episode" in info]
    assert games == sb3_games and len(games) >= 3
    ours.close()
    theirs.close()


def test_evaluation_plays_whole_games_and_reports_monitors_unclipped_return():
    """``play`` goes on through lost lives, as SB3's evaluate_policy does with Monitor under the wrapper."""
    env_id, seed = "SpaceInvadersNoFrameskip-v4", 21
    rng = np.random.default_rng(0)
    actions = rng.integers(0, 6, 5000)
    calls = iter(actions)
    algorithm = SimpleNamespace(
        env_id=env_id, obs_transform=None,
        spec=SimpleNamespace(frame_stack=4, env_kwargs=None, obs_dtype="uint8", to_env_action=int),
        greedy_actions=lambda nets, batch, device: [next(calls)])
    returns, lengths = play(algorithm, None, None, episodes=1, seed=seed)

    venv = sb3_stacked(env_id, 1, seed)
    venv.reset()
    clipped = 0.0
    for action in actions:
        _, reward, _, infos = venv.step(np.array([action]))
        clipped += float(reward[0])
        if "episode" in infos[0]:
            break
    assert (returns[0], lengths[0]) == (infos[0]["episode"]["r"], infos[0]["episode"]["l"])
    assert returns[0] > clipped > 0          # SpaceInvaders' aliens are worth 5 to 30: the return is unclipped
    venv.close()


def test_the_family_makes_the_zoo_preprocessing_with_four_stacked_frames():
    env = make_env(BREAKOUT)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (4, 84, 84) and obs.dtype == np.uint8 and not obs[:3].any() and obs[3].any()
    assert isinstance(env.unwrapped, gym.Env) and env.get_wrapper_attr("fire_reset")


def test_a_time_limit_which_the_emulator_steps_would_skip_is_refused_by_name():
    from pearl_py.envs import EnvError, EnvKwargs

    with pytest.raises(EnvError, match=r"env 'PongNoFrameskip-v4': max_episode_steps is not applied to Atari envs; "
                                       r"limit an episode's frames with env_kwargs max_num_frames_per_episode"):
        make_env("PongNoFrameskip-v4", env_kwargs=EnvKwargs.from_config({"max_episode_steps": 100}))


@pytest.mark.parametrize("arguments", [{"terminal_on_life_loss": False, "clip_reward": False, "screen_size": 64},
                                       {"noop_max": 0, "frame_skip": 2}])
def test_the_wrappers_arguments_in_env_kwargs_give_sb3s_wrapper_with_them(arguments):
    from pearl_py.envs import EnvKwargs

    ours = make_env(BREAKOUT, frame_stack=1, env_kwargs=EnvKwargs.from_config(arguments))
    theirs = atari_wrappers.AtariWrapper(gym.make(BREAKOUT), **arguments)
    obs, _ = ours.reset(seed=9)
    expected, _ = theirs.reset(seed=9)
    ends = 0
    for t, action in enumerate(np.random.default_rng(4).integers(0, 4, 300)):
        assert np.array_equal(obs[0], expected[..., 0]), t
        obs, *outcome = ours.step(action)
        expected, *sb3_outcome = theirs.step(action)
        assert outcome[:3] == sb3_outcome[:3], t
        if outcome[1] or outcome[2]:
            ends += 1
            obs, _ = ours.reset()
            expected, _ = theirs.reset()
    assert ends >= 1
