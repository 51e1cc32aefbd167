"""SAC (Haarnoja et al. 2018): a squashed Gaussian actor, twin critics and automatic entropy tuning.

Defaults equal Stable-Baselines3's SAC (learning_rate 3e-4, batch 256, tau 0.005,
train_freq 1, net_arch [256, 256], ``ent_coef: auto``, ``target_entropy: auto`` =
-dim(A)). The semantics follow SB3's:

* the actor is pearl_py's MLP with ``2 * dim(A)`` outputs, the mean and the log std
  (SB3's ``mu`` and ``log_std`` heads as one layer; same initial distribution). The log
  std is clamped to [-20, 2]; actions are ``tanh(mean + std * N(0, 1))``, sampled with
  the reparameterization trick, and their log-probability carries the squashing
  correction ``- sum log(1 - tanh(u)^2 + 1e-6)``; greedy actions are ``tanh(mean)``;
* the critics regress on ``r + gamma (1 - done) (min(Q1_t, Q2_t)(s', a') - alpha log pi(a'|s'))``
  with ``a' ~ pi(s')``, loss ``0.5 * (MSE1 + MSE2)``; only the critics have targets;
* the actor minimises ``alpha log pi(a|s) - min(Q1, Q2)(s, a)``, ``a ~ pi(s)``;
* with ``ent_coef: auto`` (``auto_0.1``: starting at 0.1) ``log(alpha)`` is trained by
  its own Adam on ``-log(alpha) (log pi(a|s) + target_entropy)``; a number fixes alpha;
* with ``use_sde`` (gSDE, docs/api.md "gSDE") the actor is :class:`StateDependentActor`: the Gaussian before the
  tanh is gSDE's state-dependent one (the distribution PPO and A2C use,
  :class:`~pearl_py.algorithms.on_policy.distributions.StateDependentGaussian`), its mean clipped to [-2, 2]
  (SB3's ``clip_mean``); each loss draws one exploration matrix for its whole batch (SB3: one per gradient step),
  acting holds one per env (:class:`HeldExploration`); with ``use_sde_at_warmup`` the warm-up
  (``learning_starts``) acts with it too, as SB3's does, instead of with uniform random actions.

Step order: critics, actor, entropy coefficient (the order of the SAC paper's algorithm),
so the critics and the actor use the coefficient from before the step, as SB3's do.
Each loss draws its own actions: the entropy loss samples ``pi(s)`` again after the actor
step where SB3 reuses the actor loss's sample (the same distribution, one more actor forward).

Example::

    >>> algo = pearl.SAC("Pendulum-v1", learning_rate=1e-3)
    >>> [loss.name for loss in algo.losses()]
    ['critic', 'actor', 'ent_coef']
"""
from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from pearl_py.algorithms.cnn import critic, obs_mlp
from pearl_py.algorithms.losses import td_target, weighted_mean
from pearl_py.algorithms.networks import Networks
from pearl_py.algorithms.off_policy.base import Algorithm, Loss
from pearl_py.algorithms.off_policy.config import OffPolicyConfig
from pearl_py.algorithms.off_policy.learner import TensorBatch
from pearl_py.algorithms.on_policy.config import check_sde_sample_freq
from pearl_py.algorithms.on_policy.distributions import StateDependentGaussian
from pearl_py.algorithms.on_policy.schedules import Schedule
from pearl_py.config.fields import param
from pearl_py.errors import ConfigError

LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0
"""The clamp of the actor's log std (SB3's, from the original implementation)."""
SQUASH_EPS = 1e-6
"""Added inside ``log(1 - tanh(u)^2 + eps)``: keeps the correction finite at saturated actions."""
HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
CLIP_MEAN = 2.0
"""With gSDE the actor's mean is clipped to [-CLIP_MEAN, CLIP_MEAN] before the tanh (SB3's ``clip_mean``)."""
SDE_LOSS_FORMS = {"sac_critic": "sac_sde_critic", "sac_actor": "sac_sde_actor", "sac_entropy": "sac_sde_entropy"}
"""The loss forms of SAC with gSDE, which only the generic (torch) updates run."""
_AUTO = re.compile(r"auto(_(?P<initial>.+))?")


