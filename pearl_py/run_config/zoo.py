"""rl-baselines3-zoo hyperparameter files (``hyperparams/<algo>.yml``) read as run configs.

A zoo file maps env ids to entries of Stable-Baselines3 keyword arguments. An entry becomes a
:class:`~pearl_py.run_config.RunConfig`: ``n_timesteps`` is ``total_steps``; ``policy`` must be
``MlpPolicy``; ``policy_kwargs`` (a ``dict(...)`` text or a mapping) gives ``net_arch`` (a list, or
``dict(pi=..., vf=...)``/``dict(pi=..., qf=...)`` with equal lists), ``activation_fn``
(``nn.ReLU``/``nn.Tanh``), ``ortho_init``, ``log_std_init``; ``train_freq`` may be ``[n, "step"]``;
``noise_type: normal`` is the Gaussian action noise of ``noise_std``; keys that only restate
SB3's defaults (``normalize: false``, ``use_sde: false``, ``optimize_memory_usage: false``) are
accepted; every other key is the algorithm's own hyperparameter (``lin_<number>`` schedules
included) and is validated like a config file's. What pearl_py does not support is refused by
name, at its line: ``ConfigError: hyperparams/ppo.yml:44: Pendulum-v1.use_sde: ...``.

Example::

    >>> cfg = load_zoo("hyperparams/dqn.yml", "CartPole-v1")       # the algorithm from the file name
    >>> cfg.settings.total_steps, cfg.hyperparameters.net_arch
    (50000, (256, 256))
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from pearl_py.algorithms import REGISTRY
from pearl_py.algorithms.env_spec import EnvError, check_env_id
from pearl_py.config.fields import build
from pearl_py.config.yaml_source import YamlDocument
from pearl_py.errors import ConfigError
from pearl_py.run_config import RunConfig, RunSettings

SUPPORTED_POLICY = "MlpPolicy"
ACTIVATIONS = {"ReLU": "relu", "Tanh": "tanh"}
AT_DEFAULT = {"normalize": False, "use_sde": False, "optimize_memory_usage": False}
"""Zoo keys accepted only at these values (SB3's defaults, which pearl_py implements)."""
UNSUPPORTED = {
    "normalize": "observation and reward normalization (VecNormalize) is not implemented in pearl_py",
    "normalize_kwargs": "observation and reward normalization (VecNormalize) is not implemented in pearl_py",
    "use_sde": "generalized state-dependent exploration (gSDE) is not implemented in pearl_py",
    "sde_sample_freq": "generalized state-dependent exploration (gSDE) is not implemented in pearl_py",
    "frame_stack": "frame stacking is not implemented in pearl_py (flat observations only)",
    "env_wrapper": "env wrappers are not applied by pearl_py (it makes envs with gymnasium.make)",
    "vec_env_wrapper": "vector-env wrappers are not applied by pearl_py",
    "callback": "SB3 callbacks do not run in pearl_py",
    "env_kwargs": "env keyword arguments are not passed by pearl_py",
    "replay_buffer_class": "pearl_py has its own replay (prioritized_replay: true for PER)",
    "replay_buffer_kwargs": "pearl_py has its own replay (prioritized_replay: true for PER)",
    "optimize_memory_usage": "the memory-optimized replay is not implemented in pearl_py",
    "monitor_kwargs": "pearl_py logs episodes itself (episodes.csv)",
}
POLICY_KWARGS = ("net_arch", "activation_fn", "ortho_init", "log_std_init")


def load_zoo(path: str | Path, env_id: str, algorithm: str | None = None) -> RunConfig:
    """The run config of ``env_id``'s entry in a zoo file; ``algorithm`` defaults to the file's name (dqn.yml)."""
    doc = YamlDocument.load(path)
    name = algorithm or Path(path).stem.lower()
    if name not in REGISTRY:
        raise ConfigError(f"cannot tell the algorithm from the file name {Path(path).name!r}; known: "
                          f"{', '.join(sorted(REGISTRY))} (name the file <algorithm>.yml, as the zoo does)",
                          file=doc.file)
    if not isinstance(doc.data, dict) or env_id not in doc.data:
        entries = ", ".join(doc.data) if isinstance(doc.data, dict) and doc.data else "none"
        raise ConfigError(f"no entry for env {env_id!r}; entries: {entries}", file=doc.file)
    entry = doc.data[env_id]
    if not isinstance(entry, dict):
        raise doc.error((env_id,), "a zoo entry is a mapping of hyperparameters")
    try:
        check_env_id(env_id)
    except EnvError as exc:
        raise doc.error((env_id,), str(exc)) from None
    cls = REGISTRY[name]
    config_keys = {f for f in cls.Config.__dataclass_fields__}
    settings = {"algorithm": name, "env": env_id}
    hyper: dict[str, Any] = {}
    for key, value in entry.items():
        where = (env_id, key)
        if key == "n_timesteps":
            settings["total_steps"] = _whole_number(doc, where, value)
        elif key == "policy":
            if value != SUPPORTED_POLICY:
                raise doc.error(where, f"policy {value!r} is not supported: pearl_py implements {SUPPORTED_POLICY}")
            if "policy" in config_keys:
                hyper["policy"] = value
        elif key == "policy_kwargs":
            hyper.update(policy_kwargs(doc, where, value, config_keys))
        elif key == "train_freq":
            hyper["train_freq"] = _train_freq(doc, where, value)
        elif key == "noise_type":
            if value != "normal":
                raise doc.error(where, f"noise_type {value!r} is not supported: pearl_py implements 'normal' "
                                       "(Gaussian action noise of noise_std)")
        elif key in AT_DEFAULT and value == AT_DEFAULT[key]:
            continue
        elif key in UNSUPPORTED:
            raise doc.error(where, f"{UNSUPPORTED[key]}: remove the key to run without it")
        elif key not in config_keys:
            raise doc.error(where, f"{name} in pearl_py has no hyperparameter {key!r}")
        else:
            hyper[key] = value
    run_settings = build(RunSettings, settings, doc=doc, path=(env_id,))
    hyperparameters = build(cls.Config, hyper, doc=doc, path=(env_id,))
    return RunConfig(settings=run_settings, hyperparameters=hyperparameters, source=f"{doc.file}:{env_id}",
                     raw={**settings, "hyperparameters": hyper})


def _whole_number(doc: YamlDocument, where: tuple[str, str], value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or float(value) != int(value) or value < 1:
        raise doc.error(where, f"expected a whole number of env steps, got {value!r}")
    return int(value)


def _train_freq(doc: YamlDocument, where: tuple[str, str], value: Any) -> Any:
    """``n`` or ``[n, "step"]``; ``[n, "episode"]`` is refused (pearl_py trains every n steps)."""
    if isinstance(value, list):
        if len(value) == 2 and value[1] == "step":
            return value[0]
        raise doc.error(where, f"train_freq {value!r}: pearl_py trains every n env steps ([n, 'step'] or n); "
                               "training per episode is not implemented")
    return value


def policy_kwargs(doc: YamlDocument, where: tuple[str, str], value: Any, config_keys: set[str]) -> dict[str, Any]:
    """The pearl_py hyperparameters of a zoo ``policy_kwargs`` (text ``dict(...)`` or a mapping)."""
    kwargs = _parse_kwargs(doc, where, value) if isinstance(value, str) else value
    if not isinstance(kwargs, dict):
        raise doc.error(where, f"expected dict(...) or a mapping, got {value!r}")
    out: dict[str, Any] = {}
    for key, item in kwargs.items():
        if key not in POLICY_KWARGS or key not in config_keys:
            raise doc.error(where, f"policy_kwargs {key!r} is not supported by this algorithm in pearl_py "
                                   f"(supported: {', '.join(k for k in POLICY_KWARGS if k in config_keys)})")
        out[key] = _net_arch(doc, where, item) if key == "net_arch" else item
    return out


def _net_arch(doc: YamlDocument, where: tuple[str, str], value: Any) -> Any:
    """A list of widths; a ``dict(pi=..., vf=...)`` (or ``qf``) only when every network has the same widths."""
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict):
        value = value[0]  # SB3 < 1.8 wrote [dict(pi=..., vf=...)]
    if isinstance(value, dict):
        widths = {tuple(v) if isinstance(v, list) else v for v in value.values()}
        if len(widths) != 1:
            raise doc.error(where, f"net_arch {value!r}: pearl_py gives every network the same widths; "
                                   "separate widths per network are not implemented")
        return list(widths.pop())
    return value


def _parse_kwargs(doc: YamlDocument, where: tuple[str, str], text: str) -> dict[str, Any]:
    """``dict(net_arch=[64, 64], activation_fn=nn.ReLU, ...)`` read without running it: literals only."""
    try:
        tree = ast.parse(text.strip(), mode="eval").body
        return _literal(tree)
    except (SyntaxError, ValueError) as exc:
        raise doc.error(where, f"cannot read {text!r} ({exc}); pearl_py reads dict(...) of literals, "
                               "nn.ReLU and nn.Tanh") from None


def _literal(node: ast.AST) -> Any:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
        return {kw.arg: _literal(kw.value) for kw in node.keywords}
    if isinstance(node, ast.Dict):
        return {ast.literal_eval(k): _literal(v) for k, v in zip(node.keys, node.values)}
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(item) for item in node.elts]
    if isinstance(node, ast.Attribute) and node.attr in ACTIVATIONS:  # nn.ReLU, th.nn.ReLU, torch.nn.Tanh
        return ACTIVATIONS[node.attr]
    if isinstance(node, ast.Attribute):
        raise ValueError(f"unsupported name {ast.unparse(node)} (activations: nn.ReLU, nn.Tanh)")
    return ast.literal_eval(node)
