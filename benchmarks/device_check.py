"""The device check of issue 28: one command that proves the GPU and many-core half on a lent GPU machine.

Steps (each a subprocess of this script with its own time limit and log; run b first, since the
others plan with the calibration it writes):

  a  smoke       every GPU kernel kind timed by CUDA events and by the synchronized host clock (agreeing within
                 5%), then ``benchmarks/gpu_smoke.py``: DQN, DDPG and PPO planned onto the GPU, run, executed_on checked
  b  profile     ``pearl profile --quick`` (CPU, then GPU): the GPU models' held-out error, the launch and dispatch
                 floor per call
  c  devices     ``pearl devices``: which energy counters read (NVML on the GPU)
  d  run_auto    ``pearl run --auto`` of the MinAtar Breakout CNN DQN and the SAC zoo config: plan, per-kernel and
                 whole-run predicted against measured, joules per device and samples per joule
  e  sb3         the same two configs with Stable-Baselines3 on the same GPU (``benchmarks/vs_sb3.py``)
  f  actors      PPO CartPole and the zoo DQN with 1, 2, 4, 8, 14 actor processes: samples/s measured against the
                 model's prediction for the same plan
  g  replay      the torch replay on the GPU (uniform, prioritized): sample and priority update per call against
                 the CPU buffer

Everything lands in ``--out`` as three files (the lent machine's ``$OUT`` takes at most 8): ``device_check.json``
(every step: status ``ok``/``failed``/``timeout``/``skipped``, seconds, reason, figures), ``device_check.log``
(every step's log, in order) and ``runs.tar.gz`` (the runs' folders and the calibration). One table is printed.
Nothing is fetched from the network; the calibration goes to a fresh ``PEARL_CACHE_DIR`` inside the work folder
(``--cache DIR`` keeps it there instead, for a rerun of some steps with ``--only``).

``--dry-run`` runs every step on a CPU-only machine in under 2 minutes: tiny step counts, the CPU standing in for
CUDA (figures then compare the CPU with itself), MinAtar replaced by random 4x10x10 frames when ``minatar`` is
not installed, the SB3 step skipped with its reason when ``stable_baselines3`` is not. ``tests/benchmarks/test_device_check.py``
calls it, so the script cannot rot between lent machines.

    python benchmarks/device_check.py --out $OUT                 # on the GPU machine (docs/gpu.md: how to run)
    python benchmarks/device_check.py --dry-run --out /tmp/dc    # anywhere
    python benchmarks/device_check.py --out $OUT --cache /tmp/pc --only a g   # again, only what failed
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BUDGET_S = 500.0
"""The whole check's seconds on the GPU machine (8:20, start-up of each step included: one call of 540 s within a
15-minute lease leaves about 5 minutes to rerun a failed step on the warm machine)."""
AGREEMENT = 0.05
"""Events and the synchronized host clock agree when they differ by at most this fraction."""


@dataclass(frozen=True)
class Context:
    """What a step reads: the work folder, the dry mode and the torch device standing for the GPU."""

    work: Path
    dry: bool

    @property
    def device(self) -> str:
        return "cpu" if self.dry else "cuda:0"

    @property
    def gpu(self) -> str:
        """The platform's name of the device under test."""
        return "cpu" if self.dry else "gpu0"

    def run(self, *argv: str, timeout: float | None = None) -> int:
        """A command of its own (its output into this step's log); its exit status."""
        print(f"$ {' '.join(argv)}", flush=True)
        return subprocess.run(list(argv), cwd=ROOT, timeout=timeout).returncode

    def pearl(self, *argv: str) -> int:
        return self.run(sys.executable, "-m", "pearl_py.cli", *argv)


Outcome = dict[str, Any]
"""A step's answer: ``status`` (ok/failed/skipped), ``summary`` (one line) and its figures."""


