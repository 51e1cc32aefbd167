"""The on-policy family: the :class:`OnPolicyAlgorithm` base, its config, policy, GAE and learner.

PPO and A2C (``pearl_py.algorithms.ppo``, ``pearl_py.algorithms.a2c``) are built on it; a
user's own on-policy algorithm subclasses :class:`OnPolicyAlgorithm` (docs/api.md).

Example::

    >>> algo = pearl.PPO("CartPole-v1", n_envs=8, n_steps=32)
    >>> result = OnPolicySerialExecutor(algo, seed=0).run(total_steps=10_000)
"""
from pearl_py.algorithms.on_policy.base import LossTerms, OnPolicyAlgorithm, PolicyStep
from pearl_py.algorithms.on_policy.config import OnPolicyConfig
from pearl_py.algorithms.on_policy.distributions import Categorical, DiagGaussian
from pearl_py.algorithms.on_policy.learner import (
    LearnStats,
    OnPolicyLearner,
    RolloutBatch,
)
from pearl_py.algorithms.on_policy.policy import ActorCritic
from pearl_py.algorithms.on_policy.schedules import Schedule
from pearl_py.replay.gae import bootstrap_truncated, gae

__all__ = [
    "ActorCritic", "Categorical", "DiagGaussian", "LearnStats", "LossTerms", "OnPolicyAlgorithm", "OnPolicyConfig",
    "OnPolicyLearner", "PolicyStep", "RolloutBatch", "Schedule", "bootstrap_truncated", "gae",
]
