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
import sys
from collections.abc import Sequence
from typing import NoReturn

from pearl_py.errors import UserError


def _run(args: argparse.Namespace) -> int:
    from pearl_py.cli.run import run_main

    return run_main(args)


def _simulate(args: argparse.Namespace) -> int:
    from pearl_py.cli.simulate import simulate_main

    return simulate_main(args.config, args.platform, args.plan, args.out)


def _plan(args: argparse.Namespace) -> int:
    from pearl_py.cli.plan import plan_main

    return plan_main(args.config, args.platform, args.objective, args.out)


def _profile(args: argparse.Namespace) -> int:
    from pearl_py.cli.profile import profile_main

    return profile_main(args.out, args.quick)


def _devices(args: argparse.Namespace) -> int:
    from pearl_py.cli.devices import devices_main

    return devices_main()


class OneLineParser(argparse.ArgumentParser):
    """Usage mistakes as every other user mistake: one line naming the command and the problem, exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="pearl", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="train from a config file and write result.json")
    run.add_argument("config", help="run config YAML (see examples/configs)")
    run.add_argument("--steps", type=int, help="override total_steps")
    run.add_argument("--seed", type=int, help="override seed")
    run.add_argument("--out", help="output folder (default: runs/<config>-seed<S>)")
    placement = run.add_mutually_exclusive_group()
    placement.add_argument("--auto", action="store_true",
                           help="calibrate this machine if needed, then choose devices and variants by the optimizer")
    placement.add_argument("--plan", help="run a plan written by `pearl plan` (plan.yaml or plan.json)")
    run.add_argument("--objective", default="throughput", choices=["throughput", "power"],
                     help="what --auto optimizes")
    run.add_argument("--backend", default="local", choices=["local", "ray"],
                     help="local processes (default) or a Ray cluster")
    run.add_argument("--address", help="Ray cluster address (with --backend ray; default: start a local one)")
    run.add_argument("--resume", metavar="DIR", help="continue an interrupted run from its checkpoint in DIR")
    run.add_argument("--tune", action="store_true",
                     help="with --auto: trial the model's top-k plans for a few seconds each, run the fastest measured")
    run.add_argument("--tune-top-k", type=int, default=3, metavar="K", help="plans --tune trials (default 3)")
    run.add_argument("--tune-seconds", type=float, default=5.0, metavar="S",
                     help="steady-state seconds of each --tune trial (default 5)")
    run.add_argument("--overwrite", action="store_true",
                     help="--out may hold an earlier run: replace it (its result, checkpoint and logs are removed)")
    run.add_argument("--oversubscribe", action="store_true",
                     help="run a plan that holds more cores than this machine has (refused otherwise)")
    run.set_defaults(handler=_run, check=functools.partial(_check_run_flags, run))

    plan = sub.add_parser("plan", help="assign kernels to devices; write plan.yaml/json and report.md/html")
    plan.add_argument("config", help="run config YAML")
    plan.add_argument("--platform", default="local", help="catalogue platform name, a platform YAML path, or local")
    plan.add_argument("--objective", default="throughput", choices=["throughput", "power"])
    plan.add_argument("--out", help="output folder (default: plan-out)")
    plan.set_defaults(handler=_plan)

    profile = sub.add_parser("profile", help="calibrate the cost models on this machine's devices")
    profile.add_argument("--quick", action="store_true", help="smaller grid (about half the time)")
    profile.add_argument("--out", help="write the calibration here instead of the per-machine cache")
    profile.set_defaults(handler=_profile)

    simulate = sub.add_parser("simulate", help="discrete-event simulation of a plan on any platform")
    simulate.add_argument("config", help="run config YAML")
    simulate.add_argument("--platform", default="local", help="catalogue platform name, a platform YAML path, or local")
    simulate.add_argument("--plan", help="plan.yaml to simulate (default: optimize for throughput first)")
    simulate.add_argument("--out", help="write the plan's report with the simulated timeline here")
    simulate.set_defaults(handler=_simulate)

    devices = sub.add_parser("devices", help="list the hardware catalogue and this machine's devices")
    devices.set_defaults(handler=_devices)
    return parser


def _check_run_flags(run: argparse.ArgumentParser, args: argparse.Namespace, argv: Sequence[str]) -> None:
    """The --tune flags only make sense together and with --auto: a usage error (exit 2) otherwise."""
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
        return args.handler(args)
    except UserError as exc:
        print(f"pearl: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:  # a parallel run's RunInterrupted names its checkpoint
        print(f"pearl: {exc}" if str(exc) else "pearl: interrupted", file=sys.stderr)
        return 130