def synchronized_seconds(call: Callable[[], object], device: str, calls: int) -> float:
    """Host seconds per call, the device synchronized before the first and after every call."""
    import torch

    sync = (lambda: torch.cuda.synchronize(device)) if device != "cpu" else (lambda: None)
    for _ in range(3):   # warm: first calls fill caches and allocators
        call()
    total = 0.0
    for _ in range(calls):
        sync()
        start = time.perf_counter()
        call()
        sync()
        total += time.perf_counter() - start
    return total / calls


def event_seconds(call: Callable[[], object], device: str, calls: int) -> float:
    """Seconds per call as the runtime times it: ``KernelTimer`` on the device (CUDA events; the host clock on
    the CPU)."""
    import torch

    from pearl_py.runtime.timing import KernelTimer

    for _ in range(3):
        call()
    timer = KernelTimer({"k": torch.device(device)})
    for _ in range(calls):
        with timer("k"):
            call()
    return timer.summary()["k"]["mean_s"]


def clock_points(ctx: Context) -> list[tuple[str, str, Any]]:
    """(kind, variant, point) of every kernel kind that runs on a GPU."""
    from pearl_py.profile.microbench import BenchPoint
    from pearl_py.protocol.kernel import (
        INFERENCE,
        LEARNER_UPDATE,
        PARAM_SYNC,
        PRIORITY_UPDATE,
        REPLAY_INSERT,
        REPLAY_SAMPLE,
    )

    d, capacity = ctx.device, 10_000 if ctx.dry else 100_000
    points = [(LEARNER_UPDATE, "reference", BenchPoint(LEARNER_UPDATE, algo="dqn", width=256, batch=64, device=d)),
              (LEARNER_UPDATE, "reference", BenchPoint(LEARNER_UPDATE, algo="sac", width=256, batch=256, device=d)),
              (LEARNER_UPDATE, "reference", BenchPoint(LEARNER_UPDATE, algo="dqn", arch=(128,), batch=32, device=d,
                                                       frames=(4, 10, 10), extractor="small_cnn")),
              (INFERENCE, "reference", BenchPoint(INFERENCE, algo="dqn", width=256, batch=8, device=d)),
              (REPLAY_INSERT, "reference", BenchPoint(REPLAY_INSERT, capacity=capacity, batch=8, device=d)),
              (REPLAY_SAMPLE, "reference", BenchPoint(REPLAY_SAMPLE, capacity=capacity, batch=256, prioritized=True,
                                                      device=d)),
              (PRIORITY_UPDATE, "reference", BenchPoint(PRIORITY_UPDATE, capacity=capacity, batch=256,
                                                        prioritized=True, device=d)),
              (PARAM_SYNC, "reference", BenchPoint(PARAM_SYNC, nbytes=300_000, batch=6, device=d))]
    if not ctx.dry:
        points.append((LEARNER_UPDATE, "cuda_graph", BenchPoint(LEARNER_UPDATE, algo="dqn", width=256, batch=64,
                                                                device=d)))
    return points


def step_smoke(ctx: Context) -> Outcome:
    from pearl_py.profile.microbench import OFF_POLICY, build

    calls = 10 if ctx.dry else 200
    rows = []
    for kind, variant, point in clock_points(ctx):
        _, call = build(kind, variant, point, OFF_POLICY)
        events, host = event_seconds(call, ctx.device, calls), synchronized_seconds(call, ctx.device, calls)
        rows.append({"kernel": f"{kind}/{variant}", "point": repr(point), "events_s": events, "host_s": host,
                     "difference": abs(events - host) / host,
                     # dry: the host clock twice, on a shared CPU: nothing to judge
                     "agree": ctx.dry or abs(events - host) <= AGREEMENT * host})
        print(f"{kind + '/' + variant:<28} events {events * 1e6:9.1f} us  host {host * 1e6:9.1f} us  "
              f"{rows[-1]['difference']:6.1%}", flush=True)
    smoke_json = ctx.work / "smoke.json"
    argv = ["benchmarks/gpu_smoke.py", "--no-profile", "--out", str(ctx.work / "runs" / "a_smoke"), "--json",
            str(smoke_json)]
    argv += (["--steps", "300", "--device", "cpu", "--modes", "serialized", "--algorithms", "dqn", "ppo"] if ctx.dry
             else ["--steps", "2000"])
    rc = ctx.run(sys.executable, *argv)
    runs = json.loads(smoke_json.read_text()) if smoke_json.exists() else []
    apart = [r["kernel"] for r in rows if not r["agree"]]
    misplaced = sum(len(r["problems"]) for r in runs)
    ok = rc == 0 and not apart
    clocks = ("clocks not judged (dry: the CPU's host clock twice)" if ctx.dry else
              f"{len(rows) - len(apart)}/{len(rows)} kernels' clocks agree within {AGREEMENT:.0%}")
    summary = (clocks + (f" (not: {', '.join(apart)})" if apart else "")
               + f"; {len(runs)} smoke runs, {misplaced} kernels off their planned device (gpu_smoke exit {rc})")
    return {"status": "ok" if ok else "failed", "summary": summary, "clocks": rows, "runs": runs}


