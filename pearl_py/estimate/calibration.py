"""Per-machine calibration: fitted latency models by ([GPU,] kind, variant[, env id][, threads]), cached as JSON.

Models are one-thread unless their key says otherwise (``learner_update/fused@2threads``); a
cache written before threaded calibration existed loads as it is and simply has no such keys
(the estimator then offers one thread and says why: docs/cost-models.md §2).

The cache: ``$PEARL_CACHE_DIR/calibration-<fingerprint>-<install>.json``, one per machine and install, written
atomically (docs/cost-models.md, "Cache"). ``meta["load"]`` records the load the profile ran under.

Example::

    >>> cal = Calibration.load_default()          # None until `pearl profile` has run
    >>> cal.model(LEARNER_UPDATE, "reference").predict(features)
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pearl_py.estimate.fit import FittedModel
from pearl_py.platform.kinds import device_kind
from pearl_py.protocol.kernel import (
    ADVANTAGE,
    ENV_STEP,
    INFERENCE,
    LEARNER_UPDATE,
    PARAM_SYNC,
    PRIORITY_UPDATE,
    REPLAY_INSERT,
    REPLAY_SAMPLE,
    ROLLOUT_INSERT,
)

CACHE_ENV = "PEARL_CACHE_DIR"
THREADED_VARIANTS: dict[str, tuple[str, ...]] = {LEARNER_UPDATE: ("reference", "fused")}
"""Variants calibrated at more than one thread. ``compiled`` is not: inductor fixes the thread count of its
fused loops when it compiles, so every count would cost its own compiles (4 more per count)."""
MAX_THREADS = 2
"""Most threads a threaded variant is calibrated at (and so may be planned with)."""

KINDS = (LEARNER_UPDATE, INFERENCE, REPLAY_INSERT, REPLAY_SAMPLE, PRIORITY_UPDATE, ENV_STEP,
         PARAM_SYNC, ROLLOUT_INSERT, ADVANTAGE)
"""The kernel kinds ``pearl profile`` calibrates, in its order (here, not in the profiler: a run whose calibration is
cached asks what it needs without loading the profiler)."""
CALIBRATED_ENVS = ("CartPole-v1", "Pendulum-v1")
"""The envs whose step ``pearl profile`` times beside those a run steps."""


def machine_fingerprint() -> str:
    """Short hash of host name, CPU model, usable cores and torch version."""
    import torch

    from pearl_py.platform.local import read_cpuinfo

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    text = "|".join([platform.node(), read_cpuinfo().get("model name", platform.processor()), str(cores),
                     torch.__version__])
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def install_key() -> str:
    """Short hash of this pearl_py install's folder and version: two installs, or two versions, keep apart."""
    from pearl_py.version import __version__

    package = Path(__file__).resolve().parents[1]
    return hashlib.sha1(f"{package}|{__version__}".encode()).hexdigest()[:8]


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "pearl_py")


def default_path() -> Path:
    """``calibration-<machine>-<install>.json`` in the cache folder."""
    return cache_dir() / f"calibration-{machine_fingerprint()}-{install_key()}.json"


def model_key(kind: str, variant: str, env_id: str | None = None, threads: int = 1, device: str | None = None,
              family: str | None = None) -> str:
    """``kind/variant`` or, for env_step, ``env_step/variant/<env id>``; a model at more than one
    thread (the learner update's) ends in ``@<n>threads``: ``learner_update/fused@2threads``; a model of a
    local GPU starts with its device name: ``gpu0:learner_update/cuda_graph`` (CPU models have no prefix).
    A network kernel of another algorithm family than the off-policy one (different code) has the family
    before its kind: ``on_policy/learner_update/fused``."""
    prefix = (f"{device}:" if device else "") + (f"{family}/" if family not in (None, "off_policy") else "")
    return prefix + f"{kind}/{variant}" + (f"/{env_id}" if env_id else "") + \
        (f"@{threads}threads" if threads > 1 else "")


SPREAD_KEY = "spread"
"""``meta[SPREAD_KEY][model key]``: a model's :class:`Spread` as plain data."""


@dataclass(frozen=True)
class Spread:
    """How a calibrated model's calls vary, measured by ``pearl profile`` (docs/cost-models.md, "Spread").

    ``p90_over_median``: over the model's points, the median of each point's p90 over its median pass;
    ``light_neighbour``: for a threaded variant (at every thread count it is calibrated at), the median over the
    quick grid's points of a call's mean wall time beside a light neighbour (:mod:`pearl_py.profile.neighbour`,
    ``light``) over alone; None where not measured.
    """

    p90_over_median: float
    light_neighbour: float | None = None


def network_family(kind: str, family: str | None) -> str | None:
    """The family a model of ``kind`` is kept under: a network kernel's own (each family's code differs); None for
    the other kinds (one implementation, shared)."""
    return family if kind in (LEARNER_UPDATE, INFERENCE) else None


