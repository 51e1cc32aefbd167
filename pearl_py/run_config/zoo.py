"""rl-baselines3-zoo hyperparameter files (``hyperparams/<algo>.yml``) read as run configs.

An env's entry (:func:`entry_key`) becomes a :class:`~pearl_py.run_config.RunConfig`; the keys read and those
refused: docs/api.md, "rl-baselines3-zoo files and ``--set``". What pearl_py does not support is refused by name, at
its line: ``ConfigError: hyperparams/sac.yml:20: Pendulum-v1.use_sde: ...``; the env id is checked last.

Example::

    >>> cfg = load_zoo("hyperparams/dqn.yml", "CartPole-v1")       # the algorithm from the file name
    >>> cfg.settings.total_steps, cfg.hyperparameters.net_arch
    (50000, (256, 256))
"""
from __future__ import annotations

import ast
import dataclasses
import typing
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pearl_py.algorithms import REGISTRY
from pearl_py.envs.atari import ZOO_DEFAULTS, ZOO_WRAPPER
from pearl_py.envs.families import family
from pearl_py.envs import EnvError, check_env_id
from pearl_py.config.fields import build
from pearl_py.config.yaml_source import KeyPath, YamlDocument
from pearl_py.errors import ConfigError, UserError
from pearl_py.run_config import RunConfig, RunSettings
from pearl_py.run_config.overrides import HYPER, parse_set

SUPPORTED_POLICY = "MlpPolicy"
IMAGE_POLICY, IMAGE_FAMILIES = "CnnPolicy", ("atari", "minatar", "frames")
"""SB3's CNN policy: the policy pearl_py gives the uint8 frames of these env families (nature_cnn)."""
ACTIVATIONS = {"ReLU": "relu", "Tanh": "tanh", "ELU": "elu", "GELU": "gelu", "LeakyReLU": "leaky_relu", "SiLU": "silu"}
"""torch.nn activation class names in a zoo ``policy_kwargs`` -> pearl_py's ``activation_fn`` values."""
AT_DEFAULT = {"use_sde": False, "use_sde_at_warmup": False, "optimize_memory_usage": False}
"""Zoo keys accepted only at these values (SB3's defaults, which pearl_py implements)."""
UNSUPPORTED = {
    "normalize_kwargs": "normalize_kwargs is not read by pearl_py: give the mapping as normalize's value",
    "use_sde": "generalized state-dependent exploration (gSDE) is implemented for ppo, a2c and sac only",
    "sde_sample_freq": "generalized state-dependent exploration (gSDE) is implemented for ppo, a2c and sac only",
    "use_sde_at_warmup": "the warm-up with the gSDE policy is implemented for sac only (with use_sde)",
    "vec_env_wrapper": "vector-env wrappers are not applied by pearl_py",
    "callback": "SB3 callbacks do not run in pearl_py",
    "replay_buffer_class": "pearl_py has its own replay (prioritized_replay: true for PER)",
    "replay_buffer_kwargs": "pearl_py has its own replay (prioritized_replay: true for PER)",
    "optimize_memory_usage": "the memory-optimized replay is not implemented in pearl_py",
    "monitor_kwargs": "pearl_py logs episodes itself (episodes.csv)",
}
POLICY_KWARGS = ("net_arch", "activation_fn", "ortho_init", "log_std_init")


def load_zoo(path: str | Path, env_id: str, algorithm: str | None = None, sets: Sequence[str] = ()) -> RunConfig:
    """The run config of ``env_id``'s entry (:func:`entry_key`) in a zoo file; ``algorithm`` defaults to the file's
    name (dqn.yml). ``sets`` (``--set KEY=VALUE``) replace or add keys of the entry before it is validated, so a flag
    can repair an entry (``--set normalize=false``); a run setting (``seed=3``, ``eval_episodes=1``) sets the run's."""
    doc = YamlDocument.load(path)
    name = algorithm or Path(path).stem.lower()
    if name not in REGISTRY:
        raise ConfigError(f"cannot tell the algorithm from the file name {Path(path).name!r}; known: "
                          f"{', '.join(sorted(REGISTRY))} (name the file <algorithm>.yml, as the zoo does)",
                          file=doc.file)
    return read_entry(doc, env_id, name, sets)


