"""pearl_py: deep RL written once, split into kernels, placed on heterogeneous devices.

Example::

    import pearl_py as pearl

    algo = pearl.DQN("CartPole-v1", learning_rate=2.3e-3, batch_size=64, net_arch=[256, 256])
    result = pearl.train(algo, total_steps=50_000, seed=0, out="runs/dqn-py")
    print(result.eval_return_mean, result.samples_per_second)

The names below are imported on first use (PEP 562), so ``import pearl_py`` and the ``pearl`` command start
without loading torch: a Ctrl-C while they load is the command's own one-line interrupt, and ``pearl --help``
answers at once. ``pearl_py.plan`` is the optimizer's :func:`~pearl_py.optimize.api.plan`; its module is
imported here first, so that importing it later does not replace the function (a package's submodule is set
as its attribute when first imported).
"""
from __future__ import annotations

from pearl_py.lazy import lazy_names
from pearl_py.plan import Placement, Plan  # before ``plan``: see the docstring

del globals()["plan"]  # the submodule the import above set: ``pearl_py.plan`` is the function (``__getattr__``)

_WHERE = {
    "pearl_py.algorithms": (
        "A2C", "A2CConfig", "Algorithm", "BaseAlgorithm", "DDPG", "DDPGConfig", "DQN", "DQNConfig", "Loss",
        "Networks", "OffPolicyAlgorithm", "OffPolicyConfig", "OnPolicyAlgorithm", "OnPolicyConfig", "PPO",
        "PPOConfig", "SAC", "SACConfig", "TD3", "TD3Config", "mlp", "register"),
    "pearl_py.config": ("param",),
    "pearl_py.errors": ("ConfigError", "UserError"),
    "pearl_py.optimize.api": ("plan", "ranked_plans"),
    "pearl_py.pipeline.train": ("train",),
    "pearl_py.pipeline.tune": ("TuneOptions",),
    "pearl_py.plan_file": ("load_plan",),
    "pearl_py.platform": ("Platform",),
    "pearl_py.protocol": ("Kernel", "KernelKind", "ProtocolGraph"),
    "pearl_py.report.export": ("export_plan",),
    "pearl_py.run_config": ("RunConfig", "load_config"),
    "pearl_py.runtime": ("RunResult",),
    "pearl_py.saved_policy": ("TrainedPolicy", "load"),
    "pearl_py.version": ("__version__",),
}
__getattr__, __dir__ = lazy_names(__name__, _WHERE)
__all__ = sorted([*(name for names in _WHERE.values() for name in names), "Placement", "Plan"], key=str.lower)
