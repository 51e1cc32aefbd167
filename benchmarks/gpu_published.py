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
replays the eager kernels). Two op counts: the derivation's estimate from the layers (what `pearl plan` uses
for off-policy learners today) and the operators the update really dispatches (counted here on the CPU with
``pearl_py.algorithms.recording.count_dispatched``). Nothing was fitted on these figures.

Usage::

    /work/venv/bin/python benchmarks/gpu_published.py        # deterministic (no timing), ~20 s
"""
from __future__ import annotations

import dataclasses
import math
import statistics

from pearl_py.algorithms.off_policy.derive import _probe_learner, _random_batch
from pearl_py.algorithms.recording import count_dispatched
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


def observed_ops(algo) -> float:
    """Operators one learner update dispatches, averaged over the losses' period (TD3's delayed actor)."""
    learner = _probe_learner(algo)
    period = math.lcm(*(loss.every for loss in learner.losses))
    batch = _random_batch(algo, algo.config.batch_size)
    learner.update(batch)                                    # the optimizers' state exists before counting
    return count_dispatched(lambda: [learner.update(batch) for _ in range(period)]) / period


def step_seconds(protocol, variant: str, ops: float | None = None) -> dict[str, float]:
    """Modelled seconds of one serial env step on h100-node, per kernel (``ops``: the update's op count)."""
    platform = Platform.load("h100-node")
    cpu, gpu = platform.device("cpu"), platform.device("gpu")
    est, params = Estimator(), roofline.RooflineParams.load()
    update = protocol.kernel("learner_update")
    workload = update.workload if ops is None else dataclasses.replace(update.workload, dispatched_ops=ops)
    out = {k: est.cost(protocol.kernel(k), gpu).latency_s for k in ("inference", "replay_insert", "replay_sample")}
    out["env_step"] = est.cost(protocol.kernel("env_step"), cpu).latency_s
    out["learner_update"] = roofline.network_latency(workload_features(workload), gpu.spec, params, variant,
                                                     "learner_update", "accelerator")[0]
    return out


def rows(algorithms: tuple[str, ...] = tuple(PUBLISHED_FPS)) -> list[dict]:
    """Per algorithm and variant: published and modelled seconds per step (both op counts) and the errors."""
    out = []
    for name in algorithms:
        algo = _algorithm(name)
        protocol = algo.protocol()
        estimated = protocol.kernel("learner_update").workload.n_ops
        observed = observed_ops(algo)
        for variant, label, published_fps in zip(VARIANTS, LABELS, PUBLISHED_FPS[name]):
            published = 1.0 / published_fps
            by_estimate = sum(step_seconds(protocol, variant).values())
            by_count = step_seconds(protocol, variant, observed)
            modelled = sum(by_count.values())
            out.append({"algorithm": name, "variant": variant, "label": label, "published_s": published,
                        "published_fps": published_fps, "ops_estimated": estimated, "ops_observed": observed,
                        "modelled_estimated_s": by_estimate, "modelled_observed_s": modelled,
                        "update_observed_s": by_count["learner_update"],
                        "error_estimated": by_estimate / published - 1, "error_observed": modelled / published - 1})
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


def main() -> None:
    print(f"published: {SOURCE}; modelled: pearl_py's GPU model on h100-node\n")
    print(markdown(rows()))


if __name__ == "__main__":
    main()