LOOP_KEY = "loop_s"
"""``meta[LOOP_KEY]``: ``{family: {"per_step": s, "per_update": s, "per_round": s}}``, the training loop's own work
(:mod:`pearl_py.profile.loop_overhead` times it)."""
NORMALIZE_KEY = "normalize_s"
"""``meta[NORMALIZE_KEY]``: ``{"step": line, "sample": line}``, ``line`` = ``{"per_call": s, "per_value": s}``: the
``normalize`` transform's work per collector step and per off-policy sample (:mod:`pearl_py.profile.normalize_cost`)."""
IN_LOOP_KEY = "in_loop_s"
"""``meta[IN_LOOP_KEY]``: ``{family: {kind: seconds per call a kernel of that kind takes more in a loop}}``."""
PROCESS_START_KEY = "process_start_s"
"""``meta[PROCESS_START_KEY]``: the timed start of a child process, seconds (:mod:`pearl_py.profile.process_start`)."""
ROUND_TRIP_KEY = "round_trip_s"
"""``meta[ROUND_TRIP_KEY]``: the timed handshake round trip with a child process, seconds."""
DEFERRED_KEY = "deferred"
"""``meta[DEFERRED_KEY]``: ``{variant key: why}`` of the variants a run's first calibration left for a run that needs
them (``profiler.profile``'s ``skip``; keys ``model_key(kind, variant, family=network_family(kind, family))``)."""


@dataclass
class Calibration:
    """Fitted models of this machine's CPU (and its GPUs, keys ``gpuN:...``), one per ``model_key``; ``meta`` holds
    the GPUs calibrated (``gpus``), one-off setups (``setup``) and measured power (``energy``)."""

    fingerprint: str
    models: dict[str, FittedModel] = field(default_factory=dict)
    meta: dict = field(default_factory=dict)

    def model(self, kind: str, variant: str, env_id: str | None = None, threads: int = 1,
              device: str | None = None, family: str | None = None) -> FittedModel | None:
        return self.models.get(model_key(kind, variant, env_id, threads, device, family))

    def spread(self, kind: str, variant: str, threads: int = 1, family: str | None = None) -> Spread | None:
        """The spread ``pearl profile`` measured for a model (None: a calibration from before spreads were kept)."""
        entry = self.meta.get(SPREAD_KEY, {}).get(model_key(kind, variant, threads=threads, family=family))
        return Spread(entry["p90_over_median"], entry.get("light_neighbour")) if entry else None

    def to_dict(self) -> dict:
        return {"fingerprint": self.fingerprint, "meta": self.meta,
                "models": {k: m.to_dict() for k, m in sorted(self.models.items())}}

    @classmethod
    def from_dict(cls, d: dict) -> Calibration:
        return cls(d["fingerprint"], {k: FittedModel.from_dict(m) for k, m in d["models"].items()}, d.get("meta", {}))

    def save(self, path: str | Path | None = None) -> Path:
        """Write atomically; returns the path."""
        from pearl_py.version import __version__

        path = Path(path) if path else default_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        self.meta.setdefault("written", time.strftime("%Y-%m-%dT%H:%M:%S"))
        self.meta.setdefault("pearl_py", {"version": __version__, "install": str(Path(__file__).resolve().parents[1])})
        fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(self.to_dict(), f, indent=1)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    @classmethod
    def load(cls, path: str | Path) -> Calibration:
        return cls.from_dict(json.loads(Path(path).read_text()))

    @classmethod
    def load_default(cls) -> Calibration | None:
        """This machine's cached calibration, or None if `pearl profile` has not run here."""
        path = default_path()
        if not path.is_file():
            return None
        try:
            return cls.load(path)
        except (OSError, ValueError, KeyError):
            return None


def calibrated_gpu(calibration: Calibration | None, device: Any) -> str | None:
    """The model prefix of a local GPU ``device`` that ``pearl profile`` calibrated (its own name, or the name of
    the GPU of its model that was); None for any other device (a CPU, a catalogue GPU, an uncalibrated one)."""
    if calibration is None or not device.local or not device_kind(device.kind).device_runtime.calibrated_per_model:
        return None
    entry = (calibration.meta.get("gpus") or {}).get(device.name)
    if entry is None or not str(device.spec.model_name).startswith(entry["name"]):
        return None  # not calibrated, or another GPU than the one calibrated under this name
    return entry["models"]


def measured_dynamic_w(calibration: Any, kind: str, variant: str, device: str, threads: int = 1) -> float | None:
    """The dynamic power ``pearl profile`` measured for ``kind``/``variant`` on ``device`` (None: not measured;
    :mod:`pearl_py.profile.power_profile` measures it)."""
    entry = (calibration.meta.get("energy") or {}).get(device) or {}
    kernel = (entry.get("kernels") or {}).get(model_key(kind, variant, threads=threads))
    return None if kernel is None else float(kernel["dynamic_w"])
