"""Evaluation runs its episodes side by side: each episode's return is the one it has when played alone."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

import pearl_py as pearl
from pearl_py.envs import make_env
from pearl_py.algorithms.networks import Networks
from pearl_py.runtime.evaluation import evaluate


def alone(algo, nets, seed: int) -> float:
    """One greedy episode reset with ``seed``, its observations one at a time."""
    env = make_env(algo.env_id, algo.spec.frame_stack)
    obs, _ = env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        action = algo.greedy_actions(nets, np.asarray(obs, dtype=algo.spec.obs_dtype)[None], torch.device("cpu"))[0]
        obs, reward, terminated, truncated, _ = env.step(algo.spec.to_env_action(action))
        total, done = total + float(reward), terminated or truncated
    env.close()
    return total


@pytest.mark.parametrize("make", [lambda: pearl.DQN("CartPole-v1", net_arch=[32]),
                                  lambda: pearl.PPO("CartPole-v1", net_arch=[16]),
                                  lambda: pearl.DDPG("Pendulum-v1", net_arch=[32])], ids=["dqn", "ppo", "ddpg"])
def test_each_episode_returns_what_it_returns_alone(make):
    algo = make()
    torch.manual_seed(3)
    nets = Networks(algo.build_networks())
    returns = evaluate(algo, nets, torch.device("cpu"), episodes=5, seed=100)
    assert returns == pytest.approx([alone(algo, nets, 100 + i) for i in range(5)], rel=1e-5)
    assert len(set(returns)) > 1 or algo.env_id == "CartPole-v1"   # Pendulum's starts differ by seed


class Recorded(gym.Wrapper):
    """An env that counts its ``close`` calls, and crashes on its first step when told to."""

    def __init__(self, env: gym.Env, crash: bool) -> None:
        super().__init__(env)
        self.crash, self.closes = crash, 0

    def step(self, action):
        if self.crash:
            raise RuntimeError("env crashed")
        return self.env.step(action)

    def close(self) -> None:
        self.closes += 1
        super().close()


@pytest.mark.parametrize("failing", ["step", "make"])
def test_every_env_made_is_closed_once_when_an_episode_or_a_make_fails(failing):
    algo = pearl.DQN("CartPole-v1", net_arch=[8])
    made: list[Recorded] = []

    def factory() -> Recorded:
        if failing == "make" and len(made) == 2:
            raise RuntimeError("env crashed")
        made.append(Recorded(make_env("CartPole-v1"), crash=failing == "step" and len(made) == 2))
        return made[-1]

    with pytest.raises(RuntimeError, match="env crashed"):
        evaluate(algo, Networks(algo.build_networks()), torch.device("cpu"), episodes=4, seed=0, env_factory=factory)
    assert len(made) == (4 if failing == "step" else 2) and [env.closes for env in made] == [1] * len(made)