def launch_floor(device: str, calls: int) -> dict[str, float]:
    """Seconds per call of the smallest kernel: launched (dispatch: the host's time, no wait) and completed
    (launch floor: synchronized every call)."""
    import torch

    x = torch.zeros(1, device=device)
    for _ in range(10):
        x.add_(1)
    sync = (lambda: torch.cuda.synchronize(device)) if device != "cpu" else (lambda: None)
    sync()
    start = time.perf_counter()
    for _ in range(calls):
        x.add_(1)
    dispatch = (time.perf_counter() - start) / calls
    sync()
    return {"dispatch_s": dispatch, "launch_floor_s": synchronized_seconds(lambda: x.add_(1), device, calls)}


def heldout_errors(ctx: Context, calibration: Any) -> dict[str, float]:
    """Median absolute error (%) of the device's fitted models on points never calibrated (MLP points)."""
    from pearl_py.estimate.features import workload_features
    from pearl_py.profile.microbench import OFF_POLICY, build
    from pearl_py.profile.profiler import heldout_grid
    from pearl_py.protocol.kernel import LEARNER_UPDATE, REPLAY_SAMPLE

    kinds = (REPLAY_SAMPLE,) if ctx.dry else (LEARNER_UPDATE, REPLAY_SAMPLE)
    errors = {}
    for kind in kinds:
        model = calibration.model(kind, "reference", device=None if ctx.dry else ctx.gpu)
        if model is None:
            continue
        points = [replace(p, device=ctx.device) for p in heldout_grid(kind, family=OFF_POLICY) if not p.frames][:4 if ctx.dry else 12]
        misses = []
        for point in points:
            workload, call = build(kind, "reference", point, OFF_POLICY)
            measured = synchronized_seconds(call, ctx.device, 10 if ctx.dry else 50)
            misses.append(abs(model.predict(workload_features(workload)) - measured) / measured * 100)
        errors[f"{kind}/reference"] = statistics.median(misses)
        print(f"{kind}/reference held-out error on {ctx.gpu}: {errors[f'{kind}/reference']:.1f}% median "
              f"({len(points)} points)", flush=True)
    return errors


def lean_profile(kinds: tuple[str, ...] | None = None, gpus: bool = True) -> Any:
    """The quick grid of every variant of ``kinds`` (default: all) at one thread, on the CPU then (``gpus``) on every
    GPU, compiled variants left out: at the first lent run (2026-11-27) ``pearl profile --quick`` spent all of step
    b's 150 s on the CPU, 74 s of it compiling ``learner_update/compiled``, and never reached the GPU. ``pearl
    profile`` calibrates the rest."""
    from pearl_py.estimate.calibration import KINDS, model_key, network_family
    from pearl_py.platform import Platform
    from pearl_py.platform.energy import local_readers
    from pearl_py.profile.gpu_profile import profile_gpus
    from pearl_py.profile.microbench import families, variants
    from pearl_py.profile.power_profile import PowerProfile
    from pearl_py.profile.profiler import profile

    kinds = kinds or KINDS
    keys = {model_key(kind, v, family=network_family(kind, family)): v
            for kind in kinds for family in families(kind) for v in variants(kind, family)}
    power = PowerProfile(local_readers(Platform.local()))
    calibration = profile(quick=True, kinds=kinds, only={k for k, v in keys.items() if v != "compiled"}, gpus=False,
                          log=print, power=power)
    if gpus:
        profile_gpus(calibration, True, kinds, print, power,
                     skip={k: "compiled variants: not in the device check's time (pearl profile)"
                           for k, v in keys.items() if v == "compiled"})
        calibration.meta["energy"] = power.meta()
    return calibration