@dataclass(frozen=True)
class SACConfig(OffPolicyConfig):
    """SAC hyperparameters (rl-baselines3-zoo names; defaults are SB3's)."""

    learning_rate: Schedule = param(Schedule(3e-4), "Adam step size of actor, critics and entropy coefficient: a "
                                    "number or `lin_<number>`.", low=0.0, low_open=True)
    batch_size: int = param(256, "Transitions per gradient step.", low=1)
    tau: float = param(0.005, "Polyak coefficient of the target critics.", low=0.0, low_open=True, high=1.0)
    train_freq: int = param(1, "Vector-env steps between training rounds.", low=1)
    target_update_interval: int = param(1, "Gradient steps between soft updates of the target critics.", low=1)
    net_arch: tuple[int, ...] = param((256, 256), "Hidden layer widths of actor and critics.", low=1)
    ent_coef: float | str = param("auto", "Entropy coefficient alpha: a number (fixed), 'auto' (learnt, from "
                                  "1.0) or 'auto_<initial value>' (learnt, e.g. auto_0.1).", low=0.0)
    target_entropy: float | str = param("auto", "Entropy the learnt coefficient steers the policy to; 'auto': "
                                        "-dim(action space).")
    use_sde: bool = param(False, "Generalized state-dependent exploration (gSDE): the noise before the tanh is the "
                          "actor's last hidden features times an exploration matrix held between draws.")
    sde_sample_freq: int = param(-1, "With use_sde: draw new exploration matrices every this many steps (-1: only "
                                 "at each training round's start).", low=-1)
    log_std_init: float = param(-3.0, "With use_sde: initial log std of every exploration-matrix entry (SB3's "
                                "SAC: -3).")
    use_sde_at_warmup: bool = param(False, "With use_sde: the warm-up (learning_starts) acts with the gSDE policy "
                                    "instead of uniform random actions (SB3's meaning).")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_sde_sample_freq(self.use_sde, self.sde_sample_freq)
        if self.use_sde_at_warmup and not self.use_sde:
            raise ConfigError("use_sde_at_warmup needs use_sde: true (the warm-up acts with the gSDE policy)",
                              key="use_sde_at_warmup")
        if self.log_std_init != -3.0 and not self.use_sde:
            raise ConfigError(f"log_std_init {self.log_std_init} needs use_sde: true (without gSDE the log std is "
                              "an output of the actor)", key="log_std_init")
        if isinstance(self.ent_coef, str):
            match = _AUTO.fullmatch(self.ent_coef)
            initial = match and match.group("initial")
            if match is None or (initial is not None and not _positive_number(initial)):
                raise ConfigError(f"must be a number, 'auto' or 'auto_<initial value > 0>', got {self.ent_coef!r}",
                                  key="ent_coef")
        if isinstance(self.target_entropy, str) and self.target_entropy != "auto":
            raise ConfigError(f"must be a number or 'auto', got {self.target_entropy!r}", key="target_entropy")

    @property
    def learns_ent_coef(self) -> bool:
        return isinstance(self.ent_coef, str)

    @property
    def initial_ent_coef(self) -> float:
        """alpha at the start: the fixed number, or the 'auto' start (1.0 unless 'auto_<value>')."""
        if not isinstance(self.ent_coef, str):
            return float(self.ent_coef)
        initial = _AUTO.fullmatch(self.ent_coef).group("initial")
        return 1.0 if initial is None else float(initial)


def _positive_number(text: str) -> bool:
    try:
        return float(text) > 0.0 and math.isfinite(float(text))
    except ValueError:
        return False


class EntropyCoefficient(nn.Module):
    """The learnt ``log(alpha)`` (one parameter, as SB3's ``log_ent_coef``); calling it gives alpha."""

    def __init__(self, initial: float) -> None:
        super().__init__()
        self.log_value = nn.Parameter(torch.full((1,), math.log(initial)))

    def forward(self) -> torch.Tensor:
        return self.log_value.exp()


