"""The GPU model against published timings of small RL updates on an H100: modelled vs published per env step.

Published: LeanRL's README (github.com/pytorch-labs/LeanRL, commit 8dbb633, "Speed-ups" table: SAC and TD3 on
HalfCheetah-v4, one H100, models on the GPU, simulation on the CPU), frames per second of CleanRL's eager
script, LeanRL's torch.compile script, and LeanRL's compile + CUDA graphs script; one env step = one learner
update (SAC: critic, actor and temperature; TD3: critic, the actor every 2nd), batch 256, [256, 256] MLPs.
Their seconds per step are ``1 / fps``.

Modelled: the serial loop's step on the `h100-node` platform (devices/platforms.yaml): env step (CPU) +
inference + replay insert + replay sample + learner update (GPU), per call as `pearl plan` models them for the
zoo configs sac_pendulum / td3_pendulum with TD3's net_arch set to LeanRL's [256, 256]. Pendulum's 3 inputs
stand for HalfCheetah's 17 (a launch-bound update does not see the difference); the env step is the catalogue's
assumed MuJoCo-class step. Variants: eager = ``reference``, compile = ``compiled`` (roofline variant; pearl_py
offers it on CPUs only), compile + CUDA graphs = pearl_py's ``cuda_graph`` (which does not fuse: its graph
replays the eager kernels). Two op counts: the rough estimate from the layers (``NetworkWorkload.layer_ops``,
what `pearl plan` used for off-policy learners before the derivation counted them) and the operators the
update dispatches as the derivation counts them on the CPU (``dispatched_ops``, what `pearl plan` uses).
Nothing was fitted on these figures.

The last table is what `pearl plan` predicts for the update itself on `h100-node` per variant it offers on the
GPU, against the bounds the published steps put on that update: an eager update is part of CleanRL's eager
step (upper bound) and is no faster than LeanRL's fused compile + CUDA graphs step (lower bound); pearl_py's
unfused ``cuda_graph`` lies between the same two. The eager update is also set against the published eager
step less the modelled rest of that step (env step, inference, replay), its nearest published figure.

Usage::

    /work/venv/bin/python benchmarks/gpu_published.py        # deterministic (no timing), ~20 s
"""
from __future__ import annotations

import dataclasses
import statistics

from pearl_py.config.yaml_source import YamlDocument
from pearl_py.estimate import roofline
from pearl_py.estimate.estimator import Estimator
from pearl_py.estimate.features import workload_features
from pearl_py.platform import Platform
from pearl_py.run_config import parse_config

SOURCE = "LeanRL@8dbb633 README.md, Speed-ups table (H100)"
PUBLISHED_FPS = {   # algorithm: (CleanRL eager, LeanRL compile, LeanRL compile + cudagraphs)
    "SAC": (127, 255, 725),
    "TD3": (272, 272, 936),
}
VARIANTS = ("reference", "compiled", "cuda_graph")
LABELS = ("eager (CleanRL)", "compile (LeanRL)", "compile+cudagraphs (LeanRL) vs cuda_graph")
CONFIGS = {"SAC": "examples/configs/sac_pendulum.yaml", "TD3": "examples/configs/td3_pendulum.yaml"}


def _algorithm(name: str):
    doc = YamlDocument.load(CONFIGS[name])
    doc.data["hyperparameters"]["net_arch"] = [256, 256]     # LeanRL's networks (SAC's zoo config has them already)
    return parse_config(doc).make_algorithm()


def step_seconds(protocol, variant: str, layer_estimate: bool = False) -> dict[str, float]:
    """Modelled seconds of one serial env step on h100-node, per kernel (``layer_estimate``: the update's ops
    estimated from its layers instead of counted)."""
    platform = Platform.load("h100-node")
    cpu, gpu = platform.device("cpu"), platform.device("gpu")
    est, params = Estimator(), roofline.RooflineParams.load()
    workload = protocol.kernel("learner_update").workload
    if layer_estimate:
        workload = dataclasses.replace(workload, dispatched_ops=None)
    out = {k: est.cost(protocol.kernel(k), gpu).latency_s for k in ("inference", "replay_insert", "replay_sample")}
    out["env_step"] = est.cost(protocol.kernel("env_step"), cpu).latency_s
    out["learner_update"] = roofline.network_latency(workload_features(workload), gpu.spec, params, variant,
                                                     "learner_update", "accelerator")[0]
    return out