def step_profile(ctx: Context) -> Outcome:
    if ctx.dry:   # one cheap kind on the CPU, into the work folder's cache (the machine's own is not touched)
        from pearl_py.protocol.kernel import REPLAY_SAMPLE

        calibration = lean_profile((REPLAY_SAMPLE,), gpus=False)
    else:
        calibration = lean_profile()
    print(f"calibration written to {calibration.save()}", flush=True)
    gpu_models = sorted(k for k in calibration.models if k.startswith(f"{ctx.gpu}:"))
    errors = heldout_errors(ctx, calibration)
    floor = launch_floor(ctx.device, 200 if ctx.dry else 5_000)
    print(f"launch floor {floor['launch_floor_s'] * 1e6:.1f} us/call, dispatch {floor['dispatch_s'] * 1e6:.1f} "
          "us/call (measured)", flush=True)
    summary = (f"{len(gpu_models) or len(calibration.models)} models fitted; held-out "
               + ", ".join(f"{k} {v:.1f}%" for k, v in errors.items())
               + f"; launch floor {floor['launch_floor_s'] * 1e6:.1f} us, dispatch {floor['dispatch_s'] * 1e6:.1f} us")
    ok = bool(errors) and (ctx.dry or bool(gpu_models))
    return {"status": "ok" if ok else "failed", "summary": summary, "gpu_models": gpu_models,
            "heldout_error_pct": errors, "floor": floor, "gpus": calibration.meta.get("gpus", {})}


def step_devices(ctx: Context) -> Outcome:
    from pearl_py.platform import Platform
    from pearl_py.platform.energy import energy_statuses

    rc = ctx.pearl("devices")
    statuses = {name: status.describe() for name, status in energy_statuses(Platform.local()).items()}
    ok = rc == 0 and (ctx.dry or statuses.get(ctx.gpu, "").startswith("measured"))
    summary = "; ".join(f"{device}: {status}" for device, status in statuses.items())
    return {"status": "ok" if ok else "failed", "summary": summary, "energy": statuses}


MINATAR = "examples/configs/dqn_minatar_breakout.yaml"


def minatar_config(ctx: Context) -> tuple[str, str]:
    """The CNN DQN's config, and what stands in for MinAtar where it is not installed (a copy of the config on
    random frames of MinAtar's shape, in the work folder)."""
    if importlib.util.find_spec("minatar") is not None:
        return MINATAR, ""
    copy = ctx.work / "dqn_frames_stand_in.yaml"
    copy.write_text((ROOT / MINATAR).read_text().replace("env: MinAtar/Breakout-v1", "env: pearl/Frames-4x10x10-v0"))
    return str(copy), "minatar not installed: random 4x10x10 frames stood in"


def run_figures(out: Path) -> dict[str, Any]:
    """A run folder's plan, per-kernel and whole-run predicted against measured, and energy."""
    from pearl_py.plan_file import load_plan
    from pearl_py.report.measured import kernel_rows

    result = json.loads((out / "result.json").read_text())
    plan = load_plan(out / "plan.yaml")
    whole = plan.prediction.run if plan.prediction is not None else None
    devices = result.get("energy", {}).get("devices", {})
    joules = sum(d["joules"] for d in devices.values())
    return {"placements": {k: f"{p.device}/{p.variant}x{p.replicas}" for k, p in plan.placements.items()},
            "why": plan.prediction.limit if plan.prediction is not None else "",
            "kernels": kernel_rows(plan, result),
            "predicted_samples_per_s": whole.samples_per_s if whole is not None else None,
            "measured_samples_per_s": result["run_samples_per_second"] or result["samples_per_second"],
            "executed_on": result.get("executed_on", {}),
            "energy": devices, "samples_per_joule": result["env_steps"] / joules if joules else None}