def mean_and_log_std(actor_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Split the actor's output into the Gaussian's mean and its clamped log std."""
    mean, log_std = actor_out.chunk(2, dim=-1)
    return mean, log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)


def squashed(gaussian_action: torch.Tensor, gaussian_log_prob: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``a = tanh(u)`` and ``log pi(a|s) = log p(u|s) - sum log(1 - a^2 + 1e-6)`` (the change of variables)."""
    action = torch.tanh(gaussian_action)
    return action, gaussian_log_prob - torch.log(1.0 - action.square() + SQUASH_EPS).sum(-1)


def squashed_sample(actor: nn.Module, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``a = tanh(mean + std * eps)``, ``eps ~ N(0, 1)`` (reparameterized: gradients reach the actor), and
    ``log pi(a|s) = sum(-eps^2 / 2 - log std - log(2 pi) / 2) - sum log(1 - a^2 + 1e-6)``; with gSDE
    (:class:`StateDependentActor`) ``u = mu + z E`` with one exploration matrix ``E`` for the batch."""
    if isinstance(actor, StateDependentActor):
        dist = actor(obs)
        gaussian_action = dist.actions(dist.draw_matrices())
        return squashed(gaussian_action, dist.log_prob(gaussian_action))
    mean, log_std = mean_and_log_std(actor(obs))
    eps = torch.randn_like(mean)
    return squashed(mean + log_std.exp() * eps, (-0.5 * eps.square() - log_std - HALF_LOG_2PI).sum(-1))


class StateDependentActor(nn.Module):
    """SAC's actor with gSDE: ``z(s)``, the MLP's last hidden features; the mean ``clip(W z(s) + b, -2, 2)``; and
    ``log_std``, one parameter per feature and action element (SB3's ``full_std``), from ``log_std_init``.
    Calling it gives the Gaussian before the tanh, a
    :class:`~pearl_py.algorithms.on_policy.distributions.StateDependentGaussian`.

    Example::

        >>> net = nn.Sequential(nn.Linear(3, 64), nn.ReLU(), nn.Linear(64, 1))
        >>> actor = StateDependentActor(net, action_dim=1, log_std_init=-3.0)
        >>> actor.log_std.shape, actor(torch.zeros(5, 3)).mean.shape
        (torch.Size([64, 1]), torch.Size([5, 1]))
    """

    def __init__(self, net: nn.Sequential, action_dim: int, log_std_init: float) -> None:
        super().__init__()
        # net: hidden layers with their activations, then a Linear (an extractor's net first: its MLP nested last)
        layers = [*net[:-1], *net[-1]] if isinstance(net[-1], nn.Sequential) else [*net]
        self.latent, self.mu = nn.Sequential(*layers[:-1]), layers[-1]
        self.log_std = nn.Parameter(torch.full((self.mu.in_features, action_dim), float(log_std_init)))

    def forward(self, obs: torch.Tensor) -> StateDependentGaussian:
        latent = self.latent(obs)
        return StateDependentGaussian(F.hardtanh(self.mu(latent), -CLIP_MEAN, CLIP_MEAN), latent, self.log_std)


class HeldExploration:
    """The exploration matrices acting holds, one per env (row), drawn as SB3's ``reset_noise`` is called: at
    the start of every training round (every ``train_freq`` vector steps from step 0, the warm-up's counted)
    and every ``sample_freq`` steps within a round (``-1``: never); rows of another count (a different share of
    envs) draw anew.

    Example::

        >>> held = HeldExploration(train_freq=4, sample_freq=-1, first_step=0)
        >>> dist = StateDependentGaussian(torch.zeros(2, 1), torch.ones(2, 3), torch.zeros(3, 1))
        >>> first = held(dist); torch.equal(held(dist), first)      # step 1: the same matrices
        True
    """

    def __init__(self, train_freq: int, sample_freq: int, first_step: int) -> None:
        self.train_freq, self.sample_freq, self.step = train_freq, sample_freq, first_step
        self.matrices: torch.Tensor | None = None

    def __call__(self, dist: StateDependentGaussian) -> torch.Tensor:
        """The matrices for this vector step, ``(rows, d, action_dim)``; the step counter moves on."""
        within = self.step % self.train_freq
        if (self.matrices is None or self.matrices.shape[0] != dist.mean.shape[0] or within == 0
                or (self.sample_freq > 0 and within % self.sample_freq == 0)):
            self.matrices = dist.draw_matrices(dist.mean.shape[0])
        self.step += 1
        return self.matrices


class SAC(Algorithm):
    """Soft actor-critic for continuous actions: stochastic tanh-Gaussian actor, twin critics and targets."""

    name = "sac"
    Config = SACConfig
    discrete_actions = False
    target_networks = ("critic",)
    acting_networks = ("actor",)
    acting_form = "squashed_gaussian"
    sde_acting_form = "squashed_gaussian_sde"

    @property
    def target_entropy(self) -> float:
        """The configured target entropy, -dim(A) for 'auto'."""
        value = self.config.target_entropy
        return -float(self.spec.action_dim) if value == "auto" else float(value)

    def build_networks(self) -> dict[str, nn.Module]:
        spec, cfg = self.spec, self.config
        actor = obs_mlp(spec, cfg.features_extractor, cfg.net_arch, (1 if cfg.use_sde else 2) * spec.action_dim)
        nets: dict[str, nn.Module] = {
            "actor": StateDependentActor(actor, spec.action_dim, cfg.log_std_init) if cfg.use_sde else actor,
            "critic": critic(spec, cfg.features_extractor, cfg.net_arch, twin=True),
        }
        if cfg.learns_ent_coef:
            nets["ent_coef"] = EntropyCoefficient(cfg.initial_ent_coef)
        return nets

    def losses(self) -> Sequence[Loss]:
        losses = [Loss("critic", trains="critic", fn=self._critic_loss, form="sac_critic"),
                  Loss("actor", trains="actor", fn=self._actor_loss, form="sac_actor")]
        if self.config.learns_ent_coef:
            losses.append(Loss("ent_coef", trains="ent_coef", fn=self._ent_coef_loss, form="sac_entropy"))
        return losses

    def ent_coef(self, nets: Networks) -> torch.Tensor | float:
        """alpha now, without gradient: the learnt one, or the fixed number."""
        if self.config.learns_ent_coef:
            return nets.online.ent_coef().detach()
        return self.config.initial_ent_coef

    def _critic_loss(self, nets: Networks, batch: TensorBatch) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.no_grad():
            next_action, next_log_prob = squashed_sample(nets.online.actor, batch.next_obs)
            next_q = torch.min(*nets.target.critic(batch.next_obs, next_action))
            target = td_target(batch, next_q - self.ent_coef(nets) * next_log_prob, self.config.gamma)
        q1, q2 = nets.online.critic(batch.obs, batch.actions)
        per_item = 0.5 * (F.mse_loss(q1, target, reduction="none") + F.mse_loss(q2, target, reduction="none"))
        return weighted_mean(per_item, batch), q1 - target

    def _actor_loss(self, nets: Networks, batch: TensorBatch) -> tuple[torch.Tensor, None]:
        action, log_prob = squashed_sample(nets.online.actor, batch.obs)
        q = torch.min(*nets.online.critic(batch.obs, action))
        return (self.ent_coef(nets) * log_prob - q).mean(), None

    def _ent_coef_loss(self, nets: Networks, batch: TensorBatch) -> tuple[torch.Tensor, None]:
        with torch.no_grad():
            _, log_prob = squashed_sample(nets.online.actor, batch.obs)
        return -(nets.online.ent_coef.log_value * (log_prob + self.target_entropy)).mean(), None

    def loss_forms(self) -> tuple[str, ...]:
        """The declared forms; with ``use_sde`` the gSDE ones, which the fused update declines."""
        forms = super().loss_forms()
        return tuple(SDE_LOSS_FORMS.get(form, form) for form in forms) if self.config.use_sde else forms

    def act(self, nets: Networks, obs: torch.Tensor, *, explore: bool, progress: float) -> torch.Tensor:
        if self.config.use_sde:
            dist = nets.online.actor(obs)
            return torch.tanh(dist.actions(self._held_exploration()(dist)) if explore else dist.mean)
        mean, log_std = mean_and_log_std(nets.online.actor(obs))
        if not explore:
            return torch.tanh(mean)
        return torch.tanh(mean + log_std.exp() * torch.randn_like(mean))

    @property
    def warmup_acts(self) -> bool:
        return self.config.use_sde_at_warmup

    def _held_exploration(self) -> HeldExploration:
        """This process's :class:`HeldExploration`, made at its first exploring step (after the warm-up's
        ``ceil(random_warmup_steps / n_envs)`` vector steps of random actions, none with ``use_sde_at_warmup``)."""
        if getattr(self, "_held", None) is None:
            cfg = self.config
            first = -(-self.random_warmup_steps // cfg.n_envs)
            self._held = HeldExploration(cfg.train_freq, cfg.sde_sample_freq, first)
        return self._held
