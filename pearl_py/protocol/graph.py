"""ProtocolGraph: the kernels of a training loop and the bytes that flow between them.

Built from an algorithm (its family's derivation), never by hand::

    >>> graph = pearl.DQN("CartPole-v1").protocol()
    >>> graph.kernel(LEARNER_UPDATE).rate
    0.5
    >>> graph.bytes_per_call(REPLAY_SAMPLE, LEARNER_UPDATE)
    10752
"""
from __future__ import annotations

from collections.abc import Iterator

from pearl_py.protocol.kernel import INFERENCE, Kernel, KernelKind


class ProtocolGraph:
    """A directed graph whose nodes are kernels and whose edges carry ``bytes`` per call.

    Each node is its :class:`Kernel`, by name; each edge ``(a, b)`` holds ``bytes`` (per call of ``a``) and
    ``rate`` (transfers per collected transition). Kernels iterate in the order they were added, edges by their
    source's order, then in the order they were added (plain dicts: no graph library on a run's import path).
    """

    def __init__(self, serialized: bool = False, overlap: float = 1.0, warmup_steps: int = 0,
                 synchronous: bool = False, rollout_size: int = 0, warmup_acts: bool = False) -> None:
        self._kernels: dict[str, Kernel] = {}
        self._out: dict[str, dict[str, tuple[int, float]]] = {}
        """Each kernel's edges by destination: ``(bytes per call, rate)``."""
        self.serialized = serialized
        """True when the protocol runs its stages one after another (serial executor)."""
        self.synchronous = synchronous
        """True when collection and learning alternate, collection spread over actors (an on-policy run:
        every actor collects its share of a rollout, then the learner learns on it; docs/optimizer.md)."""
        self.rollout_size = rollout_size
        """Transitions per rollout of an on-policy protocol (runs collect whole rollouts); 0 otherwise."""
        self.overlap = overlap
        """Fraction of a training round actors may collect alongside training (the policy-lag bound's)."""
        self.warmup_steps = warmup_steps
        """Transitions collected before learning starts (``learning_starts``): only the kinds declared ``warmup``
        (the env step and the replay insert) run then, with random actions (:mod:`pearl_py.optimize.whole_run`)."""
        self.warmup_acts = warmup_acts
        """True when the warm-up acts with the policy instead (SAC's ``use_sde_at_warmup``): its inference runs too."""

    def runs_in_warmup(self, kernel: Kernel) -> bool:
        """Whether ``kernel`` runs in the warm-up: a kind declared ``warmup``, and the inference where it acts."""
        return kernel.kind.warmup or (self.warmup_acts and kernel.kind == INFERENCE)

    def add_kernel(self, kernel: Kernel) -> None:
        if kernel.name in self._kernels:
            raise ValueError(f"kernel {kernel.name!r} is already in the protocol")
        self._kernels[kernel.name] = kernel
        self._out[kernel.name] = {}

    def connect(self, src: str, dst: str, bytes_per_call: int) -> None:
        """Data flows from ``src`` to ``dst``: ``bytes_per_call`` each time ``src`` runs."""
        for name in (src, dst):
            if name not in self._kernels:
                raise KeyError(f"unknown kernel {name!r} in protocol edge {src} -> {dst}")
        self._out[src][dst] = (int(bytes_per_call), self.kernel(src).rate)

    @property
    def mode(self) -> str:
        """``serialized`` (stages in series), ``synchronous`` (collection, then learning) or ``overlapped``."""
        return "serialized" if self.serialized else "synchronous" if self.synchronous else "overlapped"

    def kernel(self, name: str) -> Kernel:
        try:
            return self._kernels[name]
        except KeyError:
            raise KeyError(f"no kernel named {name!r}; the protocol has {sorted(self._kernels)}") from None

    def kernels(self) -> Iterator[Kernel]:
        yield from self._kernels.values()

    def by_kind(self, kind: KernelKind) -> list[Kernel]:
        return [k for k in self.kernels() if k.kind == kind]

    def edges(self) -> Iterator[tuple[str, str, int, float]]:
        """``(src, dst, bytes_per_call, calls_per_transition)`` for every edge."""
        for src, out in self._out.items():
            for dst, (nbytes, rate) in out.items():
                yield src, dst, nbytes, rate

    def bytes_per_call(self, src: str, dst: str) -> int:
        return self._out[src][dst][0]

    def __len__(self) -> int:
        return len(self._kernels)

    def __contains__(self, name: object) -> bool:
        return name in self._kernels

    def to_dict(self) -> dict:
        """Plain data for reports: kernels with kind and rate, edges with bytes."""
        return {
            "serialized": self.serialized,
            "mode": self.mode,
            "rollout_size": self.rollout_size,
            "overlap": self.overlap,
            "warmup_steps": self.warmup_steps,
            "warmup_acts": self.warmup_acts,
            "kernels": [
                {"name": k.name, "kind": k.kind.value, "rate": k.rate, "replicable": k.replicable}
                for k in self.kernels()
            ],
            "edges": [
                {"src": s, "dst": d, "bytes_per_call": b, "rate": r} for s, d, b, r in self.edges()
            ],
        }