def no_calibration() -> Outcome | None:
    """A failed step when step b left no calibration (``--auto`` would profile for minutes inside the step)."""
    from pearl_py.estimate.calibration import Calibration

    if Calibration.load_default() is None:
        return {"status": "failed", "summary": "no calibration cached: step b did not finish (run it first)"}
    return None


def auto_cases(ctx: Context, side_by_side: bool = False) -> tuple[dict[str, list[str]], str | None]:
    """Steps d's and e's two runs as arguments both ``pearl run`` and ``benchmarks/vs_sb3.py`` take (config,
    ``--steps``, ``--set``), and what stands in for MinAtar where it is not installed (None: nothing). e
    (``side_by_side``) runs both sides, so shorter runs: half its time is SB3's."""
    minatar, stand_in = minatar_config(ctx)
    steps, warm_up = (("600", "400"), 200) if ctx.dry else (("10000", "3000"), 2000) if side_by_side else \
        (("20000", "5000"), 5000)
    return {"dqn_minatar": [minatar, "--steps", steps[0], "--set", f"learning_starts={warm_up}"],
            "sac_pendulum": ["examples/configs/sac_pendulum.yaml", "--steps", steps[1], "--set", "eval_freq=0"]
            }, stand_in


def step_run_auto(ctx: Context) -> Outcome:
    if (missing := no_calibration()) is not None:
        return missing
    cases, stand_in = auto_cases(ctx)
    figures, failed = {}, []
    for name, argv in cases.items():
        out = ctx.work / "runs" / f"d_{name}"
        rc = ctx.pearl("run", *argv, "--auto", "--set", "eval_episodes=2", "--out", str(out), "--overwrite")
        if rc != 0 or not (out / "result.json").exists():
            failed.append(name)
            continue
        figures[name] = f = run_figures(out)
        print(f"{name}: predicted {f['predicted_samples_per_s']} samples/s, measured "
              f"{f['measured_samples_per_s']:.0f}; placements {f['placements']}", flush=True)
    summary = "; ".join(f"{n}: {f['measured_samples_per_s']:.0f} samples/s measured vs "
                        f"{f['predicted_samples_per_s'] or 0:.0f} predicted" for n, f in figures.items())
    summary += (f"; failed: {', '.join(failed)}" if failed else "") + (f" ({stand_in})" if stand_in else "")
    return {"status": "failed" if failed else "ok", "summary": summary, "runs": figures, "stand_in": stand_in}


def step_sb3(ctx: Context) -> Outcome:
    if importlib.util.find_spec("stable_baselines3") is None:
        return {"status": "skipped", "summary": "stable_baselines3 is not installed (carry its wheel: "
                                                "benchmarks/device_wheels.sh)"}
    if (missing := no_calibration()) is not None:
        return missing
    cases, _ = auto_cases(ctx, side_by_side=True)
    rcs = {name: ctx.run(sys.executable, "benchmarks/vs_sb3.py", *argv, "--seeds", "0", "--backends", "sb3", "auto",
                         "--eval-episodes", "0") for name, argv in cases.items()}
    failed = [k for k, rc in rcs.items() if rc != 0]
    return {"status": "failed" if failed else "ok", "exit": rcs,
            "summary": "side by side in the log" + (f"; failed: {', '.join(failed)}" if failed else "")}