def rows(algorithms: tuple[str, ...] = tuple(PUBLISHED_FPS)) -> list[dict]:
    """Per algorithm and variant: published and modelled seconds per step (both op counts) and the errors."""
    out = []
    for name in algorithms:
        protocol = _algorithm(name).protocol()
        update = protocol.kernel("learner_update").workload
        for variant, label, published_fps in zip(VARIANTS, LABELS, PUBLISHED_FPS[name]):
            published = 1.0 / published_fps
            by_estimate = sum(step_seconds(protocol, variant, layer_estimate=True).values())
            by_count = step_seconds(protocol, variant)
            modelled = sum(by_count.values())
            out.append({"algorithm": name, "variant": variant, "label": label, "published_s": published,
                        "published_fps": published_fps, "ops_estimated": update.layer_ops,
                        "ops_observed": update.n_ops, "modelled_estimated_s": by_estimate,
                        "modelled_observed_s": modelled, "update_observed_s": by_count["learner_update"],
                        "error_estimated": by_estimate / published - 1, "error_observed": modelled / published - 1})
    return out


PLAN_VARIANTS = ("reference", "cuda_graph")
"""The learner update's variants `pearl plan` offers on a catalogue GPU."""


def plan_updates(name: str = "SAC") -> list[dict]:
    """Per GPU variant `pearl plan` offers: the update's modelled seconds on h100-node (``Estimator.cost``, as the
    plan costs it) and the published bounds on it (seconds): ``low`` LeanRL's fused compile + CUDA graphs step,
    ``high`` CleanRL's eager step; ``nearest`` the eager step less the modelled rest of the step (eager only)."""
    protocol = _algorithm(name).protocol()
    gpu = Platform.load("h100-node").device("gpu")
    eager_fps, _, graph_fps = PUBLISHED_FPS[name]
    rest = sum(s for kind, s in step_seconds(protocol, "reference").items() if kind != "learner_update")
    out = []
    for variant in PLAN_VARIANTS:
        modelled = Estimator().cost(protocol.kernel("learner_update"), gpu, variant).latency_s
        nearest = 1.0 / eager_fps - rest if variant == "reference" else None
        out.append({"algorithm": name, "variant": variant, "modelled_s": modelled, "low_s": 1.0 / graph_fps,
                    "high_s": 1.0 / eager_fps, "nearest_s": nearest})
    return out


def markdown(table: list[dict]) -> str:
    head = ("| algorithm, variant | published ms/step (fps) | modelled ms/step, ops estimated | modelled ms/step, "
            "ops counted | of which the update |\n|---|---|---|---|---|\n")
    body = "".join(
        f"| {r['algorithm']}, {r['label']} | {r['published_s'] * 1e3:.2f} ({r['published_fps']}) | "
        f"{r['modelled_estimated_s'] * 1e3:.2f} ({r['error_estimated']:+.0%}; {r['ops_estimated']:.0f} ops) | "
        f"{r['modelled_observed_s'] * 1e3:.2f} ({r['error_observed']:+.0%}; {r['ops_observed']:.0f} ops) | "
        f"{r['update_observed_s'] * 1e3:.2f} |\n" for r in table)
    median = (statistics.median(abs(r["error_estimated"]) for r in table),
              statistics.median(abs(r["error_observed"]) for r in table))
    return head + body + f"| median abs error | | {median[0]:.0%} | {median[1]:.0%} | |\n"


def plan_markdown(table: list[dict]) -> str:
    head = ("| algorithm, variant | `pearl plan` update, ms (modelled) | published bounds, ms | "
            "published eager step less the modelled rest, ms |\n|---|---|---|---|\n")
    return head + "".join(
        f"| {r['algorithm']}, {r['variant']} | {r['modelled_s'] * 1e3:.2f} | {r['low_s'] * 1e3:.2f}-"
        f"{r['high_s'] * 1e3:.2f} | "
        + (f"{r['nearest_s'] * 1e3:.2f} ({r['modelled_s'] / r['nearest_s'] - 1:+.0%})" if r["nearest_s"] else "")
        + " |\n" for r in table)


def main() -> None:
    print(f"published: {SOURCE}; modelled: pearl_py's GPU model on h100-node\n")
    print(markdown(rows()))
    print(plan_markdown([r for name in PUBLISHED_FPS for r in plan_updates(name)]))


if __name__ == "__main__":
    main()
