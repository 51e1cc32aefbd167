"""Spec-only cost models for CPUs and GPUs that are not calibrated on this machine.

A CPU core: ``latency = host + max(flops / (peak x efficiency), bytes / bandwidth)`` with
``host = (fixed_ops + ops x s_variant) x dispatch`` (Williams, Waterman & Patterson, CACM 2009, plus a
per-op dispatch term). A GPU runs behind its host: ``latency = max(host, device)``, where the device
side is a floor per kernel it runs and the roofline at the bandwidth share small kernels reach,
``device = ops x k_variant x t_kernel + max(flops / (peak x efficiency), bytes / (bandwidth x f_variant))``
(docs/cost-models.md §3, "GPU launch floor"). A core's ``ops`` is the feature its calibrations read (``ops``), a
GPU's the operators the derivation counted (``launches``). Parameters come from the catalogue and
``estimators/roofline.yaml``; its ``variants`` section gives each implementation variant its dispatch
multiplier ``s_variant``, the ops it still pays at full launch cost per call (``fixed_ops``) and its
one-off setup (``setup_s``); ``gpu.variants`` gives each variant's kernels per op ``k_variant`` and
achieved-bandwidth fraction ``f_variant``.

Example::

    >>> from pearl_py.platform import Platform
    >>> gpu = Platform.load("dgx-a100-node").device("gpu0")
    >>> params = RooflineParams.load()
    >>> round(network_latency(features, gpu.spec, params, "reference") * 1e6)
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pearl_py.platform.spec import CpuSpec, GpuSpec, check_keys
from pearl_py.platform.yamlsrc import CatalogueYaml
from pearl_py.resources import estimators_dir
from pearl_py.protocol.kernel import REPLAY_SAMPLE

_NORMALIZE = ("normalize_step_us", "normalize_step_value_ns", "normalize_sample_us", "normalize_sample_value_ns")
"""The ``normalize`` transform's assumed work per call and per observation value (the estimator's normalize_work)."""
_SCHEMA = {
    "variants": None,
    "cpu": ["gemm_efficiency", "conv_efficiency", "numpy_call_us", "replay_calls", "env_step_us", "env_step_default_us",
            "env_reference_ghz", "vector_env_us", "scan_calls", "process_start_s", "loop_per_step_us",
            "loop_per_update_us", "loop_per_round_us", "round_trip_us", *_NORMALIZE],
    "gpu": ["gemm_efficiency", "conv_efficiency", "replay_calls", "prioritized_scan_reads", "scan_step_ns",
            "kernel_floor_us", "variants"],
}
_RUN_SECONDS = ("process_start_s", "loop_per_step_us", "loop_per_update_us", "loop_per_round_us", "round_trip_us",
                *_NORMALIZE)
"""The ``cpu`` keys the whole run's costs read besides the kernels' (a process start, the loop's work with the
``normalize`` transform's, a handshake)."""


@dataclass(frozen=True)
class RooflineParams:
    """Parameters of ``estimators/roofline.yaml``."""

    variants: dict
    cpu: dict
    gpu: dict

    @classmethod
    def load(cls, path: str | Path | None = None) -> RooflineParams:
        doc = CatalogueYaml.load(path or estimators_dir() / "roofline.yaml")
        check_keys(doc.data, list(_SCHEMA), list(_SCHEMA), (), doc.error)
        for section, keys in _SCHEMA.items():
            if keys is not None:
                check_keys(doc.data[section], keys, keys, (section,), doc.error)
        for key in _RUN_SECONDS:   # the whole run's assumed figures: plain non-negative numbers
            value = doc.data["cpu"][key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
                raise doc.error(("cpu", key), f"must be a number >= 0, got {value!r}")
        return cls(doc.data["variants"], doc.data["cpu"], doc.data["gpu"])

    def variant(self, variant: str, kind: str | None = None) -> dict[str, float]:
        """``{"dispatch_scale", "fixed_ops", "setup_s"}`` of a variant (a bare number is its dispatch scale).

        An entry ``<kind>/<variant>`` (e.g. ``learner_update/fused``) overrides ``<variant>`` for that kind;
        a ``<variant>`` entry with ``kinds`` applies to those kinds only (variants of different kinds may
        share a name). ``KeyError`` when there is no entry for the variant (of that kind).
        """
        entry = self.variants.get(f"{kind}/{variant}") if kind else None
        if entry is None:
            try:
                entry = self.variants[variant]
            except KeyError:
                raise KeyError(f"unknown kernel variant {variant!r}; estimators/roofline.yaml knows "
                               f"{sorted(self.variants)}") from None
            if isinstance(entry, dict) and kind and kind not in entry.get("kinds", [kind]):
                raise KeyError(f"estimators/roofline.yaml has no modelled cost for {kind} variant {variant!r} "
                               f"(its {variant!r} entry is for {', '.join(entry['kinds'])})")
        if not isinstance(entry, dict):
            entry = {"dispatch_scale": entry}
        return {"dispatch_scale": float(entry.get("dispatch_scale", 1.0)),
                "fixed_ops": float(entry.get("fixed_ops", 0.0)), "setup_s": float(entry.get("setup_s", 0.0))}

    def dispatch_scale(self, variant: str, kind: str | None = None) -> float:
        return self.variant(variant, kind)["dispatch_scale"]

    def setup_s(self, variant: str, kind: str | None = None) -> float:
        """One-off seconds a variant pays before its first call (a compile, a graph capture)."""
        return self.variant(variant, kind)["setup_s"]


def _machine(spec: CpuSpec | GpuSpec, params: RooflineParams, machine: str) -> tuple[float, float, float, dict]:
    """``(peak flop/s, bandwidth bytes/s, seconds per dispatch, params section)`` of a roofline machine: ``core`` (one
    CPU core, its share of DRAM bandwidth, section ``cpu``) or ``accelerator`` (a GPU-like device, section ``gpu``),
    as a device kind names it (``pearl_py.platform.kinds``)."""
    if machine == "core":
        return spec.core_peak_flops, spec.core_bandwidth_bytes, spec.dispatch_overhead_us * 1e-6, params.cpu
    return spec.fp32_tflops * 1e12, spec.mem_bandwidth_gbs * 1e9, spec.launch_overhead_us * 1e-6, params.gpu


def network_latency(features: dict[str, float], spec: CpuSpec | GpuSpec, params: RooflineParams,
                    variant: str, kind: str | None = None, machine: str = "core") -> tuple[float, dict[str, float]]:
    """Seconds of a network call (inference or learner update) and its terms.

    Convolution FLOPs (``conv_flops``) run at the machine's ``conv_efficiency``, the rest at its ``gemm_efficiency``.
    """
    v = params.variant(variant, kind)
    peak, bandwidth, per_dispatch, section = _machine(spec, params, machine)
    # a CPU core reads the op count its calibrations read (``ops``), a GPU the observed one (``launches``)
    ops = features["ops" if machine == "core" else "launches"]
    host = (v["fixed_ops"] + ops * v["dispatch_scale"]) * per_dispatch
    conv = features.get("conv_flops", 0.0)
    compute = ((features["flops"] - conv) / (peak * section["gemm_efficiency"])
               + conv / (peak * section["conv_efficiency"]))
    memory = features["bytes"] / bandwidth
    if machine == "core":
        return host + max(compute, memory), {"dispatch": host, "compute": compute, "memory": memory}
    g = gpu_variant(params, variant)
    achieved = memory / g["bandwidth_fraction"]
    device = ops * g["kernels_per_op"] * section["kernel_floor_us"] * 1e-6 + max(compute, achieved)
    latency = max(host, device)
    # "dispatch": what the call spends beyond the roofline at peak (launches, the per-kernel floor, the bandwidth its
    # small kernels leave unused): it draws no dynamic power (docs/cost-models.md §6)
    return latency, {"dispatch": latency - max(compute, memory), "host": host, "device": device,
                     "compute": compute, "memory": achieved}


def gpu_variant(params: RooflineParams, variant: str) -> dict[str, float]:
    """``{"kernels_per_op", "bandwidth_fraction"}`` of a variant on a GPU (``estimators/roofline.yaml``,
    ``gpu.variants``); a variant without an entry runs as eager PyTorch (``reference``)."""
    return params.gpu["variants"].get(variant, params.gpu["variants"]["reference"])


def layer_latency(flops: float, nbytes: float, dispatches: float, conv: bool, spec: CpuSpec | GpuSpec,
                  params: RooflineParams, machine: str = "core") -> float:
    """Seconds of one layer's share of a call, as the roofline sees it alone: its dispatches plus the larger of
    its compute (at the conv or GEMM efficiency) and its memory traffic."""
    peak, bandwidth, per_dispatch, section = _machine(spec, params, machine)
    efficiency = section["conv_efficiency" if conv else "gemm_efficiency"]
    return dispatches * per_dispatch + max(flops / (peak * efficiency), nbytes / bandwidth)


def replay_latency(kind: str, features: dict[str, float], spec: CpuSpec | GpuSpec,
                   params: RooflineParams, variant: str, machine: str = "core") -> tuple[float, dict[str, float]]:
    """Seconds of a replay call: per-call dispatches, one DRAM miss per node visited, bytes moved (a CPU core: the
    numpy ``ReplayBuffer``); a GPU: the ``TorchReplayBuffer``'s torch calls, one launch each, plus bytes moved
    (a prioritized sample's pass over the priorities included)."""
    scale = params.dispatch_scale(variant, kind)
    if machine == "core":
        calls = params.cpu["replay_calls"][kind] + 2 * features["levels"]
        dispatch = calls * params.cpu["numpy_call_us"] * 1e-6 * scale
        tree = features["tree_work"] * spec.dram_latency_ns * 1e-9
        memory = 2 * features["bytes"] / spec.core_bandwidth_bytes
        return dispatch + tree + memory, {"dispatch": dispatch, "tree": tree, "memory": memory}
    # the replay on a GPU is a TorchReplayBuffer: its torch calls per call, each a launch (counted, see the yaml); a
    # prioritized sample also passes over every item's float64 priority (prefix sums and minimum, torch_tree.py)
    launches = params.gpu["replay_calls"]["prioritized" if features["prioritized"] else "uniform"][kind]
    dispatch = launches * spec.launch_overhead_us * 1e-6 * scale
    scanned = features["prioritized"] and kind == REPLAY_SAMPLE
    scan = params.gpu["prioritized_scan_reads"] * 8 * features["capacity"] if scanned else 0.0
    memory = (2 * features["bytes"] + scan) / (spec.mem_bandwidth_gbs * 1e9)
    return dispatch + memory, {"dispatch": dispatch, "memory": memory}


def env_latency(env_id: str, n_envs: int, spec: CpuSpec, params: RooflineParams) -> tuple[float, dict[str, float]]:
    """Seconds of one vector-env step on a CPU core: per-env step cost scaled by clock, plus bookkeeping."""
    per_env_us = params.cpu["env_step_us"].get(env_id, params.cpu["env_step_default_us"])
    per_env = per_env_us * 1e-6 * params.cpu["env_reference_ghz"] / spec.base_ghz
    overhead = params.cpu["vector_env_us"] * 1e-6
    return overhead + n_envs * per_env, {"env": n_envs * per_env, "dispatch": overhead}


def scan_latency(features: dict[str, float], spec: CpuSpec | GpuSpec, params: RooflineParams,
                 machine: str = "core") -> tuple[float, dict[str, float]]:
    """Seconds of the advantage scan (GAE(lambda) over a rollout): dispatches, the bound of its element work, and
    on an accelerator one dependent step per rollout step (each env's carried advantage runs through the steps in
    order; the envs run in parallel)."""
    if machine == "core":
        dispatch = params.cpu["scan_calls"] * params.cpu["numpy_call_us"] * 1e-6
        compute = features["flops"] / (spec.core_peak_flops * params.cpu["gemm_efficiency"])
        memory = features["bytes"] / spec.core_bandwidth_bytes
        return dispatch + max(compute, memory), {"dispatch": dispatch, "compute": compute, "memory": memory}
    dispatch = spec.launch_overhead_us * 1e-6
    chain = features["steps"] * params.gpu["scan_step_ns"] * 1e-9
    memory = features["bytes"] / (spec.mem_bandwidth_gbs * 1e9)
    return dispatch + max(chain, memory), {"dispatch": dispatch, "chain": chain, "memory": memory}


def copy_latency(nbytes: float, spec: CpuSpec | GpuSpec, machine: str = "core") -> tuple[float, dict[str, float]]:
    """Seconds to copy ``nbytes`` within the device's memory (read + write)."""
    if machine == "core":
        bandwidth, fixed = spec.core_bandwidth_bytes, spec.dispatch_overhead_us * 1e-6
    else:
        bandwidth, fixed = spec.mem_bandwidth_gbs * 1e9, spec.launch_overhead_us * 1e-6
    memory = 2 * nbytes / bandwidth
    return fixed + memory, {"dispatch": fixed, "memory": memory}
