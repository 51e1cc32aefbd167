"""pearl_py: deep RL written once, split into kernels, placed on heterogeneous devices.

Example::

    import pearl_py as pearl

    algo = pearl.DQN("CartPole-v1", learning_rate=2.3e-3, batch_size=64, net_arch=[256, 256])
    result = pearl.train(algo, total_steps=50_000, seed=0, out="runs/dqn")
    print(result.eval_return_mean, result.samples_per_second)
"""
from pearl_py.algorithms import (
    A2C,
    DDPG,
    DQN,
    PPO,
    SAC,
    TD3,
    A2CConfig,
    Algorithm,
    BaseAlgorithm,
    DDPGConfig,
    DQNConfig,
    Loss,
    Networks,
    OffPolicyAlgorithm,
    OffPolicyConfig,
    OnPolicyAlgorithm,
    OnPolicyConfig,
    PPOConfig,
    SACConfig,
    TD3Config,
    mlp,
    register,
)
from pearl_py.config import param
from pearl_py.errors import ConfigError, UserError
from pearl_py.optimize.api import plan, ranked_plans
from pearl_py.pipeline import train
from pearl_py.pipeline.tune import TuneOptions
from pearl_py.plan import Placement, Plan
from pearl_py.platform import Platform
from pearl_py.protocol import Kernel, KernelKind, ProtocolGraph
from pearl_py.run_config import RunConfig, load_config
from pearl_py.runtime import RunResult
from pearl_py.saved_policy import TrainedPolicy, load
from pearl_py.version import __version__

__all__ = [
    "A2C", "A2CConfig", "Algorithm", "BaseAlgorithm", "ConfigError", "DDPG", "DDPGConfig", "DQN", "DQNConfig",
    "Kernel", "KernelKind", "load", "load_config", "Loss", "mlp", "Networks", "OffPolicyAlgorithm", "OffPolicyConfig",
    "OnPolicyAlgorithm", "OnPolicyConfig", "param", "Placement", "Plan", "plan", "Platform", "PPO", "PPOConfig",
    "ProtocolGraph", "ranked_plans", "register", "RunConfig", "RunResult", "SAC", "SACConfig", "TD3", "TD3Config",
    "train", "TrainedPolicy", "TuneOptions", "UserError", "__version__",
]
