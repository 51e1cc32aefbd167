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

On a loaded machine, where seconds are not worth quoting, ``--counts`` runs one process per side and prints, per part,
what no load changes: the modules first imported in it, the Python function calls cProfile counts in it, and its share
of the process's CPU time (profiled, so skewed towards Python work)::

    python benchmarks/fixed_cost.py examples/configs/dqn_cartpole.yaml --steps 2000 --counts
"""
from __future__ import annotations

import argparse
import contextlib
import cProfile
import functools
import importlib
import json
import os
import pstats
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
    """Exclusive figures per part: a part entered inside another pauses the outer one.

    Per part: wall seconds (``seconds``), CPU seconds of this process (``cpu``), times entered (``calls``), modules
    first imported while it ran (``modules``) and, with ``count_calls``, the Python function calls cProfile saw
    (``python_calls``; one profiler per part, so each call is counted in the innermost part it ran in). The last
    three do not depend on the machine's load.
    """

    def __init__(self, count_calls: bool = False) -> None:
        self.seconds: dict[str, float] = dict.fromkeys(PARTS, 0.0)
        self.cpu: dict[str, float] = dict.fromkeys(PARTS, 0.0)
        self.calls: dict[str, int] = dict.fromkeys(PARTS, 0)
        self.modules: dict[str, int] = dict.fromkeys(PARTS, 0)
        self._profiles = {name: cProfile.Profile() for name in PARTS} if count_calls else None
        self._stack: list[str] = []
        self._mark = self._now()

    @staticmethod
    def _now() -> tuple[float, float, int]:
        return time.perf_counter(), time.process_time(), len(sys.modules)

    def _switch(self, to: str | None) -> None:
        """Charge what passed since the last switch to the innermost part, then make ``to`` (or the outer part
        when None) the one that runs."""
        if self._profiles is not None and self._stack:
            self._profiles[self._stack[-1]].disable()
        now = self._now()
        if self._stack:
            inner = self._stack[-1]
            self.seconds[inner] += now[0] - self._mark[0]
            self.cpu[inner] += now[1] - self._mark[1]
            self.modules[inner] += now[2] - self._mark[2]
        if to is None:
            self.calls[self._stack.pop()] += 1
        else:
            self._stack.append(to)
        self._mark = now
        if self._profiles is not None and self._stack:
            self._profiles[self._stack[-1]].enable()

    @contextlib.contextmanager
    def part(self, name: str):
        self._switch(name)
        try:
            yield
        finally:
            self._switch(None)

    def python_calls(self) -> dict[str, int] | None:
        """Python function calls per part (None unless built with ``count_calls``)."""
        if self._profiles is None:
            return None
        return {name: pstats.Stats(profile).total_calls if profile.getstats() else 0
                for name, profile in self._profiles.items()}

    def figures(self) -> dict[str, Any]:
        """What a job process prints: every part's figures and the modules it holds at its end."""
        return {"parts": self.seconds, "cpu": self.cpu, "calls": self.calls, "part_modules": self.modules,
                "python_calls": self.python_calls(), "modules": len(sys.modules)}

    def wrap(self, owner: Any, attribute: str, name: str) -> None:
        """Time every call of ``owner.attribute`` as part ``name``."""
        inner = getattr(owner, attribute)

        @functools.wraps(inner)
        def timed(*args, **kwargs):
            with self.part(name):
                return inner(*args, **kwargs)

        setattr(owner, attribute, timed)


def pearl_job(config: str, steps: int, out: str, count_calls: bool = False) -> dict[str, Any]:
    """pearl_py's job in this process, its parts timed."""
    parts = Parts(count_calls)
    with parts.part("rest"):
        with parts.part("import"):
            import numba.core.dispatcher

            import pearl_py.runtime.evaluation as evaluation
            from pearl_py.estimate.calibration import Calibration
            from pearl_py.runtime.result import RunResult

            # the packages' `train` and `main` attributes are the functions, not the modules
            train = importlib.import_module("pearl_py.pipeline.train")
            cli = importlib.import_module("pearl_py.cli.main")
        if Calibration.load_default() is None:
            raise SystemExit("no calibration of this machine is cached: run the job once (`pearl run CONFIG --auto`) "
                             "so that this benchmark times a run, not a profile")
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
    return parts.figures()


def sb3_job_process(job: dict[str, Any], steps: int, episodes: int, out: str,
                    count_calls: bool = False) -> dict[str, Any]:
    """SB3's job in this process, its parts timed as pearl_py's."""
    parts = Parts(count_calls)
    with parts.part("rest"):
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
    return parts.figures()


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


def counts(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """One process per side with every part's Python calls counted (cProfile): ``{side: figures}`` as
    :meth:`Parts.figures` gives them."""
    found = {}
    with tempfile.TemporaryDirectory() as out:
        _, found["pearl_py"] = timed_process(this("pearl", {"config": args.config, "steps": args.steps,
                                                            "out": os.path.join(out, "run"), "count_calls": True}))
    with tempfile.TemporaryDirectory() as out:
        _, found["SB3"] = timed_process(this("sb3", {"job": sb3_job(args.config, args.steps),
                                                     "episodes": args.eval_episodes, "steps": args.steps, "out": out,
                                                     "count_calls": True}))
    return found


def counts_table(found: dict[str, dict[str, Any]]) -> list[str]:
    """One row per part: each side's new modules, Python calls and share of the process's CPU (profiled)."""
    sides = ("pearl_py", "SB3")
    cpu = {side: sum(found[side]["cpu"].values()) or 1.0 for side in sides}
    rows = [f"{'part':<12} {'modules':>15} {'Python calls':>23} {'CPU % (profiled)':>17}",
            f"{'':<12} {'pearl_py':>7} {'SB3':>7} {'pearl_py':>11} {'SB3':>11} {'pearl_py':>8} {'SB3':>8}"]
    for name in (*PARTS, "total"):
        def of(side: str, key: str) -> float:
            values = found[side][key]
            return sum(values.values()) if name == "total" else values[name]
        rows.append(f"{name:<12} " + " ".join(f"{of(side, 'part_modules'):7.0f}" for side in sides)
                    + " " + " ".join(f"{of(side, 'python_calls'):11,.0f}" for side in sides)
                    + " " + " ".join(f"{100 * of(side, 'cpu') / cpu[side]:8.1f}" for side in sides))
    return rows


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
    parser.add_argument("--counts", action="store_true", help="instead of timing, one process per side with each "
                        "part's modules, Python calls and CPU share counted (figures a loaded machine keeps)")
    args = parser.parse_args(argv)
    if args.counts:
        print(f"{args.config}, {args.steps} steps, one process per side, Python calls counted by cProfile "
              "(load-independent but for the CPU shares, which profiling skews towards Python work)")
        for row in counts_table(counts(args)):
            print(row)
        return
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
