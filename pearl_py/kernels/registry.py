"""The registry of kernel implementation variants, per kernel kind and device class.

A :class:`Variant` is one implementation of a kernel kind on a device class ("cpu"
or "gpu"): a name (what ``Plan.placements[kernel].variant`` carries), a builder, an
availability check (can this machine run it) and what it supports: the ``forms`` it
implements (a hand-written kernel implements some losses or acting rules, named by the
algorithm's :attr:`Loss.form` / ``acting_form``; None: any, as a generic variant) and the
layer types it handles. :meth:`Variant.supports` reads a kernel's declared workload, so the
planner knows which variants an algorithm can use without building anything. Cost models
calibrate every available variant; the optimizer picks one per kernel together with its
device; the runtime builds it by name. A kernel kind without registered variants has one
implementation, the runtime's own, named "reference".

Example::

    >>> [v.name for v in REGISTRY.variants(KernelKind.LEARNER_UPDATE, "cpu")]
    ['reference', 'compiled']
    >>> update = build(KernelKind.LEARNER_UPDATE, "compiled", learner)
    >>> REGISTRY.get(KernelKind.LEARNER_UPDATE, "cuda_graph", "gpu").available()
    (False, 'CUDA is not available here (torch.cuda.is_available() is False)')
    >>> REGISTRY.get(KernelKind.LEARNER_UPDATE, "fused", "cpu").supports(sac.protocol().kernel(LEARNER_UPDATE))
    "implements the forms dqn_td | ddpg_critic+dpg_actor; this kernel computes sac_critic+sac_actor+sac_entropy"
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from pearl_py.platform.runtimes import runtime_of
from pearl_py.protocol.kernel import Kernel, KernelKind
from pearl_py.protocol.workload import EnvWorkload, NetworkWorkload

DEVICE_CLASSES = ("cpu", "gpu")


def always_available() -> tuple[bool, str]:
    return True, ""


def compile_available() -> tuple[bool, str]:
    """Whether ``torch.compile`` with its CPU backend (inductor, which builds C++) can run here."""
    import os
    import shutil
    import sys

    if sys.version_info >= (3, 13):   # below, torch's check always passes (it refuses newer or free-threaded Pythons)
        from torch._dynamo import eval_frame   # whose import costs about a second of CPU, in every run that plans

        try:
            eval_frame.check_if_dynamo_supported()
        except Exception as exc:  # torch raises RuntimeError with the reason (Python version, platform)
            return False, f"torch.compile cannot run here: {exc}"
    # inductor's compilers (torch._inductor.config.cpp.cxx, whose package imports torch._dynamo): $CXX or g++
    if not any(c and shutil.which(c) for c in (os.environ.get("CXX"), "g++", "c++", "clang++")):
        return False, "torch.compile's CPU backend (inductor) needs a C++ compiler; none found (g++, clang++, $CXX)"
    return True, ""


class KernelUnavailable(RuntimeError):
    """A variant was asked for where it cannot run (the message says why)."""


@dataclass(frozen=True)
class Variant:
    """One implementation of a kernel kind on a device class.

    ``builder`` makes the callable: for ``learner_update`` ``builder(learner) ->
    (TensorBatch -> UpdateResult)``; for ``inference`` ``builder(algorithm, nets) ->
    (obs, *, explore, progress) -> actions``.
    """

    name: str
    kind: KernelKind
    device_class: str
    builder: Callable[..., Any]
    description: str
    requires: Callable[[], tuple[bool, str]] = always_available
    fallback: str | None = None
    """A variant of the same kind and device class that :func:`build` builds instead when this one's
    builder refuses the given arguments (raises :class:`KernelUnavailable`: an algorithm it does not
    implement), with a warning saying why. ``available()`` cannot see the algorithm, the builder can."""
    setup_cached: bool = False
    """Its one-off setup (a compile) is cached on disk for every shape (numba compiles per argument
    type, not shape), so once ``pearl profile`` has built it a run pays only the warm setup;
    False for a compile per static shape (inductor), which a run at a new shape pays cold."""
    forms: tuple[tuple[str, ...], ...] | None = None
    """The exact form tuples it implements (a network kernel's ``workload.forms``: the losses of one
    update in order, or the acting form); None: any (a generic variant)."""
    layers: frozenset[type] | None = None
    """Layer types it handles in a network kernel's workload (None: any)."""
    needs_layers: frozenset[type] | None = None
    """Layer types a network kernel must have for this variant to change anything (channels-last: a
    convolution); None: none needed."""
    env_support: Callable[[str], str | None] | None = None
    """An ``env_step`` variant's answer for an env id: None when it can step that env, else why not; None: any."""
    cores: int = 1
    """Cores one call holds on a CPU beside the caller's own thread's: an env backend's worker threads (EnvPool's
    ``num_threads``). The cost model charges a replica of it this many cores (``Option.cores``)."""

    def __post_init__(self) -> None:
        if self.device_class not in DEVICE_CLASSES:
            raise ValueError(f"variant {self.name!r}: device class must be one of {DEVICE_CLASSES}, "
                             f"got {self.device_class!r}")

    def available(self) -> tuple[bool, str]:
        """``(True, "")``, or ``(False, reason)`` when this machine cannot run the variant."""
        return self.requires()

    def supports(self, kernel: Kernel) -> str | None:
        """None when this variant can run ``kernel`` as the algorithm declared it, else why not."""
        workload = kernel.workload
        if isinstance(workload, EnvWorkload) and self.env_support is not None:
            return self.env_support(workload.env_id)
        if not isinstance(workload, NetworkWorkload):
            return None
        if self.forms is not None and tuple(workload.forms) not in self.forms:
            known = " | ".join("+".join(f) for f in self.forms)
            return (f"implements the forms {known}; this kernel computes {'+'.join(workload.forms) or 'nothing declared'}"
                    " (use the reference variant)")
        if self.layers is not None:
            other = sorted({type(layer).__name__ for layer in workload.layers if type(layer) not in self.layers})
            if other:
                return f"handles {', '.join(sorted(t.__name__ for t in self.layers))} layers, not {', '.join(other)}"
        if self.needs_layers is not None and not any(type(layer) in self.needs_layers for layer in workload.layers):
            return (f"changes only {', '.join(sorted(t.__name__ for t in self.needs_layers))} layers; this kernel "
                    "has none")
        return None

    def build(self, *args: Any, **kwargs: Any) -> Any:
        ok, reason = self.available()
        if not ok:
            raise KernelUnavailable(f"{self.kind.value} variant {self.name!r} ({self.device_class}): {reason}")
        return self.builder(*args, **kwargs)


