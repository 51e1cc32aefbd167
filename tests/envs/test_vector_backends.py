"""Each env_step backend gives the same episodes as the reference SyncVectorEnv on fixed actions.

CartPole is deterministic given its start state; the native vector env draws start states from one stream of its
own, so each episode of the reference is replayed on the native env from the reference's start state (written
into the native env's state) with the same actions. Observations are float32 of the same float64 dynamics: they
must be equal to the last bit; rewards and ends exactly.
"""
import importlib.util
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from pearl_py.envs import EnvKwargs, make_env, make_native_vector_env, make_vector_env, native_vector_reason
from pearl_py.envs.envpool_vector import envpool_reason
from pearl_py.envs.vector import OneEnvVector

N_ENVS, STEPS = 3, 1100     # past CartPole-v1's 500-step truncation, twice, for the balanced env


def _benchmark(name: str):
    """benchmarks/<name>.py as a module (it imports gymnasium and numpy only when loaded)."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).parents[2] / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ENVPOOL_MUJOCO = _benchmark("envpool_mujoco")     # how gymnasium's MuJoCo env is set to EnvPool's state


def _actions(rng: np.random.Generator, obs: np.ndarray) -> np.ndarray:
    """The same actions for both backends: env 0 random, env 1 always right (ends fast), env 2 pushes toward the
    pole's fall (balances it to the 500-step truncation)."""
    return np.array([rng.integers(2), 1, int(obs[2, 2] + obs[2, 3] > 0)])


def test_native_cartpole_gives_the_reference_episodes_under_the_same_step_contract():
    reference = make_vector_env("CartPole-v1", N_ENVS, seed=0)
    native = make_native_vector_env("CartPole-v1", N_ENVS, seed=0)
    assert native.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP
    obs, _ = reference.reset(seed=[0, 1, 2])
    native.reset(seed=[0, 1, 2])
    native.unwrapped.state = np.stack([env.unwrapped.state for env in reference.envs], axis=1)
    rng, ends, truncations = np.random.default_rng(0), 0, 0
    for _ in range(STEPS):
        actions = _actions(rng, obs)
        want = reference.step(actions)
        got = native.step(actions)
        done = want[2] | want[3]
        np.testing.assert_array_equal(got[1], want[1])           # rewards
        np.testing.assert_array_equal(got[2], want[2])           # terminated
        np.testing.assert_array_equal(got[3], want[3])           # truncated
        if done.any():
            np.testing.assert_array_equal(got[4]["_final_obs"], done)
            for i in np.flatnonzero(done):
                np.testing.assert_array_equal(got[4]["final_obs"][i], want[4]["final_obs"][i])
            assert np.all(np.abs(got[0][done]) <= 0.05)          # the new episodes' first observations
            native.unwrapped.state[:, done] = np.stack([reference.envs[i].unwrapped.state for i in np.flatnonzero(done)], axis=1)
            ends, truncations = ends + int(done.sum()), truncations + int(want[3].sum())
            got = (native.unwrapped.state.T.astype(np.float32),)
        np.testing.assert_array_equal(got[0], want[0])           # observations
        obs = want[0]
    assert ends > 20 and truncations >= 1                        # both kinds of end were compared


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1", "FrozenLake-v1"])
def test_one_env_vector_returns_what_a_sync_vector_env_of_one_returns(env_id):
    """Terminations (CartPole, FrozenLake's holes), truncations (Pendulum's 200 steps) and infos (FrozenLake's
    ``prob``): the same arrays, dtypes and infos, observations new arrays each step."""
    ours = make_vector_env(env_id, 1, seed=0)
    theirs = gym.vector.SyncVectorEnv([lambda: make_env(env_id)], autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    theirs.action_space.seed(0)
    assert isinstance(ours, OneEnvVector)
    assert (ours.observation_space, ours.action_space) == (theirs.observation_space, theirs.action_space)
    assert ours.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP
    want, got = theirs.reset(seed=[3]), ours.reset(seed=[3])
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1].keys() == want[1].keys()
    ends, previous = 0, got[0]
    for _ in range(450):
        actions = theirs.action_space.sample()
        want, got = theirs.step(actions), ours.step(actions)
        for mine, expected in zip(got[:4], want[:4]):
            np.testing.assert_array_equal(mine, expected)
            assert mine.dtype == expected.dtype and mine.shape == expected.shape
        assert got[0] is not previous and not np.shares_memory(got[0], previous)
        assert got[4].keys() == want[4].keys()
        for key in got[4].keys() - {"final_obs", "final_info"}:
            np.testing.assert_array_equal(got[4][key], want[4][key])
        if want[2][0] or want[3][0]:
            np.testing.assert_array_equal(got[4]["final_obs"][0], want[4]["final_obs"][0])
            assert got[4]["final_info"].keys() == want[4]["final_info"].keys()
            ends += 1
        previous = got[0]
    assert ends >= 2
    ours.close()
    assert ours.closed