def actor_plan(algorithm: Any, actors: int, platform: Any = None, estimator: Any = None) -> tuple[Any, float]:
    """The model's parallel plan on the CPU with ``actors`` actor processes, and its predicted samples/s (default:
    this machine and its cached calibration)."""
    import pearl_py as pearl
    from pearl_py.estimate import Estimator
    from pearl_py.optimize.builder import build_problem
    from pearl_py.optimize.model import Choice, evaluate
    from pearl_py.plan import Placement
    from pearl_py.platform import Platform
    from pearl_py.protocol.kernel import ENV_STEP, INFERENCE, ROLLOUT_INSERT

    local, estimator = platform or Platform.local(), estimator or Estimator()
    protocol = algorithm.protocol(serialized=False)
    pins = {k.name: "cpu" for k in protocol.kernels()}
    plan = pearl.plan(protocol, local, "throughput", constraints={"pin": pins}, estimator=estimator)
    actor_kernels = {ENV_STEP, INFERENCE, ROLLOUT_INSERT} & set(plan.placements)
    placements = {k: replace(p, replicas=actors) if k in actor_kernels else p for k, p in plan.placements.items()}
    problem = build_problem(protocol, local, estimator, {"pin": pins})
    perf = evaluate(problem, {k: Choice(p.device, p.variant, p.replicas) for k, p in placements.items()})
    return replace(plan, placements={k: Placement(p.device, p.variant, p.replicas) for k, p in placements.items()}), \
        1.0 / perf.time_per_sample


def actor_configs() -> dict[str, Callable[[], Any]]:
    """Step f's two jobs."""
    import pearl_py as pearl

    return {"ppo_cartpole": lambda: pearl.PPO("CartPole-v1", n_envs=16, n_steps=32, net_arch=[64, 64]),
            "dqn_cartpole": lambda: pearl.load_config("examples/configs/dqn_cartpole.yaml").make_algorithm()}


ACTOR_COUNTS = (1, 2, 4, 8, 14)


def predict_actors(calibration_path: str, cores: int) -> int:
    """Step f's predictions again, from a calibration a lent machine brought back and that machine's CPU cores
    (docs/gpu.md: a run whose own step b had failed is compared with the model this way)."""
    from pearl_py.estimate import Calibration, Estimator
    from pearl_py.platform import Catalogue, Platform
    from pearl_py.platform.local import local_cpu_spec
    from pearl_py.platform.platform import Device

    cpu = Device("cpu", local_cpu_spec(Catalogue.load(), cores=cores), local=True)
    platform, estimator = Platform("local", {"cpu": cpu}, []), Estimator(Calibration.load(calibration_path))
    for name, make in actor_configs().items():
        for actors in ACTOR_COUNTS:
            print(f"{name} {actors:>2} actors: {actor_plan(make(), actors, platform, estimator)[1]:9.0f} samples/s "
                  f"predicted ({cores} cores, {calibration_path})")
    return 0


def step_actors(ctx: Context) -> Outcome:
    import pearl_py as pearl

    counts = (1, 2) if ctx.dry else ACTOR_COUNTS
    configs = actor_configs()
    steps = {"ppo_cartpole": 1_000, "dqn_cartpole": 1_000} if ctx.dry else {"ppo_cartpole": 40_000,
                                                                             "dqn_cartpole": 10_000}
    rows = []
    for name, make in configs.items():
        for actors in counts[:1] if ctx.dry and name != "ppo_cartpole" else counts:
            algorithm = make()
            plan, predicted = actor_plan(algorithm, actors)
            result = pearl.train(algorithm, total_steps=steps[name], seed=0, plan=plan, eval_episodes=0,
                                 progress=False)   # training samples/s: the steady state the model predicts
            rows.append({"config": name, "actors": actors, "measured_samples_per_s": result.samples_per_second,
                         "predicted_samples_per_s": predicted})
            print(f"{name} {actors:>2} actors: {result.samples_per_second:9.0f} samples/s measured, "
                  f"{predicted:9.0f} predicted (modelled)", flush=True)
    summary = "; ".join(f"{r['config']}x{r['actors']}: {r['measured_samples_per_s']:.0f}/"
                        f"{r['predicted_samples_per_s']:.0f}" for r in rows) + " (measured/predicted samples/s)"
    return {"status": "ok", "summary": summary, "rows": rows}


