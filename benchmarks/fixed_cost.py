"""The fixed cost of a run's process, part by part, for pearl_py beside Stable-Baselines3 on the same job (issue 30).

    python benchmarks/fixed_cost.py examples/configs/dqn_cartpole.yaml --steps 2000 --repeats 3

Every figure comes from fresh processes (``sys.executable``), the median of ``--repeats``; the load average is printed
before and after (figures taken at a load above the machine's cores are not worth quoting). pearl_py's job is
``pearl run CONFIG --auto --steps S`` into a temporary folder, with this machine's calibration cached (the benchmark
refuses to profile: run the job once first); SB3's is the same config as ``benchmarks/vs_sb3.py`` maps it
(``sb3_side``), built, learned for S steps, evaluated and saved. Each job process times its own parts, each part
exclusive of the parts inside it:

- ``interpreter``: ``python -c pass`` (both sides pay it; not in the job's parts);
- ``import``: pearl_py's CLI, pipeline, serial runtime and their dependencies (torch, numba, scipy, ...); SB3's
  torch, gymnasium and stable_baselines3;
- ``plan``: pearl_py's plan (the cached calibration read, the protocol derived, the optimizer); SB3 has none;
- ``setup``: the executor (networks, optimizers: torch.optim's first use imports torch._dynamo, envs, replay);
  SB3's model built;
- ``numba cache``: every ``Dispatcher.compile`` (a kernel loaded from numba's cache, or compiled where it misses);
- ``eval``: every evaluation's episodes; SB3's ``evaluate_policy`` of the config's episodes;
- ``outputs``: the policy, result, plan and report files; SB3's ``model.save``;
- ``rest``: the job's process less its parts: the training loop, the arguments, the logs;
- ``spawn``: a child process started as pearl_py's parallel runtime starts an actor (``process_start``); the serial
  plans of the README job spawn none, SB3's DummyVecEnv neither.

``whole`` is the parent's wall clock around the job's process (interpreter to exit). Below the table, the modules each
side's job process holds at its end (``len(sys.modules)``): a count no load distorts.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PARTS = ("import", "plan", "setup", "numba cache", "eval", "outputs", "rest")


class Parts:
    """Exclusive wall seconds per part: a part entered inside another pauses the outer one."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = dict.fromkeys(PARTS, 0.0)
        self.calls: dict[str, int] = dict.fromkeys(PARTS, 0)
        self._stack: list[tuple[str, float]] = []

    @contextlib.contextmanager
    def part(self, name: str):
        now = time.perf_counter()
        if self._stack:
            outer, since = self._stack[-1]
            self.seconds[outer] += now - since
        self._stack.append((name, now))
        try:
            yield
        finally:
            name, since = self._stack.pop()
            now = time.perf_counter()
            self.seconds[name] += now - since
            self.calls[name] += 1
            if self._stack:
                self._stack[-1] = (self._stack[-1][0], now)

    def wrap(self, owner: Any, attribute: str, name: str) -> None:
        """Time every call of ``owner.attribute`` as part ``name``."""
        inner = getattr(owner, attribute)

        @functools.wraps(inner)
        def timed(*args, **kwargs):
            with self.part(name):
                return inner(*args, **kwargs)

        setattr(owner, attribute, timed)


def pearl_job(config: str, steps: int, out: str) -> dict[str, Any]:
    """pearl_py's job in this process, its parts timed."""
    parts, start = Parts(), time.perf_counter()
    with parts.part("import"):
        import numba.core.dispatcher

        import pearl_py.runtime.evaluation as evaluation
        from pearl_py.estimate.calibration import Calibration
        from pearl_py.runtime.result import RunResult

        # the packages' `train` and `main` attributes are the functions, not the modules
        train, cli = importlib.import_module("pearl_py.pipeline.train"), importlib.import_module("pearl_py.cli.main")
    if Calibration.load_default() is None:
        raise SystemExit("no calibration of this machine is cached: run the job once (`pearl run CONFIG --auto`) so "
                         "that this benchmark times a run, not a profile")
    parts.wrap(train, "resolve_plan", "plan")
    parts.wrap(train, "make_executor", "setup")
    parts.wrap(numba.core.dispatcher.Dispatcher, "compile", "numba cache")
    parts.wrap(evaluation, "play", "eval")
    for owner, attribute in ((train, "save_trained"), (RunResult, "save"), (train, "export_plan")):
        parts.wrap(owner, attribute, "outputs")
    with contextlib.redirect_stdout(sys.stderr):
        code = cli.main(["run", config, "--auto", "--steps", str(steps), "--out", out])
    if code != 0:
        raise SystemExit(f"pearl run exited {code}")
    parts.seconds["rest"] = time.perf_counter() - start - sum(parts.seconds.values())
    return {"parts": parts.seconds, "calls": parts.calls, "modules": len(sys.modules)}


