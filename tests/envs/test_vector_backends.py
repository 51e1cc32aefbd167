"""Each env_step backend gives the same episodes as the reference SyncVectorEnv on fixed actions.

CartPole is deterministic given its start state; the native vector env draws start states from one stream of its
own, so each episode of the reference is replayed on the native env from the reference's start state (written
into the native env's state) with the same actions. Observations are float32 of the same float64 dynamics: they
must be equal to the last bit; rewards and ends exactly.
"""
import gymnasium as gym
import numpy as np
import pytest

from pearl_py.envs import EnvKwargs, make_native_vector_env, make_vector_env, native_vector_reason

N_ENVS, STEPS = 3, 1100     # past CartPole-v1's 500-step truncation, twice, for the balanced env


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


def test_native_vector_env_is_offered_only_where_gymnasium_has_one():
    assert native_vector_reason("CartPole-v1") is None
    assert "no numpy vector_entry_point for 'Pendulum-v1'" in native_vector_reason("Pendulum-v1")
    assert "stacks no frames" in native_vector_reason("CartPole-v1", frame_stack=4)
    assert "env_kwargs" in native_vector_reason("CartPole-v1", env_kwargs=EnvKwargs.from_config({"a": 1}))
    assert native_vector_reason("CartPole-v1", env_kwargs=EnvKwargs()) is None
    with pytest.raises(ValueError, match="no native vector env for 'Acrobot-v1'"):
        make_native_vector_env("Acrobot-v1", 2, seed=0)