def step_replay(ctx: Context) -> Outcome:
    from pearl_py.profile.microbench import OFF_POLICY, BenchPoint, build
    from pearl_py.protocol.kernel import PRIORITY_UPDATE, REPLAY_SAMPLE

    capacity = 10_000 if ctx.dry else 1 << 18
    rows = []
    for prioritized in (False, True):
        kinds = (REPLAY_SAMPLE, PRIORITY_UPDATE) if prioritized else (REPLAY_SAMPLE,)
        for kind in kinds:
            row = {"kernel": kind, "prioritized": prioritized, "batch": 256}
            for key, where in (("cpu_s", "cpu"), ("device_s", ctx.device)):   # dry: the CPU buffer twice
                _, call = build(kind, "reference", BenchPoint(kind, capacity=capacity, batch=256,
                                                              prioritized=prioritized, device=where), OFF_POLICY)
                row[key] = synchronized_seconds(call, where, 20 if ctx.dry else 500)
            rows.append(row)
            print(f"{kind:<16} {'prioritized' if prioritized else 'uniform':<11} cpu {row['cpu_s'] * 1e6:8.1f} us  "
                  f"{ctx.gpu} {row['device_s'] * 1e6:8.1f} us", flush=True)
    summary = "; ".join(f"{r['kernel']} {'PER' if r['prioritized'] else 'uniform'} {r['device_s'] * 1e6:.0f} us vs "
                        f"cpu {r['cpu_s'] * 1e6:.0f} us" for r in rows)
    return {"status": "ok", "summary": summary, "rows": rows}


@dataclass(frozen=True)
class Step:
    name: str
    title: str
    run: Callable[[Context], Outcome]
    timeout_s: float
    dry_timeout_s: float


STEPS = {s.name: s for s in (
    Step("b", "pearl profile on the GPU", step_profile, 125, 120),
    Step("a", "events vs host clock; gpu_smoke", step_smoke, 85, 180),
    Step("c", "pearl devices (NVML)", step_devices, 10, 60),
    Step("d", "pearl run --auto (CNN DQN, SAC)", step_run_auto, 90, 150),
    Step("f", "actor scaling", step_actors, 95, 150),
    Step("g", "torch replay, GPU vs CPU", step_replay, 20, 60),
    Step("e", "SB3 side by side", step_sb3, 75, 150),
)}
"""In running order: b first (the others plan with its calibration), e last (the one the budget may skip). Seconds on
the GPU machine, each about 1.1x what it took at the first lent run (H200, 2026-11-27: b 105, c 8, d 78, f 88, g 13;
a and e not yet whole), 500 in all (the budget), and in a dry run (wide: a dry run on a 2-core VM shared with other
jobs took 225 s, 73 s of it CPU time)."""


def child(name: str, work: Path, dry: bool) -> int:
    """Run one step in this process (the parent's subprocess) and write its outcome."""
    try:
        outcome = STEPS[name].run(Context(work, dry))
    except Exception as exc:  # the step's own failure: recorded, the check goes on
        import traceback

        traceback.print_exc()
        outcome = {"status": "failed", "summary": f"{type(exc).__name__}: {exc}"}
    (work / f"step_{name}.json").write_text(json.dumps(outcome, indent=1, default=str))
    return 0 if outcome["status"] != "failed" else 1


def run_step(step: Step, work: Path, dry: bool, timeout: float, env: dict[str, str]) -> dict[str, Any]:
    log = work / f"step_{step.name}.log"
    start = time.perf_counter()
    argv = [sys.executable, __file__, "--child", step.name, "--work", str(work)] + (["--dry-run"] if dry else [])
    with log.open("w") as out:
        # a session of its own: at its limit the step and every process it started (runs, actors) are stopped
        process = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return {"status": "timeout", "summary": f"stopped at its limit of {timeout:.0f} s",
                    "seconds": time.perf_counter() - start}
    answer = work / f"step_{step.name}.json"
    outcome = json.loads(answer.read_text()) if answer.exists() else {
        "status": "failed", "summary": "the step wrote no outcome (see the log)"}
    return {**outcome, "seconds": time.perf_counter() - start}


