"""The trained policy a run leaves in its folder, and :func:`load` that brings it back ready to act.

A run writes ``policy.pt`` (plain tensors, read with ``torch.load(weights_only=True)``: loading never runs code
from it) and ``policy.json`` (the :class:`PolicyManifest`); with ``eval_freq`` also ``best_policy.pt`` and
``best_policy.json`` (docs/api.md, "Load a trained policy"). A folder or file that is not such a pair (missing, foreign,
corrupted, written for other networks) is a :class:`~pearl_py.errors.UserError` naming the file.

Example::

    >>> policy = pearl.load("runs/dqn")                      # the run folder, policy.pt or policy.json
    >>> policy.algorithm.name, policy.manifest.env
    ('dqn', 'CartPole-v1')
    >>> action, _ = policy.predict(obs)                      # SB3's (action, state); greedy, in the env's space
    >>> action
    1
    >>> policy.evaluate(episodes=10, seed=10_000)            # greedy returns, as the run's final evaluation
    [500.0, 500.0, ...]
"""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from pearl_py.algorithms import REGISTRY, BaseAlgorithm, Networks
from pearl_py.config.fields import build
from pearl_py.errors import UserError
from pearl_py.runtime.evaluation import evaluate
from pearl_py.runtime.policy_files import FORMAT, PolicyManifest, policy_file_names

class TrainedPolicy:
    """A trained algorithm with its networks, on the CPU, ready to act (``predict``) or be evaluated."""

    def __init__(self, algorithm: BaseAlgorithm, nets: Networks, manifest: PolicyManifest) -> None:
        self.algorithm = algorithm
        self.nets = nets.eval()
        self.manifest = manifest
        self.device = torch.device("cpu")

    def predict(self, observation: np.ndarray, state: Any = None, episode_start: np.ndarray | None = None,
                deterministic: bool = True) -> tuple[np.ndarray, None]:
        """``(actions, None)`` for one observation or a batch (first axis), the actions in the env's action space:
        Stable-Baselines3's ``predict`` (``action, _ = policy.predict(obs)``); ``state`` and ``episode_start``
        are accepted for its signature and unused (pearl_py's networks hold no recurrent state).

        ``deterministic``: the greedy action (as evaluation; SB3's default is ``False``); otherwise the exploring
        one (epsilon-greedy or noise at the end of training for the off-policy family, a sample of the policy for
        the on-policy family). An observation of another shape than the env's is a ``ValueError`` naming both.
        """
        batch = np.asarray(observation, dtype=np.float32)
        expected = tuple(self.algorithm.spec.obs_shape)
        single = batch.shape == expected
        if not single and batch.shape[1:] != expected:
            raise ValueError(f"predict: an observation of shape {batch.shape}, but {self.manifest.env} observations "
                             f"have shape {expected} (one) or (n, {', '.join(map(str, expected))}) (a batch of n)")
        batch = batch[None] if single else batch
        if self.algorithm.obs_transform is not None:     # the saved statistics, frozen
            batch = self.algorithm.obs_transform.obs(batch)
        act = self.algorithm.greedy_actions if deterministic else self.algorithm.sampled_actions
        actions = act(self.nets, batch, self.device)
        env_actions = self.algorithm.spec.to_env_action(actions)
        return (env_actions[0] if single else env_actions), None

    def evaluate(self, episodes: int = 10, seed: int = 0, env_factory: Callable[[], gym.Env] | None = None
                 ) -> list[float]:
        """Returns of ``episodes`` greedy episodes, episode ``i`` reset with ``seed + i`` (the run's final
        evaluation used ``seed = run seed + 10_000``)."""
        return evaluate(self.algorithm, self.nets, self.device, episodes, seed, env_factory=env_factory)

    def __repr__(self) -> str:
        m = self.manifest
        return (f"TrainedPolicy({m.algorithm} on {m.env}, {m.env_steps} env steps, seed {m.seed}, "
                f"pearl_py {m.pearl_py_version})")


def policy_files(path: str | Path, best: bool = False) -> tuple[Path, Path]:
    """``(policy.pt, policy.json)`` of a run folder, or of the folder holding the given file; with ``best``
    ``(best_policy.pt, best_policy.json)``."""
    path = Path(path)
    folder = path.parent if path.name in (*policy_file_names(False), *policy_file_names(True)) else path
    names = policy_file_names(best)
    weights, manifest = folder / names[0], folder / names[1]
    for file in (manifest, weights):
        if not file.is_file():
            holds = (f"a run with periodic evaluations (--eval-freq) holds {names[0]} and {names[1]}" if best
                     else f"a run folder holds {names[0]} and {names[1]}")
            raise UserError(f"{file}: no saved {'best ' if best else ''}policy there ({holds})")
    return weights, manifest


