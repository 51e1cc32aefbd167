"""Helpers for the parallel-runtime tests: tiny configs, a flaky env, a plan.

Classes here are pickled into actor processes by reference, so this module is imported
there too; importing it registers ``PearlFlakyCartPole-v0``.
"""
from __future__ import annotations

import os
from pathlib import Path

import gymnasium as gym
from gymnasium.envs.classic_control import CartPoleEnv

import pearl_py as pearl
from pearl_py.plan import Placement, Plan
from pearl_py.protocol.kernel import ADVANTAGE, ENV_STEP, INFERENCE, LEARNER_UPDATE, PARAM_SYNC, ROLLOUT_INSERT

TINY_DQN = dict(net_arch=[32], batch_size=16, learning_starts=200, train_freq=50, gradient_steps=10,
                buffer_size=5_000, target_update_interval=100)
FLAKY_MARKER = "PEARL_TEST_FLAKY_MARKER"
"""Env variable: a file path; the flaky env raises once (at its 300th step) unless the file exists."""


class FlakyCartPole(CartPoleEnv):
    """CartPole whose 300th step raises, once per marker file (the restarted actor then runs fine)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._steps = 0

    def step(self, action):
        self._steps += 1
        marker = os.environ.get(FLAKY_MARKER)
        if marker and self._steps == 300 and not Path(marker).exists():
            Path(marker).write_text("raised")
            raise RuntimeError("flaky env: simulated simulator crash")
        return super().step(action)


if "PearlFlakyCartPole-v0" not in gym.registry:
    gym.register("PearlFlakyCartPole-v0", entry_point=FlakyCartPole, max_episode_steps=500)


class FlakyDQN(pearl.DQN):
    """DQN on the flaky env; defined here so actor processes import this module (and the env)."""


def sync_plan(actors: int, inference: str = "fused", learner: str = "fused") -> Plan:
    """Every kernel on the CPU, ``actors`` actors splitting the envs (what ``pearl plan`` writes on this machine)."""
    placements = {ENV_STEP: Placement("cpu", replicas=actors), INFERENCE: Placement("cpu", inference, actors),
                  ROLLOUT_INSERT: Placement("cpu", replicas=actors), ADVANTAGE: Placement("cpu"),
                  LEARNER_UPDATE: Placement("cpu", learner), PARAM_SYNC: Placement("cpu")}
    return Plan(platform="local", objective="throughput", placements=placements, mode="synchronous",
                devices={"cpu": "cpu"}, solver="test")


class FirstCallsDQN(pearl.DQN):
    """DQN that appends to the file ``calls`` a line ``pid event`` for each act (``greedy act``, ``exploring act``)
    and each replay ``add`` and ``sample`` (``throwaway add``: on a replay made with a capacity of its own, as the
    start-up warm-up makes): the order in which each process made its first calls."""

    calls = ""

    def act(self, nets, obs, *, explore, progress):
        self._note("exploring act" if explore else "greedy act")
        return super().act(nets, obs, explore=explore, progress=progress)

    def make_replay(self, seed, shared_name=None, capacity=None):
        replay = super().make_replay(seed, shared_name, capacity)
        for name in ("add", "sample"):
            setattr(replay, name, self._noting(("throwaway " if capacity else "") + name, getattr(replay, name)))
        return replay

    def _noting(self, event, call):
        return lambda *args, **kwargs: (self._note(event), call(*args, **kwargs))[1]

    def _note(self, event):
        with open(self.calls, "a") as f:
            f.write(f"{os.getpid()} {event}\n")