def read_entry(zoo: YamlDocument, env_id: str, name: str, sets: Sequence[str] = ()) -> RunConfig:
    """:func:`load_zoo` of a zoo file already read, for algorithm ``name``."""
    doc = _EntryDocument(data=zoo.data, file=zoo.file, lines=zoo.lines)
    key = entry_key(doc, env_id)
    entry = doc.data[key]
    if not isinstance(entry, dict):
        raise doc.error((key,), "a zoo entry is a mapping of hyperparameters")
    settings: dict[str, Any] = {"algorithm": name, "env": env_id}
    entry = doc.apply_sets(key, entry, settings, sets)
    cls = REGISTRY[name]
    config_keys = {f for f in cls.Config.__dataclass_fields__}
    hyper: dict[str, Any] = {}
    wrapper_kwargs: dict[str, Any] = {}
    for item, value in entry.items():
        where = (key, item)
        if item == "n_timesteps":
            settings["total_steps"] = _whole_number(doc, where, value)
        elif item == "policy":
            if value != SUPPORTED_POLICY and not (value == IMAGE_POLICY and family(env_id) in IMAGE_FAMILIES):
                raise doc.error(where, f"policy {value!r} is not supported for {env_id!r}: pearl_py implements "
                                       f"{SUPPORTED_POLICY}, and {IMAGE_POLICY} for the image envs "
                                       f"({', '.join(IMAGE_FAMILIES)})")
            if "policy" in config_keys and value == SUPPORTED_POLICY:   # CnnPolicy: the CNN comes with the frames
                hyper["policy"] = value
        elif item == "policy_kwargs":
            hyper.update(policy_kwargs(doc, where, value, config_keys))
        elif item == "env_wrapper":
            wrapper_kwargs = _env_wrapper(doc, where, value, env_id)
        elif item == "train_freq":
            hyper["train_freq"] = _train_freq(doc, where, value)
        elif item == "noise_type" and item not in config_keys:
            if value != "normal":
                raise doc.error(where, f"noise_type {value!r} is not supported for {name}: pearl_py implements "
                                       "'normal' (Gaussian action noise of noise_std)")
        elif isinstance(value, str) and value.startswith("lin_") and \
                typing.get_type_hints(cls.Config).get(item) is float:   # a plain number field: no schedule
            raise doc.error(where, f"{value!r}: linear schedules of {item} are not implemented in pearl_py "
                                   "(learning_rate and ppo's clip_range take them): give a number")
        elif item in AT_DEFAULT and value == AT_DEFAULT[item]:
            continue
        elif item in UNSUPPORTED and item not in config_keys:
            raise doc.error(where, f"{UNSUPPORTED[item]}: remove the key to run without it")
        elif item not in config_keys:
            raise doc.error(where, f"{name} in pearl_py has no hyperparameter {item!r}")
        else:
            hyper[item] = value
    if wrapper_kwargs:
        given = hyper.get("env_kwargs")
        hyper["env_kwargs"] = {**given, **wrapper_kwargs} if isinstance(given, dict) else given or wrapper_kwargs
    run_settings = build(RunSettings, settings, doc=doc, path=(key,))
    hyperparameters = build(cls.Config, hyper, doc=doc, path=(key,))
    try:  # last, so that an entry for an env unknown here is still read through (benchmarks/zoo_coverage.py)
        check_env_id(run_settings.env_id)
    except EnvError as exc:
        raise doc.error((key,), str(exc)) from exc
    return RunConfig(settings=run_settings, hyperparameters=hyperparameters, source=f"{doc.file}:{key}",
                     raw={**settings, "hyperparameters": hyper})


def entry_key(doc: YamlDocument, env_id: str) -> str:
    """The entry the zoo runs ``env_id`` with: its own, else ``atari`` for an Atari id, else ``default``."""
    entries = doc.data if isinstance(doc.data, dict) else {}
    for key in (env_id, "atari" if family(env_id) == "atari" else None, "default"):
        if key in entries:
            return key
    raise ConfigError(f"no entry for env {env_id!r} (nor an 'atari' or 'default' entry); entries: "
                      f"{', '.join(entries) or 'none'}", file=doc.file)


