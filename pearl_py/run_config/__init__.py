"""The run config: one YAML file that names an algorithm, an env and its hyperparameters.

Example config (``examples/configs/dqn_cartpole.yaml``)::

    algorithm: dqn
    env: CartPole-v1
    total_steps: 50000
    seed: 0
    hyperparameters:
      learning_rate: 2.3e-3
      batch_size: 64

Example use::

    >>> cfg = pearl.load_config("examples/configs/dqn_cartpole.yaml")
    >>> algo = cfg.make_algorithm()
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pearl_py.algorithms import (
    REGISTRY,
    Algorithm,
    OffPolicyConfig,
    OnPolicyAlgorithm,
    OnPolicyConfig,
)
from pearl_py.envs import EnvError, check_env_id
from pearl_py.config.fields import build, param, rebuild
from pearl_py.config.yaml_source import YamlDocument
from pearl_py.errors import ConfigError, UserError
from pearl_py.protocol.schedule import TrainSchedule

MAX_SEED = 2**32 - 1
"""Largest seed: 32 bits, as numpy's legacy seeding, gymnasium and Stable-Baselines3 take seeds."""


@dataclass(frozen=True)
class RunSettings:
    """The top-level keys of a run config other than ``hyperparameters``."""

    algorithm: str = param("dqn", "Algorithm name: dqn, ddpg, td3, sac, ppo, a2c, or a registered user algorithm.")
    env: str = param("CartPole-v1", "Gymnasium environment id; `module:EnvName-v0` imports `module` first (gymnasium's "
                     "form for an env a package registers on import).")
    env_module: str | None = param(None, "Module to import first, which registers `env` with gymnasium (a user's own "
                                   "env; the zoo's --gym-packages); the run's env id becomes `env_module:env`, so "
                                   "every process that makes the env imports it.")
    total_steps: int = param(50_000, "Env steps (transitions) to collect.", low=1)
    seed: int = param(0, "Seed of networks, exploration, replay sampling and envs.", low=0, high=MAX_SEED)
    eval_episodes: int = param(10, "Greedy evaluation episodes at the end of training.", low=0)
    eval_freq: int = param(0, "Also evaluate every this many env steps (0: only at the end).", low=0)
    checkpoint_freq: int = param(0, "Write a checkpoint every this many env steps into OUT/checkpoints "
                                 "(0: none); `--resume OUT` continues from the newest.", low=0)
    checkpoint_keep: int = param(2, "Newest periodic checkpoints kept (older ones are deleted).", low=1)
    dedicated: bool = param(False, "The machine runs nothing but this run: `--auto` values a multi-threaded option "
                            "by its calibrated cost alone, not as expected beside other processes (`--dedicated`; "
                            "docs/optimizer.md).")

    @property
    def env_id(self) -> str:
        """The env id the run makes: ``env``, or ``env_module:env`` when a module registers it."""
        return f"{self.env_module}:{self.env}" if self.env_module and ":" not in self.env else self.env


@dataclass(frozen=True)
class RunConfig:
    """A validated run config: settings plus the algorithm's hyperparameter dataclass."""

    settings: RunSettings
    hyperparameters: OffPolicyConfig | OnPolicyConfig
    source: str = "<python>"
    raw: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def algorithm_class(self) -> type[Algorithm | OnPolicyAlgorithm]:
        return REGISTRY[self.settings.algorithm]

    def make_algorithm(self) -> Algorithm | OnPolicyAlgorithm:
        return self.algorithm_class(self.settings.env_id, self.hyperparameters)

    def with_overrides(self, **settings: Any) -> RunConfig:
        """A copy with some top-level settings replaced (``--steps``, ``--seed`` on the CLI)."""
        given = {k: v for k, v in settings.items() if v is not None}
        config = dataclasses.replace(self, settings=rebuild(RunSettings, self.settings, given))
        check_trains(config.settings, config.hyperparameters, config.error)
        return config

    def error(self, path: tuple[str | int, ...], message: str) -> ConfigError:
        """A :class:`ConfigError` at key ``path``, located in the config's file when it came from one."""
        if self.source != "<python>" and Path(self.source).is_file():
            return YamlDocument.load(self.source).error(path, message)
        return ConfigError(message, key=".".join(map(str, path)))


def load_config(path: str | Path, env_module: str | None = None) -> RunConfig:
    """Read and validate a run config; a mistake raises ConfigError naming ``file:line: key``. ``env_module``
    (``--env-module``) replaces the file's, before its env is checked."""
    return parse_config(YamlDocument.load(path), env_module)


def parse_config(doc: YamlDocument, env_module: str | None = None) -> RunConfig:
    data = doc.data
    if not isinstance(data, dict):
        raise doc.error((), "a run config is a mapping of keys (algorithm, env, total_steps, ...)")
    if not data:
        raise doc.error((), "the config is empty: a run config names at least its algorithm and env "
                            "(see examples/configs)")
    top = {k: v for k, v in data.items() if k != "hyperparameters"} | ({"env_module": env_module} if env_module else {})
    settings = build(RunSettings, top, doc=doc)
    if settings.algorithm not in REGISTRY:
        raise doc.error(("algorithm",), f"unknown algorithm {settings.algorithm!r}; "
                                        f"known: {', '.join(sorted(REGISTRY))}")
    try:
        check_env_id(settings.env_id)
    except EnvError as exc:
        if env_module and "cannot import" in str(exc):
            raise UserError(f"--env-module {env_module}: {exc}") from None
        raise doc.error(("env_module" if settings.env_module and "cannot import" in str(exc) else "env",),
                        str(exc)) from None
    algo_cls = REGISTRY[settings.algorithm]
    hyper = build(algo_cls.Config, data.get("hyperparameters") or {}, doc=doc, path=("hyperparameters",))
    check_trains(settings, hyper, doc.error)
    return RunConfig(settings=settings, hyperparameters=hyper, source=doc.file, raw=data)


def check_trains(settings: RunSettings, hyper: OffPolicyConfig | OnPolicyConfig,
                 error: Callable[[tuple[str, ...], str], ConfigError]) -> None:
    """Raise ``error(key path, message)`` when an off-policy run of ``settings.total_steps`` would never update:
    learning starts at or after its end, or its first training round falls after it. (An on-policy run always
    learns from its first rollout, which may pass ``total_steps``.)"""
    if not isinstance(hyper, OffPolicyConfig):
        return
    total = settings.total_steps
    if hyper.learning_starts >= total:
        raise error(("hyperparameters", "learning_starts"),
                    f"{hyper.learning_starts} is not below total_steps {total}: the run would end before its first "
                    "update (lower learning_starts or raise total_steps)")
    schedule = TrainSchedule.from_config(hyper, total)
    if schedule.total_updates == 0:
        raise error(("hyperparameters", "train_freq"),
                    f"the first training round comes at env step {schedule.first_round_step * hyper.n_envs}, "
                    f"past total_steps {total}: the run would never update (lower train_freq or raise total_steps)")
