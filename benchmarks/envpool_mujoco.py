"""EnvPool's MuJoCo locomotion envs against gymnasium's of the same id, step by step from the same state: after every
step gymnasium's env is set to EnvPool's qpos and qvel (:func:`set_mujoco_state`), then both take the same action.
Deterministic figures (no timing); needs the ``mujoco`` and ``envpool`` extras. docs/kernels.md ("Env backends")
quotes its output; tests/envs/test_vector_backends.py asserts the same comparison within a tolerance.

    PYTHONPATH=$PWD python benchmarks/envpool_mujoco.py
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np

IDS = tuple(f"{name}-{version}" for name in ("HalfCheetah", "Hopper", "Walker2d") for version in ("v4", "v5"))
N_ENVS, STEPS, ACTION_BOUND = 3, 1100, 1.25
VELOCITY_CLIP = 10.0
"""Hopper and Walker2d observe qvel clipped to this (HalfCheetah does not clip)."""


def set_mujoco_state(env: gym.Env, obs: np.ndarray, info: dict, i: int) -> None:
    """Set gymnasium's MuJoCo locomotion ``env`` to EnvPool's env ``i``: qpos is ``info["x_position"][i]`` then
    the observation's first nq - 1 entries, qvel the rest. A qvel entry at the clip keeps ``env``'s own speed, which
    it reached by a step from the same state. EnvPool's reset reports ``x_position`` 0, not its start's x (reset
    noise), and after an end the step's info is the ended episode's: an episode's x is then off by a constant, which
    its dynamics, rewards and observations (x excluded) do not see."""
    nq = env.unwrapped.model.nq
    qvel = np.where(np.abs(obs[nq - 1:]) < VELOCITY_CLIP, obs[nq - 1:], env.unwrapped.data.qvel)
    env.unwrapped.set_state(np.concatenate([[info["x_position"][i]], obs[:nq - 1]]), qvel)


def gaps(env_id: str, n_envs: int = N_ENVS, steps: int = STEPS) -> dict[str, float | int]:
    """Largest observation and reward gaps, end mismatches and ends over ``steps`` steps of ``n_envs`` envs with
    uniform actions in +-ACTION_BOUND (a fifth beyond the bounds)."""
    from pearl_py.envs import make_env, make_envpool_vector_env

    pool = make_envpool_vector_env(env_id, n_envs, seed=0)
    singles = [make_env(env_id) for _ in range(n_envs)]
    obs, info = pool.reset()
    for i, env in enumerate(singles):
        env.reset(seed=0)
        set_mujoco_state(env, obs[i], info, i)
    rng, size = np.random.default_rng(0), pool.single_action_space.shape[0]
    out = {"obs gap": 0.0, "reward gap": 0.0, "end mismatches": 0, "terminated": 0, "truncated": 0}
    for _ in range(steps):
        actions = rng.uniform(-ACTION_BOUND, ACTION_BOUND, (n_envs, size))
        obs, rewards, terminated, truncated, info = pool.step(actions)
        for i, env in enumerate(singles):
            want_obs, want_reward, want_terminated, want_truncated, _ = env.step(actions[i])
            ended = want_terminated or want_truncated
            out["obs gap"] = max(out["obs gap"], np.abs((info["final_obs"][i] if ended else obs[i]) - want_obs).max())
            out["reward gap"] = max(out["reward gap"], abs(rewards[i] - want_reward))
            out["end mismatches"] += (terminated[i], truncated[i]) != (want_terminated, want_truncated)
            if ended:
                env.reset()
                out["terminated" if want_terminated else "truncated"] += 1
            set_mujoco_state(env, obs[i], info, i)
    pool.close()
    return out


if __name__ == "__main__":
    for env_id in IDS:
        got = gaps(env_id)
        print(f"{env_id}: {N_ENVS} envs x {STEPS} steps: largest observation gap {got['obs gap']:.2g}, largest reward"
              f" gap {got['reward gap']:.2g}, {got['end mismatches']} end mismatches, {got['terminated']} terminated,"
              f" {got['truncated']} truncated")
