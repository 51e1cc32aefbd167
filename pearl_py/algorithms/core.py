"""``BaseAlgorithm``: what every algorithm family shares — an env, a validated config, a protocol.

A family (off-policy: :class:`pearl_py.algorithms.off_policy.base.OffPolicyAlgorithm`;
on-policy: :class:`pearl_py.algorithms.on_policy.base.OnPolicyAlgorithm`) subclasses it and
owns its protocol derivation (the kernels, workloads, rates and edges of its training loop),
its schedule and its storage; a concrete algorithm subclasses a family and defines networks,
losses and act. Nothing here names a device.

Example::

    >>> algo = pearl.DQN("CartPole-v1", batch_size=64)      # a BaseAlgorithm of the off-policy family
    >>> algo.family, algo.config.batch_size, algo.spec.obs_dim
    ('off_policy', 64, 4)
    >>> graph = algo.protocol()                             # the family's derivation
"""
from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from pearl_py.envs import EnvError, EnvSpec
from pearl_py.envs.normalize import ObsRewardNormalizer
from pearl_py.algorithms.networks import Networks
from pearl_py.config.fields import rebuild

if TYPE_CHECKING:
    import numpy as np
    from torch import nn

    from pearl_py.protocol import ProtocolGraph


class ActionNoise(Protocol):
    """``noise() -> (envs, action_dim)`` the next noise of every env; ``noise.reset(ended)``: the envs whose
    episode ended start again."""

    def __call__(self) -> np.ndarray: ...

    def reset(self, ended: np.ndarray) -> None: ...


class BaseAlgorithm(abc.ABC):
    """An algorithm bound to a gymnasium env id and a frozen config dataclass of its hyperparameters.

    ``Config``: the config dataclass (fields built with :func:`pearl_py.param`); keyword
    hyperparameters are validated like a config file's. ``discrete_actions``: True or False when
    the algorithm needs one kind of action space, None when it handles both.
    """

    name: ClassVar[str]
    family: ClassVar[str]
    """``off_policy`` or ``on_policy``: which derivation, schedule, storage and executors the algorithm uses."""
    Config: ClassVar[type]
    discrete_actions: ClassVar[bool | None] = None
    target_networks: ClassVar[tuple[str, ...]] = ()
    """Names of the networks that get a frozen target copy (the off-policy family's critics); none by default."""
    acting_networks: ClassVar[tuple[str, ...]] = ()
    """Names of the networks an actor needs to act (what param_sync moves); a family that declares none acts
    with all of them (memory admission counts them all)."""
    sde_acting_form: ClassVar[str | None] = None
    """The acting form with gSDE (``use_sde``), which only the generic (torch) variants run; None: no gSDE."""
    initial_state: dict[str, Any] | None = None
    """Network tensors a learner starts from instead of fresh ones (``pearl.train(init_from=RUN_DIR)`` sets it
    from a saved policy, checked to fit); None: fresh networks."""
    obs_transform: ObsRewardNormalizer | None
    """The config's ``normalize`` transform, with the run's statistics (training updates them in place; a saved
    policy or a checkpoint restores them); None without normalization."""

    def __init__(self, env: str, config: Any = None, **hyperparameters: Any) -> None:
        if config is not None and not isinstance(config, self.Config):
            raise TypeError(f"{type(self).__name__} takes a {self.Config.__name__}, got {type(config).__name__}")
        self.env_id = env
        self.config = rebuild(self.Config, config, hyperparameters)
        self.spec = EnvSpec.from_env_id(env, getattr(self.config, "frame_stack", None),
                                        getattr(self.config, "env_kwargs", None))
        if hasattr(self.config, "features_extractor"):     # an extractor that cannot read these observations
            from pearl_py.algorithms.cnn import resolve_extractor

            resolve_extractor(self.spec, self.config.features_extractor)
        self.obs_transform = self._obs_transform()
        if self.discrete_actions is not None and self.spec.discrete != self.discrete_actions:
            kind = "discrete" if self.discrete_actions else "continuous"
            raise EnvError(f"env {env!r}: {self.name} needs {kind} actions, "
                           f"the env has {'discrete' if self.spec.discrete else 'continuous'} ones")

    def _obs_transform(self) -> ObsRewardNormalizer | None:
        """The run's observation/reward normalization (the config's ``normalize``), or None."""
        normalize = getattr(self.config, "normalize", None)
        if normalize is None or not normalize.enabled:
            return None
        if normalize.norm_obs and self.spec.obs_dtype == "uint8":
            raise EnvError(f"env {self.env_id!r}: normalize with norm_obs does not apply to uint8 image frames "
                           "(they are scaled by 1/255 in the network); set norm_obs: false")
        return ObsRewardNormalizer(normalize, self.spec.obs_shape, self.config.gamma)

    def normalized_values(self, rows: int) -> int | None:
        """The observation values the ``normalize`` transform touches in ``rows`` observations (the cost model's
        measure of it, :mod:`pearl_py.profile.normalize_cost`): all of them with ``norm_obs``, none with
        ``norm_reward`` only; None without normalize."""
        if self.obs_transform is None:
            return None
        return rows * self.spec.obs_dim if self.obs_transform.settings.norm_obs else 0

    @abc.abstractmethod
    def protocol(self, serialized: bool = False) -> ProtocolGraph:
        """The kernels of this algorithm with their workloads, rates and data edges (the family's derivation)."""

    @abc.abstractmethod
    def build_networks(self) -> dict[str, nn.Module]:
        """Fresh trainable networks by name (shapes from ``self.spec``, widths from ``self.config``)."""

    def fresh_networks(self) -> Networks:
        """Fresh networks as a learner builds them, with the target copies of :attr:`target_networks`.

        Example: ``algo.fresh_networks().load_state_dict(saved)`` rebuilds a trained policy's modules.
        """
        return Networks(self.build_networks(), self.target_networks)

    def action_noise(self, seed: int, envs: range) -> ActionNoise | None:
        """Noise with per-env state that the collector adds to the actions of envs ``envs`` (global indices) and
        resets at their episode ends (DDPG/TD3's Ornstein-Uhlenbeck noise); None (the default): none."""
        return None

    def declared_acting_form(self) -> str:
        """``acting_form``, or ``"custom"`` when ``act`` was overridden below the class that declared it; with
        ``use_sde``, :attr:`sde_acting_form` in place of ``acting_form`` (the fused kernels decline it)."""
        form = declared_form(type(self), "acting_form", "act")
        return self.sde_acting_form if self.sde_acting_form and self.config.use_sde and form == self.acting_form \
            else form

    def __repr__(self) -> str:
        return f"{type(self).__name__}(env={self.env_id!r}, config={self.config})"


def defining_class(cls: type, attribute: str) -> type | None:
    """The class of ``cls``'s MRO whose body defines ``attribute`` (None if none does)."""
    return next((c for c in cls.__mro__ if attribute in c.__dict__), None)


def declared_form(cls: type, form: str, method: str) -> str:
    """``cls``'s ``form`` attribute, or ``"custom"`` when ``method`` is defined below the class declaring it."""
    declared, defined = defining_class(cls, form), defining_class(cls, method)
    return "custom" if defined is not declared and issubclass(defined, declared) else getattr(cls, form)