class Registry:
    """Variants by ``(kind, device class, name)``, in registration order."""

    def __init__(self) -> None:
        self._variants: dict[tuple[KernelKind, str, str], Variant] = {}

    def register(self, variant: Variant) -> Variant:
        key = (variant.kind, variant.device_class, variant.name)
        if key in self._variants:
            raise ValueError(f"{variant.kind.value} variant {variant.name!r} ({variant.device_class}) "
                             f"is already registered")
        self._variants[key] = variant
        return variant

    def variants(self, kind: KernelKind | str, device_class: str | None = None) -> list[Variant]:
        """The variants of ``kind`` (on ``device_class`` when given), available or not."""
        kind = KernelKind(kind)
        return [v for (k, d, _), v in self._variants.items()
                if k == kind and (device_class is None or d == device_class)]

    def get(self, kind: KernelKind | str, name: str, device_class: str | None = None) -> Variant:
        """The variant ``name`` of ``kind``; without ``device_class``, the first registered under that name."""
        for variant in self.variants(kind, device_class):
            if variant.name == name:
                return variant
        known = sorted({v.name for v in self.variants(kind, device_class)})
        where = f" on {device_class}" if device_class else ""
        raise KeyError(f"no {KernelKind(kind).value} variant {name!r}{where}; known: {known}")


def device_class(device: torch.device | str) -> str:
    """The device class whose variants build for torch device ``device`` (its runtime's: "cpu" for the CPU, "gpu"
    for CUDA devices)."""
    return runtime_of(device).variant_class


REGISTRY = Registry()
"""The variants pearl_py ships for the off-policy family (``pearl_py.kernels`` registers them on import)."""

FAMILY_REGISTRIES: dict[str, Registry] = {"off_policy": REGISTRY}
"""Each algorithm family's variants: their builders take that family's learner and networks
(``pearl_py.kernels.on_policy`` registers the on-policy family's)."""


def registry_of(family: str) -> Registry:
    """The variants of algorithm family ``family`` (KeyError naming the known families)."""
    try:
        return FAMILY_REGISTRIES[family]
    except KeyError:
        raise KeyError(f"no kernel variants for algorithm family {family!r}; known: {sorted(FAMILY_REGISTRIES)}") \
            from None


def call_cores(kind: KernelKind | str, variant: str, family: str = "off_policy", device_class: str = "cpu") -> int:
    """Cores one call of ``variant`` holds (:attr:`Variant.cores`: an env backend's worker threads); 1 for a
    variant not registered there (the reference of a kind without entries)."""
    try:
        return registry_of(family).get(kind, variant, device_class).cores
    except (KeyError, ValueError):
        return 1


def build(kind: KernelKind | str, variant: str, *args: Any, device_class: str | None = None,
          registry: Registry = REGISTRY, **kwargs: Any) -> Any:
    """Build variant ``variant`` of ``kind`` with the builder's arguments (see :class:`Variant`).

    A variant whose builder refuses the arguments (``KernelUnavailable``) and names a
    ``fallback`` is replaced by the fallback, with a ``RuntimeWarning`` giving the reason.
    """
    chosen = registry.get(kind, variant, device_class)
    try:
        return chosen.build(*args, **kwargs)
    except KernelUnavailable as exc:
        if chosen.fallback is None or not chosen.available()[0]:
            raise
        import warnings

        warnings.warn(f"{exc}; running the {chosen.fallback!r} variant instead", RuntimeWarning, stacklevel=2)
        return registry.get(kind, chosen.fallback, chosen.device_class).build(*args, **kwargs)


def build_learner_update(learner: Any, variant: str) -> Any:
    """The ``learner_update`` variant ``variant`` on ``learner``'s memory and device: what every off-policy executor
    (serial, parallel, Ray) steps."""
    return build(KernelKind.LEARNER_UPDATE, variant, learner, device_class=device_class(learner.device))