@dataclass
class _EntryDocument(YamlDocument):
    """A zoo file whose entry may carry ``--set`` values: an error in a key a flag set names that flag."""

    flags: dict[str, str] = field(default_factory=dict)
    """Entry key -> the ``--set KEY=VALUE`` text that set it."""

    def error(self, path: KeyPath, message: str) -> ConfigError:
        if len(path) > 1 and path[1] in self.flags:
            return ConfigError(message, key=".".join(map(str, path[1:])), file=self.flags[path[1]])
        return super().error(path, message)

    def apply_sets(self, key: str, entry: dict[str, Any], settings: dict[str, Any],
                   sets: Sequence[str]) -> dict[str, Any]:
        """``entry`` with every ``KEY=VALUE`` applied in order; run settings go into ``settings``."""
        entry = dict(entry)
        run_keys = {f.name for f in dataclasses.fields(RunSettings)} - {"algorithm", "env", "total_steps"}
        for text in sets:
            name, value = parse_set(text)
            name = {"total_steps": "n_timesteps"}.get(name.removeprefix(f"{HYPER}."), name.removeprefix(f"{HYPER}."))
            if name in ("algorithm", "env"):
                raise UserError(f"--set {text}: with --zoo the algorithm is the file's and the env is --env")
            (settings if name in run_keys else entry)[name] = value
            self.flags[name] = f"--set {text}"  # an error at (entry, name) names the flag
        return entry


def _whole_number(doc: YamlDocument, where: tuple[str, str], value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or float(value) != int(value) or value < 1:
        raise doc.error(where, f"expected a whole number of env steps, got {value!r}")
    return int(value)


def _env_wrapper(doc: YamlDocument, where: tuple[str, str], value: Any, env_id: str) -> dict[str, Any]:
    """The zoo's ``env_wrapper`` (a name, ``{name: kwargs}``, or a list of these): only SB3's ``AtariWrapper`` of an
    Atari env, which is the Atari family's preprocessing; its arguments, returned, go to the env's ``env_kwargs``
    (where the family reads them). Anything else is refused by name."""
    arguments: dict[str, Any] = {}
    for wrapper in value if isinstance(value, list) else [value]:
        name, kwargs = next(iter(wrapper.items())) if isinstance(wrapper, dict) and len(wrapper) == 1 \
            else (wrapper, {})
        if name != ZOO_WRAPPER:
            raise doc.error(where, f"env wrapper {name!r} is not applied by pearl_py (it applies the Atari family's "
                                   f"{ZOO_WRAPPER} only): remove the key to run without it")
        if family(env_id) != "atari":
            raise doc.error(where, f"{ZOO_WRAPPER} is for Atari envs; {env_id!r} is not one")
        for key in kwargs or {}:
            if key not in ZOO_DEFAULTS:
                raise doc.error(where, f"AtariWrapper's {key!r} is not implemented in pearl_py (it takes "
                                       f"{', '.join(ZOO_DEFAULTS)})")
        arguments |= kwargs or {}
    return arguments


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
        return _literal(ast.parse(text.strip(), mode="eval").body)
    except (SyntaxError, ValueError) as exc:
        raise doc.error(where, f"cannot read {text!r} ({exc}); pearl_py reads dict(...) of literals and "
                               "torch.nn activation names") from None


def _literal(node: ast.AST) -> Any:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
        return {kw.arg: _literal(kw.value) for kw in node.keywords}
    if isinstance(node, ast.Dict):
        return {ast.literal_eval(k): _literal(v) for k, v in zip(node.keys, node.values)}
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(item) for item in node.elts]
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
    if name in ACTIVATIONS:  # nn.ReLU, th.nn.ReLU, torch.nn.Tanh, or ReLU imported by name
        return ACTIVATIONS[name]
    if name is not None:  # e.g. optimizer_class=RMSpropTFLike
        raise ValueError(f"unsupported name {ast.unparse(node)} (activations: "
                         f"{', '.join('nn.' + name for name in ACTIVATIONS)})")
    return ast.literal_eval(node)