def machine() -> dict[str, Any]:
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {"cpus": os.cpu_count(), "gpu": gpu, "torch": torch.__version__, "cuda": torch.version.cuda,
            "python": sys.version.split()[0], "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def pack(work: Path, cache: Path, out: Path, record: dict[str, Any]) -> None:
    """The three files of ``out``: the JSON, the steps' logs in one, the runs and the calibration as one tarball."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "device_check.json").write_text(json.dumps(record, indent=1, default=str))
    with (out / "device_check.log").open("w") as combined:
        for name in record["steps"]:
            log = work / f"step_{name}.log"
            combined.write(f"===== step {name}: {STEPS[name].title}\n")
            combined.write(log.read_text(errors="replace") if log.exists() else "(not run)\n")
    with tarfile.open(out / "runs.tar.gz", "w:gz") as tar:
        for part, folder in (("runs", work / "runs"), ("cache", cache)):
            if folder.exists():   # files above 4 MiB (policies of big nets) stay behind: $OUT's limits
                tar.add(folder, arcname=part, filter=lambda info: None if info.isfile() and info.size > 4 << 20
                        else info)


def table(record: dict[str, Any]) -> str:
    lines = [f"{'step':<4} {'what':<34} {'status':<8} {'s':>6}  summary"]
    for name, step in record["steps"].items():
        lines.append(f"{name:<4} {STEPS[name].title:<34} {step['status']:<8} {step.get('seconds', 0):6.1f}  "
                     f"{step.get('summary', '')}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=False, help="folder of the three result files")
    parser.add_argument("--dry-run", action="store_true", help="every step on this CPU, tiny (under 2 minutes)")
    parser.add_argument("--only", nargs="+", choices=sorted(STEPS), help="run only these steps")
    parser.add_argument("--budget", type=float, default=BUDGET_S, help="seconds for the whole check")
    parser.add_argument("--cache", help="the calibration cache (PEARL_CACHE_DIR) to use and keep, so that a rerun "
                                        "with --only finds step b's (default: a fresh one, packed and removed)")
    parser.add_argument("--predict-actors", metavar="CALIBRATION",
                        help="print step f's predictions from this calibration file (with --cores) and stop")
    parser.add_argument("--cores", type=int, default=16, help="the CPU cores of --predict-actors' machine")
    parser.add_argument("--child", choices=sorted(STEPS), help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args.child, Path(args.work), args.dry_run)
    if args.predict_actors:
        if not Path(args.predict_actors).is_file() or args.cores < 1:
            parser.error(f"--predict-actors needs a calibration file (got {args.predict_actors!r}) and --cores >= 1")
        return predict_actors(args.predict_actors, args.cores)
    if not args.out:
        parser.error("--out is required")
    import torch

    if not args.dry_run and not torch.cuda.is_available():
        print("device_check: no CUDA device here: run it on the GPU machine, or with --dry-run", file=sys.stderr)
        return 2
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pearl-device-check-") as tmp:
        work = Path(tmp)
        cache = Path(args.cache) if args.cache else work / "cache"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               "PYTHONUNBUFFERED": "1", "PEARL_CACHE_DIR": str(cache)}
        record: dict[str, Any] = {"dry_run": args.dry_run, "machine": machine(), "steps": {}}
        for name, step in STEPS.items():
            if args.only and name not in args.only:
                continue
            left = args.budget - (time.perf_counter() - started)
            limit = min(step.dry_timeout_s if args.dry_run else step.timeout_s, left)
            if limit < 10:
                record["steps"][name] = {"status": "skipped", "summary": f"the budget of {args.budget:.0f} s is spent"}
                continue
            record["steps"][name] = run_step(step, work, args.dry_run, limit, env)
            print(f"step {name}: {record['steps'][name]['status']} ({record['steps'][name]['seconds']:.0f} s)",
                  flush=True)
        record["seconds"] = time.perf_counter() - started
        pack(work, cache, Path(args.out), record)
    print(table(record))
    print(f"device_check: {record['seconds']:.0f} s; {args.out}/device_check.json, device_check.log, runs.tar.gz")
    return 1 if any(s["status"] in ("failed", "timeout") for s in record["steps"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
