"""What the ``fused`` CPU kernels implement: loss forms, acting forms and network structures, declared.

A fused kernel is the math of one algorithm family written by hand (``fused_cpu``,
``fused_twin``, ``inference``). It may run an algorithm only when the algorithm declares
exactly that math (:meth:`OffPolicyAlgorithm.loss_forms`, ``declared_acting_form``) on
networks the kernel can read: pearl_py's MLPs (``Linear``/``ReLU`` alternations, optionally
a final ``Tanh``), ``StateActionValue``/``TwinStateActionValue`` over such an MLP, and SAC's
``EntropyCoefficient``. Nothing here looks at an algorithm's class: a user's algorithm
that declares ``"ddpg_critic"``/``"dpg_actor"`` on those networks gets the fused DDPG
step, and a subclass of DQN with its own loss (form ``"custom"``) does not.

A :class:`LearnerRecipe` is one fused learner step: the forms of the losses in order,
what each loss trains, which networks exist and which have targets. The variants declare
:data:`UPDATE_FORMS` / :data:`ACT_FORMS` (``Variant.forms``: what the planner checks against
a kernel's recorded workload); the builders check the rest on the built learner
(:func:`learner_problem`, :func:`acting_problem`) and fall back to the reference with the
reason.

Example::

    >>> recipe_of(pearl.TD3("Pendulum-v1")).name
    'td3'
    >>> learner_problem(algo, dict(learner.nets.online), tuple(learner.nets.target))   # None: supported
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

MLP, TANH_MLP, STATE_ACTION, TWIN_STATE_ACTION, ENTROPY = (
    "mlp", "tanh_mlp", "state_action_mlp", "twin_state_action_mlp", "entropy_coefficient")
"""Network structures the fused kernels read (see :func:`structure_problem`)."""


@dataclass(frozen=True)
class LearnerRecipe:
    """One fused learner step: loss forms in order (with what each trains), networks and targets.

    ``delayed`` names the forms that may run every k-th step (``Loss.every``); all others run
    every step. ``networks``: (name, structure) in the kernels' buffer order.
    """

    name: str
    losses: tuple[tuple[str, str], ...]
    networks: tuple[tuple[str, str], ...]
    targets: tuple[str, ...]
    delayed: tuple[str, ...] = ()

    @property
    def forms(self) -> tuple[str, ...]:
        return tuple(form for form, _ in self.losses)

    @property
    def order(self) -> tuple[str, ...]:
        """Networks in the fused kernels' flat buffers (and layer table) order."""
        return tuple(name for name, _ in self.networks)


RECIPES = (
    LearnerRecipe("dqn", (("dqn_td", "q"),), (("q", MLP),), ("q",)),
    LearnerRecipe("ddpg", (("ddpg_critic", "critic"), ("dpg_actor", "actor")),
                  (("actor", TANH_MLP), ("critic", STATE_ACTION)), ("actor", "critic")),
    LearnerRecipe("td3", (("td3_critic", "critic"), ("td3_actor", "actor")),
                  (("actor", TANH_MLP), ("critic", TWIN_STATE_ACTION)), ("actor", "critic"), delayed=("td3_actor",)),
    LearnerRecipe("sac", (("sac_critic", "critic"), ("sac_actor", "actor"), ("sac_entropy", "ent_coef")),
                  (("actor", MLP), ("critic", TWIN_STATE_ACTION), ("ent_coef", ENTROPY)), ("critic",)),
    LearnerRecipe("sac", (("sac_critic", "critic"), ("sac_actor", "actor")),
                  (("actor", MLP), ("critic", TWIN_STATE_ACTION)), ("critic",)),
)
"""Every learner step the ``fused`` variant implements (SAC with a learnt or a fixed coefficient)."""

ACTING = {"epsilon_greedy_q": ("q", MLP), "deterministic_actor_noise": ("actor", TANH_MLP),
          "squashed_gaussian": ("actor", MLP)}
"""Acting forms the ``fused`` inference implements, with the acting network and its structure."""


UPDATE_FORMS = tuple(dict.fromkeys(recipe.forms for recipe in RECIPES))
"""Every loss-form tuple the ``fused`` learner update implements (``Variant.forms``)."""
ACT_FORMS = tuple((form,) for form in ACTING)
"""Every acting form the ``fused`` inference implements (``Variant.forms``)."""


def recipe_of(algorithm) -> LearnerRecipe | None:
    """The recipe whose loss forms and trained networks ``algorithm`` declares, if any."""
    declared = tuple(zip(algorithm.loss_forms(), (loss.trains for loss in algorithm.losses())))
    return next((r for r in RECIPES if r.losses == declared), None)


