"""Algorithms: the family bases; DQN, DDPG, TD3 and SAC (off-policy), PPO and A2C (on-policy); the registry of
names used in configs."""
from pearl_py.algorithms.a2c import A2C, A2CConfig
from pearl_py.algorithms.core import BaseAlgorithm
from pearl_py.algorithms.ddpg import DDPG, DDPGConfig
from pearl_py.algorithms.dqn import DQN, DQNConfig
from pearl_py.envs import EnvSpec
from pearl_py.algorithms.networks import (
    Networks,
    StateActionValue,
    TwinStateActionValue,
    mlp,
)
from pearl_py.algorithms.off_policy.base import Algorithm, Loss, OffPolicyAlgorithm
from pearl_py.algorithms.off_policy.config import OffPolicyConfig
from pearl_py.algorithms.off_policy.learner import Learner, TensorBatch, UpdateResult
from pearl_py.algorithms.on_policy import OnPolicyAlgorithm, OnPolicyConfig
from pearl_py.algorithms.ppo import PPO, PPOConfig
from pearl_py.algorithms.sac import SAC, SACConfig
from pearl_py.algorithms.td3 import TD3, TD3Config

REGISTRY: dict[str, type[BaseAlgorithm]] = {DQN.name: DQN, DDPG.name: DDPG, TD3.name: TD3, SAC.name: SAC,
                                            PPO.name: PPO, A2C.name: A2C}
"""Algorithm classes by the name a config's ``algorithm:`` key uses."""


def register(cls: type[BaseAlgorithm]) -> type[BaseAlgorithm]:
    """Make a user-defined algorithm loadable from configs by its ``name``; usable as a decorator."""
    REGISTRY[cls.name] = cls
    return cls


__all__ = [
    "A2C", "A2CConfig", "Algorithm", "BaseAlgorithm", "DDPG", "DDPGConfig", "DQN", "DQNConfig", "EnvSpec",
    "Learner", "Loss", "Networks", "OffPolicyAlgorithm", "OffPolicyConfig", "OnPolicyAlgorithm", "OnPolicyConfig",
    "PPO", "PPOConfig", "REGISTRY", "SAC", "SACConfig", "StateActionValue", "TD3", "TD3Config", "TensorBatch",
    "TwinStateActionValue", "UpdateResult", "mlp", "register",
]