def sb3_job_process(job: dict[str, Any], steps: int, episodes: int, out: str) -> dict[str, Any]:
    """SB3's job in this process, its parts timed as pearl_py's."""
    parts, start = Parts(), time.perf_counter()
    with parts.part("import"):
        import gymnasium  # noqa: F401
        import stable_baselines3  # noqa: F401
        import torch
        from stable_baselines3.common.evaluation import evaluate_policy
        from stable_baselines3.common.monitor import Monitor

        sys.path.insert(0, str(HERE))
        import sb3_side
    torch.set_num_threads(1)
    with parts.part("setup"):
        model = sb3_side.model(job, 0)
    model.learn(steps)
    with parts.part("eval"):
        evaluate_policy(model, Monitor(sb3_side.make_env(job)), n_eval_episodes=episodes, deterministic=True)
    with parts.part("outputs"):
        model.save(os.path.join(out, "model.zip"))
    parts.seconds["rest"] = time.perf_counter() - start - sum(parts.seconds.values())
    return {"parts": parts.seconds, "calls": parts.calls, "modules": len(sys.modules)}


def spawn_process() -> dict[str, Any]:
    """A spawned child's start, as pearl_py's parallel runtime starts an actor."""
    from pearl_py.profile.process_start import time_child_process

    child = time_child_process()
    return {"spawn": None if child is None else child.start_s}


def _child(argv: list[str]) -> None:
    kind, payload = argv[0], json.loads(argv[1])
    result = {"pearl": lambda: pearl_job(**payload), "sb3": lambda: sb3_job_process(**payload),
              "spawn": spawn_process}[kind]()
    print(json.dumps(result))


def timed_process(args: list[str], env: dict[str, str] | None = None) -> tuple[float, dict[str, Any]]:
    """(whole wall seconds, the JSON its last stdout line holds) of one fresh process."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env)
    whole = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args[:3])} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    lines = done.stdout.strip().splitlines()
    return whole, json.loads(lines[-1]) if lines else {}


def this(kind: str, payload: dict[str, Any]) -> list[str]:
    return [str(Path(__file__).resolve()), "--child", kind, json.dumps(payload)]


def sb3_job(config: str, steps: int) -> dict[str, Any]:
    """The config as SB3's job (``vs_sb3.sb3_job``), read in this process (the parent), as vs_sb3 does."""
    sys.path.insert(0, str(HERE))
    from vs_sb3 import configured, sb3_job as job_of

    return job_of(configured(config, steps, []))


def measure(args: argparse.Namespace) -> dict[str, dict[str, list[float]]]:
    """``{side: {part or "whole" or "interpreter" or "spawn": [seconds per repeat], "modules": [count per repeat]}}``."""
    job = sb3_job(args.config, args.steps)
    episodes = args.eval_episodes
    figures: dict[str, dict[str, list[float]]] = {"pearl_py": {}, "SB3": {}}

    def add(side: str, name: str, seconds: float | None) -> None:
        if seconds is not None:
            figures[side].setdefault(name, []).append(seconds)

    for _ in range(args.repeats):
        interpreter, _ = timed_process(["-c", "pass"])
        for side in figures:
            add(side, "interpreter", interpreter)
        with tempfile.TemporaryDirectory() as out:
            whole, pearl = timed_process(this("pearl", {"config": args.config, "steps": args.steps,
                                                        "out": os.path.join(out, "run")}))
        add("pearl_py", "whole", whole)
        add("pearl_py", "modules", pearl["modules"])
        for name, seconds in pearl["parts"].items():
            add("pearl_py", name, seconds)
        with tempfile.TemporaryDirectory() as out:
            whole, sb3 = timed_process(this("sb3", {"job": job, "steps": args.steps, "episodes": episodes, "out": out}))
        add("SB3", "whole", whole)
        add("SB3", "modules", sb3["modules"])
        for name, seconds in sb3["parts"].items():
            add("SB3", name, seconds)
        _, spawn = timed_process(this("spawn", {}))
        add("pearl_py", "spawn", spawn["spawn"])
    return figures


def table(figures: dict[str, dict[str, list[float]]]) -> list[str]:
    """One row per part: each side's median seconds and pearl_py over SB3."""
    rows = [f"{'part':<12} {'pearl_py s':>10} {'SB3 s':>8} {'pearl/SB3':>9}"]
    for name in ("interpreter", *PARTS, "spawn", "whole"):
        mine, theirs = (statistics.median(figures[side][name]) if figures[side].get(name) else None
                        for side in ("pearl_py", "SB3"))
        ratio = f"{mine / theirs:9.2f}" if mine is not None and theirs else f"{'-':>9}"
        rows.append(f"{name:<12} {_s(mine):>10} {_s(theirs):>8} {ratio}")
    return rows


def _s(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.2f}"


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        _child(argv[1:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("config")
    parser.add_argument("--steps", type=int, default=2000, help="steps of each job (default 2000: the fixed parts "
                                                                 "dominate)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--eval-episodes", type=int, default=10, help="SB3's evaluation episodes (pearl_py's: the "
                                                                      "config's)")
    args = parser.parse_args(argv)
    before = os.getloadavg()[0]
    figures = measure(args)
    after = os.getloadavg()[0]
    print(f"{args.config}, {args.steps} steps, median of {args.repeats} fresh processes per side "
          f"(load average {before:.2f} before, {after:.2f} after, {os.cpu_count()} CPUs; measured)")
    for row in table(figures):
        print(row)
    print("modules the job's process loaded (load-independent): "
          + ", ".join(f"{side} {max(figures[side]['modules']):.0f}" for side in figures))


if __name__ == "__main__":
    main()