def learner_problem(algorithm, nets: dict[str, nn.Module], targets: tuple[str, ...]) -> str | None:
    """None if the ``fused`` learner update implements ``algorithm`` on its online ``nets`` (and target
    network names ``targets``); else why not."""
    recipe = recipe_of(algorithm)
    if recipe is None:
        known = " | ".join("+".join(forms) for forms in UPDATE_FORMS)
        declared = ", ".join(f"{loss.name} ({form}, trains {loss.trains})"
                             for loss, form in zip(algorithm.losses(), algorithm.loss_forms()))
        return (f"the fused learner update implements the loss forms {known}; {algorithm.name} declares {declared} "
                "(use the reference or compiled variant)")
    for loss, form in zip(algorithm.losses(), recipe.forms):
        if loss.every != 1 and form not in recipe.delayed:
            return f"loss {loss.name!r} ({form}) runs every {loss.every} steps; the fused step runs it every step"
    if sorted(targets) != sorted(recipe.targets):
        return (f"{recipe.name}'s fused step keeps targets of {', '.join(recipe.targets)}; {algorithm.name} has "
                f"targets of {', '.join(targets) or 'none'}")
    return networks_problem(algorithm, nets, recipe.networks)


def acting_problem(algorithm, nets: dict[str, nn.Module]) -> str | None:
    """None if the ``fused`` inference implements ``algorithm``'s declared act on ``nets``; else why not."""
    form = algorithm.declared_acting_form()
    if form not in ACTING:
        return (f"the fused inference implements the acting forms {', '.join(ACTING)}, not {algorithm.name}'s "
                f"{form} (use the reference variant)")
    return networks_problem(algorithm, nets, (ACTING[form],), exact=False)


def networks_problem(algorithm, nets: dict[str, nn.Module], wanted: tuple[tuple[str, str], ...],
                     exact: bool = True) -> str | None:
    """Why ``nets`` do not have the ``wanted`` (name, structure) networks at the env's sizes, or None.
    ``exact``: no other network may exist."""
    names = {name for name, _ in wanted}
    if exact and set(nets) != names:
        return f"the fused step needs exactly the networks {', '.join(sorted(names))}, {algorithm.name} has " \
               f"{', '.join(sorted(nets))}"
    spec = algorithm.spec
    for name, structure in wanted:
        if name not in nets:
            return f"{algorithm.name} has no network {name!r}"
        out = 2 * spec.action_dim if (name == "actor" and structure == MLP) else spec.action_dim
        problem = structure_problem(nets[name], structure, spec.obs_dim, spec.action_dim, out)
        if problem is not None:
            return f"{name}: {problem}"
    return None


def structure_problem(net: nn.Module, structure: str, obs_dim: int, action_dim: int, n_out: int) -> str | None:
    """Why ``net`` is not a network of ``structure`` mapping the env's observations (and actions) to ``n_out``
    values, or None."""
    from pearl_py.algorithms.networks import StateActionValue, TwinStateActionValue
    from pearl_py.algorithms.sac import EntropyCoefficient

    if structure == ENTROPY:
        if type(net) is not EntropyCoefficient:
            return f"{type(net).__name__} is not an EntropyCoefficient"
        return None if net.log_value.shape == (1,) else "the entropy coefficient must be one value"
    if structure in (STATE_ACTION, TWIN_STATE_ACTION):
        cls = StateActionValue if structure == STATE_ACTION else TwinStateActionValue
        if type(net) is not cls:
            return f"{type(net).__name__} is not a {cls.__name__}"
        heads = [net] if structure == STATE_ACTION else [net.q1, net.q2]
        for head in heads:
            layers = mlp_layers(head.net, out_tanh=False)
            if isinstance(layers, str):
                return layers
            if layers[0].in_features != obs_dim + action_dim or layers[-1].out_features != 1:
                return "the critic's input/output sizes do not match the env"
        return None
    layers = mlp_layers(net, out_tanh=structure == TANH_MLP)
    if isinstance(layers, str):
        return layers
    if layers[0].in_features != obs_dim or layers[-1].out_features != n_out:
        return f"input/output sizes {layers[0].in_features}/{layers[-1].out_features} do not match the env's " \
               f"{obs_dim}/{n_out}"
    return None


def mlp_layers(net: nn.Module, out_tanh: bool) -> list[nn.Linear] | str:
    """The Linear layers of ``Linear, ReLU, ..., Linear[, Tanh]``, or why ``net`` is not such an MLP."""
    if type(net) is not nn.Sequential:
        return f"{type(net).__name__} is not an nn.Sequential MLP"
    mods = list(net)
    if out_tanh:
        if not mods or type(mods[-1]) is not nn.Tanh:
            return "the actor does not end in nn.Tanh"
        mods = mods[:-1]
    linears = mods[0::2]
    if not mods or len(mods) % 2 == 0 or any(type(m) is not nn.Linear or m.bias is None for m in linears) \
            or any(type(m) is not nn.ReLU for m in mods[1::2]):
        return "only Linear(bias)/ReLU alternations (pearl_py's mlp) are supported"
    for a, b in zip(linears, linears[1:]):
        if a.out_features != b.in_features:
            return "inconsistent layer widths"
    for p in net.parameters():
        if p.dtype != torch.float32 or p.device.type != "cpu" or not p.is_contiguous():
            return "parameters must be contiguous float32 on the CPU"
    if list(net.buffers()):
        return "networks with buffers are not supported"
    return linears
