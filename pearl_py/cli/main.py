"""The ``pearl`` command: the argument parser and the dispatch to one module per subcommand.

Usage::

    pearl run examples/configs/dqn_cartpole.yaml --steps 20000 --seed 1 --out runs/dqn
    pearl run examples/configs/dqn_cartpole.yaml --auto --tune --tune-top-k 3 --tune-seconds 5

A user mistake (bad config, unknown env, missing file) prints one line naming the
file, line and key, and exits with code 2; no traceback.
"""
from __future__ import annotations

import argparse
import functools
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from pearl_py.errors import DISK_FULL_ERRNOS, UserError


def _command(name: str, fields: tuple[str, ...] | None = None) -> Callable[[argparse.Namespace], int]:
    """The handler of ``pearl <name>``: imports ``pearl_py.cli.<name>`` only when that subcommand runs (torch and
    the rest load inside ``main``'s try) and calls its ``<name>_main`` with the arguments' ``fields`` in order, or
    with the whole namespace where ``fields`` is None."""
    def handle(args: argparse.Namespace) -> int:
        run = getattr(importlib.import_module(f"pearl_py.cli.{name}"), f"{name}_main")
        return run(args) if fields is None else run(*(getattr(args, field) for field in fields))

    return handle


def step_count(text: str) -> int:
    """An env-step count as the zoo writes it: ``50000``, ``1_000_000`` or ``1e6`` (a whole number)."""
    try:
        value = float(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of env steps: {text!r}") from None
    if not value.is_integer():
        raise argparse.ArgumentTypeError(f"not a whole number of env steps: {text!r}")
    return int(value)


class OneLineParser(argparse.ArgumentParser):
    """Usage mistakes as every other user mistake: one line naming the command and the problem, exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    from pearl_py.version import __version__

    parser = OneLineParser(prog="pearl", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=f"pearl_py {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="train from a config file and write result.json")
    run.add_argument("config", nargs="?", help="run config YAML (see examples/configs); or --zoo and --env")
    run.add_argument("--zoo", metavar="HYPERPARAMS.yml",
                     help="an rl-baselines3-zoo hyperparameter file (hyperparams/dqn.yml: the algorithm is its name)")
    run.add_argument("--env", help="with --zoo: the env id whose entry to run")
    run.add_argument("--env-module", metavar="MODULE", help="import MODULE first: it registers the env with gymnasium "
                     "(a user's own env; the zoo's --gym-packages); same as --set env_module=MODULE")
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="sets",
                     help="override any config key (repeatable): --set batch_size=128 --set net_arch=[64,64]")
    run.add_argument("--steps", type=step_count, help="override total_steps (an integer count: 50000, 5e4, 1_000_000)")
    run.add_argument("--seed", type=int, help="override seed (-1, any negative: a random seed, as the zoo's; "
                     "result.json records it)")
    run.add_argument("--out", help="output folder (default: runs/<config>-seed<S>)")
    placement = run.add_mutually_exclusive_group()
    placement.add_argument("--auto", action="store_true",
                           help="calibrate this machine if needed, then choose devices and variants by the optimizer")
    placement.add_argument("--plan", help="run a plan written by `pearl plan` (plan.yaml or plan.json)")
    run.add_argument("--objective", default="throughput", choices=["throughput", "power"],
                     help="what --auto optimizes")
    run.add_argument("--backend", default="local", choices=["local", "ray"],
                     help="local processes (default) or a Ray cluster")
    run.add_argument("--address", help="Ray cluster address (with --backend ray; default: start a local one); "
                                        "with --auto the plan is made over the cluster's nodes")
    run.add_argument("--resume", metavar="DIR", help="continue a stopped run from the newest complete checkpoint "
                     "in DIR (periodic, or written on Ctrl-C/SIGTERM)")
    run.add_argument("--checkpoint-freq", type=int, metavar="N",
                     help="override checkpoint_freq: a checkpoint every N env steps (0: none)")
    run.add_argument("--checkpoint-keep", type=int, metavar="K", help="override checkpoint_keep: newest K kept")
    run.add_argument("--tune", action="store_true",
                     help="with --auto: trial the model's top-k plans for a few seconds each, run the fastest measured")
    run.add_argument("--tune-top-k", type=int, default=3, metavar="K", help="plans --tune trials (default 3)")
    run.add_argument("--tune-seconds", type=float, default=5.0, metavar="S",
                     help="steady-state seconds of each --tune trial (default 5)")
    run.add_argument("--init-from", metavar="RUN_DIR",
                     help="start the networks from the policy saved in RUN_DIR (same algorithm, env and shapes)")
    run.add_argument("--overwrite", action="store_true",
                     help="--out may hold an earlier run: replace it (its result, checkpoints, policy and logs are removed)")
    run.add_argument("--oversubscribe", action="store_true",
                     help="run a plan that holds more cores than this machine has (refused otherwise)")
    run.add_argument("--dedicated", action="store_true", default=None,
                     help="this machine runs nothing but the run: --auto values multi-threaded options by their "
                          "calibrated cost alone, not as expected beside other processes (config key `dedicated`)")
    run.add_argument("--replan", action="store_true",
                     help="with --auto: plan again even where an earlier run made the plan from the same config, "
                          "machine, calibration and pearl_py (reused otherwise: docs/runtime.md)")
    run.add_argument("--no-adapt", dest="adapt", action="store_false",
                     help="run the plan as given to the end: no correction when its kernels do not hold to the "
                          "prediction (for benchmarks that need a fixed plan; docs/runtime.md)")
    run.set_defaults(handler=_command("run"), check=functools.partial(_check_run_flags, run))

    plan = sub.add_parser("plan", help="assign kernels to devices; write plan.yaml/json and report.md/html")
    plan.add_argument("config", help="run config YAML")
    target = plan.add_mutually_exclusive_group()
    target.add_argument("--platform", default="local", help="catalogue platform name, a platform YAML path, or local")
    target.add_argument("--address", metavar="HOST:PORT",
                        help="plan over the running Ray cluster there: its nodes, their CPUs, GPUs and memory")
    plan.add_argument("--objective", default="throughput", choices=["throughput", "power"])
    plan.add_argument("--out", help="output folder (default: plan-out)")
    plan.add_argument("--dedicated", action="store_true", default=None,
                      help="this machine runs nothing else: value multi-threaded options by their calibrated cost "
                           "alone (config key `dedicated`)")
    plan.set_defaults(handler=_command("plan", ("config", "platform", "objective", "out", "dedicated",
                                                          "address")))

    profile = sub.add_parser("profile", help="calibrate the cost models on this machine's devices")
    profile.add_argument("--quick", action="store_true", help="smaller grid (about half the time)")
    profile.add_argument("--out", help="write the calibration here instead of the per-machine cache")
    profile.add_argument("--check", action="store_true", dest="check_calibration",
                         help="re-time a few points: does the cached (or --out) calibration still hold? (exit 0/1)")
    profile.set_defaults(handler=_command("profile", ("out", "quick", "check_calibration")))

    simulate = sub.add_parser("simulate", help="discrete-event simulation of a plan on any platform")
    simulate.add_argument("config", help="run config YAML")
    simulate.add_argument("--platform", default="local", help="catalogue platform name, a platform YAML path, or local")
    simulate.add_argument("--plan", help="plan.yaml to simulate (default: optimize for throughput first)")
    simulate.add_argument("--out", help="write the plan's report with the simulated timeline here")
    simulate.set_defaults(handler=_command("simulate", ("config", "platform", "plan", "out")))

    evaluate = sub.add_parser("eval", help="evaluate the policy a run saved (policy.pt); optionally film it")
    evaluate.add_argument("run_dir", help="a run's output folder (holds policy.pt and policy.json)")
    evaluate.add_argument("--episodes", type=int, default=10, help="greedy episodes (default 10)")
    evaluate.add_argument("--seed", type=int, help="seed of the first episode (default: the run's evaluation seed)")
    evaluate.add_argument("--render", choices=["rgb_array"], help="render frames (with --video)")
    evaluate.add_argument("--video", metavar="OUT.mp4", help="film the first episode (needs the video extra)")
    evaluate.add_argument("--best", action="store_true",
                          help="the best evaluated policy (best_policy.pt, kept by runs with --eval-freq) instead "
                               "of the final one")
    evaluate.set_defaults(handler=_command("eval"))

    devices = sub.add_parser("devices", help="list the hardware catalogue and this machine's devices")
    devices.set_defaults(handler=_command("devices", ()))
    fpga = sub.add_parser("fpga-design", help="what a network costs as an hls4ml-style FPGA design (modelled)")
    fpga.add_argument("spec", help="network spec YAML (part, clock_ns, precision, ..., layers; examples/fpga)")
    fpga.add_argument("--json", action="store_true",
                      help="print only latency_cycles, ii_cycles, dsp, lut, ff, bram18k as one JSON object")
    fpga.set_defaults(handler=_command("fpga_design", ("spec", "json")))
    return parser


def _check_run_flags(run: argparse.ArgumentParser, args: argparse.Namespace, argv: Sequence[str]) -> None:
    """A config file or --zoo with --env; the --tune flags together and with --auto: a usage error (exit 2)."""
    if (args.config is None) == (args.zoo is None):
        run.error("give a config file or --zoo HYPERPARAMS.yml --env ENV_ID (one of them)")
    if (args.zoo is None) != (args.env is None):
        run.error("--zoo and --env go together (the zoo file's entry for that env)")
    if args.tune and not args.auto:
        run.error("--tune needs --auto (it trials the optimizer's top candidate plans)")
    given = [flag for flag in ("--tune-top-k", "--tune-seconds") if any(a.split("=")[0] == flag for a in argv)]
    if given and not args.tune:
        run.error(f"{given[0]} needs --tune")
    if args.tune_top_k < 1:
        run.error(f"--tune-top-k must be >= 1, got {args.tune_top_k}")
    if not args.tune_seconds > 0 or args.tune_seconds == float("inf"):
        run.error(f"--tune-seconds must be a positive number of seconds, got {args.tune_seconds:g}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    if hasattr(args, "check"):
        args.check(args, argv)
    try:
        return args.handler(args)  # the subcommands import torch and the rest here, inside the try
    except UserError as exc:
        print(f"pearl: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:  # RunInterrupted names its checkpoint; else Ctrl-C while loading
        print(f"pearl: {exc}" if str(exc) else "pearl: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:  # a full disk outside pearl_py's own atomic writes (a log line, a library's cache)
        if exc.errno not in DISK_FULL_ERRNOS:
            raise
        where = f" writing {exc.filename}" if exc.filename else ""
        print(f"pearl: error: {exc.strerror}{where}; the files pearl_py wrote whole before it are kept",
              file=sys.stderr)
        return 2

