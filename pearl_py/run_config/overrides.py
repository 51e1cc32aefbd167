"""``--set key=value``: override any key of a run config from the command line, validated like the file.

``key`` is a top-level setting (``total_steps``, ``seed``, ``eval_freq``, ``checkpoint_freq``, ...) or
a hyperparameter, bare (``batch_size``) or as ``hyperparameters.batch_size``; ``value`` is read as
YAML (``64``, ``2.3e-3``, ``[256, 256]``, ``true``, ``null``, ``lin_0.001``). A mistake names the flag:
``--set batch_size=-1: hyperparameters.batch_size: must be >= 1, got -1``.

Example::

    >>> cfg = apply_sets(load_config("examples/configs/dqn_cartpole.yaml"), ["batch_size=128", "seed=3"])
    >>> cfg.hyperparameters.batch_size, cfg.settings.seed
    (128, 3)
"""
from __future__ import annotations

import dataclasses
from typing import Any

import yaml

from pearl_py.envs import EnvError, check_env_id
from pearl_py.config.fields import rebuild
from pearl_py.config.yaml_source import YamlDocument
from pearl_py.errors import ConfigError, UserError
from pearl_py.run_config import RunConfig, RunSettings

HYPER = "hyperparameters"


def parse_set(text: str) -> tuple[str, Any]:
    """``"key=value"`` as ``(key, value read as YAML)``."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise UserError(f"--set {text}: expected KEY=VALUE, e.g. --set batch_size=64")
    try:
        return key, yaml.safe_load(value) if value.strip() else ""
    except yaml.YAMLError as exc:
        raise UserError(f"--set {text}: the value is not valid YAML ({str(exc).splitlines()[0]})") from None


def apply_sets(cfg: RunConfig, sets: list[str]) -> RunConfig:
    """``cfg`` with every ``KEY=VALUE`` applied in order."""
    for text in sets:
        cfg = _apply(cfg, text)
    return cfg


def _apply(cfg: RunConfig, text: str) -> RunConfig:
    key, value = parse_set(text)
    doc = YamlDocument(data=None, file=f"--set {text}")
    settings = {f.name for f in dataclasses.fields(RunSettings)}
    hyper = {f.name for f in dataclasses.fields(cfg.hyperparameters)}
    name = key.removeprefix(f"{HYPER}.")
    if key == "algorithm":
        raise UserError(f"--set {text}: choose the algorithm in the config file (its hyperparameters belong to it)")
    if key in settings:
        new = rebuild(RunSettings, cfg.settings, {key: value}, doc=doc)
        if key in ("env", "env_module"):
            try:
                check_env_id(new.env_id)
            except EnvError as exc:
                raise ConfigError(str(exc), key=key, file=doc.file) from None
        return dataclasses.replace(cfg, settings=new)
    if name in hyper or key.startswith(f"{HYPER}."):
        follow = {"gradient_steps": -1} if (cfg.raw.get(HYPER) or {}).get("gradient_steps") == -1 else {}
        # SB3's -1 follows a new train_freq or n_envs
        new = rebuild(type(cfg.hyperparameters), cfg.hyperparameters, follow | {name: value}, doc=doc, path=(HYPER,))
        raw = cfg.raw | {HYPER: (cfg.raw.get(HYPER) or {}) | {name: value}}
        return dataclasses.replace(cfg, hyperparameters=new, raw=raw)
    known = sorted(settings - {"algorithm"}) + sorted(hyper)
    raise UserError(f"--set {text}: unknown key {key!r}; known: {', '.join(known)}")