def read_manifest(file: Path) -> PolicyManifest:
    try:
        data = json.loads(file.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{file}: not a pearl_py policy manifest ({exc})") from None
    return PolicyManifest.from_dict(data, file)


def read_weights(file: Path) -> dict[str, torch.Tensor]:
    """The network state dict of a ``policy.pt``: plain tensors only (``weights_only=True``)."""
    try:
        data = torch.load(file, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many kinds (UnpicklingError, RuntimeError, EOFError, ...)
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"{file}: not a pearl_py saved policy ({reason})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("nets"), dict):
        raise UserError(f"{file}: not a pearl_py saved policy of format {FORMAT}")
    if not all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in data["nets"].items()):
        raise UserError(f"{file}: not a pearl_py saved policy (its networks are not tensors by name)")
    return data["nets"]


def load_networks(nets: Networks, state: dict[str, torch.Tensor], file: Path) -> None:
    """Load ``state`` into ``nets``; a state for other networks (names or shapes) is a UserError naming ``file``."""
    try:
        nets.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        detail = " ".join(str(exc).split())
        raise UserError(f"{file}: its networks do not fit this algorithm's ({detail[:300]})") from None


def algorithm_of(manifest: PolicyManifest, file: Path) -> BaseAlgorithm:
    """The algorithm a manifest names, with its saved hyperparameters."""
    cls = REGISTRY.get(manifest.algorithm)
    if cls is None:
        raise UserError(f"{file}: algorithm {manifest.algorithm!r} is not registered here (known: "
                        f"{', '.join(sorted(REGISTRY))}); import the module that defines it and pearl.register it")
    try:
        return cls(manifest.env, build(cls.Config, manifest.config))
    except UserError as exc:
        raise UserError(f"{file}: {exc}") from None


def load(path: str | Path, best: bool = False) -> TrainedPolicy:
    """The trained policy saved in a run folder (or given by its ``policy.pt``/``policy.json``), ready to act;
    with ``best``, the best evaluated one (``best_policy.pt``)."""
    weights, manifest_file = policy_files(path, best)
    manifest = read_manifest(manifest_file)
    algorithm = algorithm_of(manifest, manifest_file)
    nets = algorithm.fresh_networks()
    load_networks(nets, read_weights(weights), weights)
    if algorithm.obs_transform is not None:
        if manifest.obs_normalization is None:
            raise UserError(f"{manifest_file}: its config normalizes observations but it holds no obs_normalization")
        load_statistics(algorithm, manifest.obs_normalization, manifest_file)
    return TrainedPolicy(algorithm, nets, manifest)


def load_statistics(algorithm: BaseAlgorithm, state: Any, file: Path) -> None:
    """A manifest's ``obs_normalization`` into ``algorithm.obs_transform``; a UserError naming ``file`` if damaged."""
    try:
        algorithm.obs_transform.load(state)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise UserError(f"{file}: obs_normalization is damaged ({type(exc).__name__}: {exc})") from None


def initial_state(path: str | Path, algorithm: BaseAlgorithm) -> dict[str, torch.Tensor]:
    """The saved networks of the run at ``path``, checked to fit ``algorithm`` (``--init-from``): same
    algorithm and env, networks of the same names and shapes. Training then starts from them, and from the saved
    ``normalize`` statistics where both normalize (loaded into ``algorithm.obs_transform``)."""
    weights, manifest_file = policy_files(path)
    manifest = read_manifest(manifest_file)
    if (manifest.algorithm, manifest.env) != (algorithm.name, algorithm.env_id):
        raise UserError(f"{manifest_file}: the saved policy is {manifest.algorithm} on {manifest.env}; this run is "
                        f"{algorithm.name} on {algorithm.env_id}")
    state = read_weights(weights)
    load_networks(algorithm.fresh_networks(), state, weights)
    if algorithm.obs_transform is not None and manifest.obs_normalization is not None:
        load_statistics(algorithm, manifest.obs_normalization, manifest_file)
    return state