def test_native_vector_env_is_offered_only_where_gymnasium_has_one():
    assert native_vector_reason("CartPole-v1") is None
    assert "no numpy vector_entry_point for 'Pendulum-v1'" in native_vector_reason("Pendulum-v1")
    assert "stacks no frames" in native_vector_reason("CartPole-v1", frame_stack=4)
    assert "env_kwargs" in native_vector_reason("CartPole-v1", env_kwargs=EnvKwargs.from_config({"a": 1}))
    assert native_vector_reason("CartPole-v1", env_kwargs=EnvKwargs()) is None
    with pytest.raises(ValueError, match="no native vector env for 'Acrobot-v1'"):
        make_native_vector_env("Acrobot-v1", 2, seed=0)
    assert envpool_reason("CartPole-v1") is None
    assert envpool_reason("Pendulum-v1").endswith("MountainCar-v0, HalfCheetah-v4, HalfCheetah-v5, Hopper-v4, "
                                                  "Hopper-v5, Walker2d-v4, Walker2d-v5 only, not 'Pendulum-v1'")


def _obs_state(obs: np.ndarray) -> np.ndarray:
    """The state of an env whose observation is its state (CartPole, MountainCar)."""
    return obs.astype(np.float64)


def _acrobot_state(obs: np.ndarray) -> np.ndarray:
    """(theta1, theta2, dtheta1, dtheta2) of an Acrobot observation (cos, sin of each angle, then the speeds)."""
    return np.array([np.arctan2(obs[1], obs[0]), np.arctan2(obs[3], obs[2]), obs[4], obs[5]], dtype=np.float64)


def _state_from(state_of):
    """Set a classic-control env's state from its observation (EnvPool's info is not needed)."""
    def set_state(env: gym.Env, obs: np.ndarray, info: dict, i: int) -> None:
        env.unwrapped.state = state_of(obs)
    return set_state


def _torques(size: int):
    """Uniform torques, a fifth of them beyond the action bounds (both backends clip them the same way)."""
    bound = ENVPOOL_MUJOCO.ACTION_BOUND
    return lambda obs, rng: rng.uniform(-bound, bound, size)


_CLASSIC_ENDS = ("terminated", "truncated")
_MUJOCO = [(env_id, ENVPOOL_MUJOCO.set_mujoco_state, _torques(size), 1e-6, steps, ends)
           for name, size, steps, ends in [("HalfCheetah", 6, STEPS, ("truncated",)),
                                           ("Hopper", 3, 300, ("terminated",)), ("Walker2d", 6, 300, ("terminated",))]
           for env_id in (f"{name}-v4", f"{name}-v5")]


