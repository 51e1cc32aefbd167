"""Stable-Baselines3's side of ``benchmarks/vs_sb3.py``: one job of plain values in, SB3 trained and evaluated.

The job is built from the config by the parent process (``vs_sb3.sb3_job``), so SB3's process imports only
what an SB3 user's script would: torch, gymnasium, numpy, stable_baselines3 — not pearl_py (whose import,
numba and scipy's optimizer included, took ~0.7 s that SB3's measured process used to pay). The exception
is a config pearl_py preprocesses (Atari, MinAtar, random frames, a frame stack: ``pearl_env``) or runs through a
CNN (``extractor``): SB3 then trains on pearl_py's env, with pearl_py's CNN inside an SB3
``BaseFeaturesExtractor`` (the same network on both sides), so it imports those modules.

A job (every value picklable, no pearl_py object)::

    {"algorithm": "ppo", "env": "CartPole-v1", "total_steps": 100_000, "policy": "MlpPolicy",
     "kwargs": {...SB3 constructor arguments, policy_kwargs' plain ones...}, "activation_fn": "tanh",
     "n_envs": 8, "noise_std": None, "pearl_env": None, "extractor": None}

Schedules are ``["lin", start]`` (SB3's callable of the remaining progress, ``start * progress``), as pearl_py's
``lin_<start>``.
"""
from __future__ import annotations

import time
from typing import Any

LINEAR = "lin"
"""The tag of a linear schedule in a job: ``[LINEAR, start]``."""


def schedule(value: Any) -> Any:
    """A job's number, or its ``[LINEAR, start]`` as SB3's callable of the remaining progress."""
    if isinstance(value, (list, tuple)) and len(value) == 2 and value[0] == LINEAR:
        start = float(value[1])
        return lambda progress_remaining: start * progress_remaining
    return value


def make_env(job: dict[str, Any]):
    """The job's env: as gymnasium makes it, or with pearl_py's preprocessing where the job says so."""
    if job["pearl_env"] is None:
        import gymnasium as gym

        return gym.make(job["env"])
    from pearl_py.envs import make_env as pearl_make_env

    return pearl_make_env(job["env"], job["pearl_env"]["frame_stack"])


def policy_kwargs(job: dict[str, Any]) -> dict[str, Any]:
    """SB3 ``policy_kwargs``: the job's plain ones, the activation's class, and pearl_py's CNN where the job has one."""
    import torch

    out = dict(job["kwargs"].get("policy_kwargs", {}))
    if job["activation_fn"] is not None:
        out["activation_fn"] = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[job["activation_fn"]]
    if job["extractor"] is not None:
        out.update(features_extractor_class=pixel_extractor(job), normalize_images=False)
    return out


def pixel_extractor(job: dict[str, Any]) -> type:
    """An SB3 features extractor holding pearl_py's CNN for the job's frames (it divides by 255 itself)."""
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

    from pearl_py.algorithms.cnn import build_extractor
    from pearl_py.envs import EnvSpec

    spec = EnvSpec.from_env_id(job["env"], job["extractor"]["frame_stack"])

    class PearlExtractor(BaseFeaturesExtractor):
        def __init__(self, observation_space) -> None:
            extractor = build_extractor(spec, job["extractor"]["features_extractor"])
            super().__init__(observation_space, extractor.n_features)
            self.net = extractor.net

        def forward(self, obs):
            return self.net(obs)

    return PearlExtractor


def model(job: dict[str, Any], seed: int):
    """The SB3 model the job describes."""
    import numpy as np
    import stable_baselines3 as sb3

    kwargs = {key: schedule(value) for key, value in job["kwargs"].items()}
    kwargs["policy_kwargs"] = policy_kwargs(job)
    cls = getattr(sb3, job["algorithm"].upper())
    if job["n_envs"] is not None:     # on-policy: the config's n_envs in one DummyVecEnv, as the zoo does
        from stable_baselines3.common.env_util import make_vec_env

        env = make_vec_env(job["env"], n_envs=job["n_envs"], seed=seed)
    else:
        env = make_env(job)
    if job["noise_std"] is not None:  # SB3 adds action noise in the scaled [-1, 1] space, as pearl_py does
        from stable_baselines3.common.noise import NormalActionNoise

        n_actions = env.action_space.shape[0]
        kwargs["action_noise"] = NormalActionNoise(np.zeros(n_actions), job["noise_std"] * np.ones(n_actions))
    return cls(job["policy"], env, seed=seed, **kwargs)


def run(job: dict[str, Any], seed: int, eval_episodes: int) -> tuple[float, float]:
    """Train for the job's steps, then ``eval_episodes`` deterministic episodes: (training seconds on SB3's own
    clock, mean eval return; nan without evaluation)."""
    sb3_model = model(job, seed)
    start = time.perf_counter()
    sb3_model.learn(job["total_steps"])
    wall = time.perf_counter() - start
    if not eval_episodes:
        return wall, float("nan")
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.monitor import Monitor

    mean, _ = evaluate_policy(sb3_model, Monitor(make_env(job)), n_eval_episodes=eval_episodes, deterministic=True)
    return wall, float(mean)