@pytest.mark.parametrize(("env_id", "set_state", "action_of", "atol", "steps", "ends_seen"), [
    ("CartPole-v1", _state_from(_obs_state), lambda obs, rng: int(obs[2] + obs[3] > 0) if rng.random() < 0.9 else 0,
     1e-5, STEPS, _CLASSIC_ENDS),
    # torque along both links' swing (reaches the goal), sometimes random (then the 500-step truncation)
    ("Acrobot-v1", _state_from(_acrobot_state), lambda obs, rng: 2 * int(obs[4] + obs[5] > 0) if rng.random() < 0.9
     else int(rng.integers(3)), 1e-5, STEPS, _CLASSIC_ENDS),
    # push along the velocity (reaches the flag) 60% of the time, else random (then the 200-step truncation)
    ("MountainCar-v0", _state_from(_obs_state), lambda obs, rng: 2 * int(obs[1] > 0) if rng.random() < 0.6
     else int(rng.integers(3)), 1e-5, STEPS, _CLASSIC_ENDS),
    # random torques: HalfCheetah runs to the 1000-step truncation, Hopper and Walker2d fall (terminate) within 300
    *_MUJOCO,
])
def test_envpool_steps_the_gymnasium_env_under_the_same_step_contract(env_id, set_state, action_of, atol, steps,
                                                                       ends_seen):
    """EnvPool's own start states are written into gymnasium's single envs (EnvPool's state cannot be set); each
    step of both from the same state and action must agree: observations within ``atol`` (classic control: 1e-5,
    EnvPool keeps its state in float64 and the start written here is its float32 observation; MuJoCo: 1e-6, float64
    observations of the same model, whose contact solver iterates to a tolerance from a warm start, the last step's
    accelerations, that setting qpos and qvel does not carry: the largest difference seen was 1.6e-8 on Hopper, one
    step of 3,300, else below 1e-11), rewards within 1e-5 relative (EnvPool's are float32), terminations,
    truncations, final observations and the info both report (but MuJoCo's ``x_position``, see
    ``set_mujoco_state``) the same. benchmarks/envpool_mujoco.py prints the MuJoCo gaps."""
    pytest.importorskip("envpool")
    if env_id in {case[0] for case in _MUJOCO}:
        pytest.importorskip("mujoco")
    from pearl_py.envs import make_env, make_envpool_vector_env

    pool = make_envpool_vector_env(env_id, N_ENVS, seed=0)
    assert pool.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP
    singles = [make_env(env_id) for _ in range(N_ENVS)]
    obs, info = pool.reset(seed=0)
    for i, env in enumerate(singles):
        env.reset(seed=0)
        set_state(env, obs[i], info, i)
    rng, ends = np.random.default_rng(0), {"terminated": 0, "truncated": 0}
    for _ in range(steps):
        actions = np.array([action_of(o, rng) for o in obs])
        next_obs, rewards, terminated, truncated, info = pool.step(actions)
        for i, env in enumerate(singles):
            want_obs, want_reward, want_terminated, want_truncated, want_info = env.step(actions[i])
            assert (terminated[i], truncated[i]) == (want_terminated, want_truncated)
            assert rewards[i] == pytest.approx(want_reward, rel=1e-5, abs=1e-6)
            seen = info["final_obs"][i] if want_terminated or want_truncated else next_obs[i]
            for key in (want_info.keys() & info.keys()) - {"x_position"}:     # MuJoCo's x_velocity, reward_ctrl, ...
                assert info[key][i] == pytest.approx(want_info[key], rel=1e-5, abs=1e-6), key
            np.testing.assert_allclose(seen, want_obs, rtol=atol, atol=atol)
            if want_terminated or want_truncated:
                assert info["_final_obs"][i]
                env.reset()                                     # EnvPool's new episode started this step
                ends["terminated" if want_terminated else "truncated"] += 1
            set_state(env, next_obs[i], info, i)                # go on from EnvPool's state
        obs = next_obs
    pool.close()
    assert all(ends[kind] >= 1 for kind in ends_seen), ends              # each kind of end the env reaches was compared
