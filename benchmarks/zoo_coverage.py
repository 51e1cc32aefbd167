"""How much of rl-baselines3-zoo's hyperparameter files pearl_py reads as they are.

Every entry of the zoo's six files (kept in ``tests/data/zoo/`` with the zoo's MIT licence) goes through the
loader of ``pearl run --zoo`` (:func:`pearl_py.run_config.zoo.load_zoo`, which checks the env after every key).
An entry is *accepted* (a run config), *refused* (a :class:`~pearl_py.errors.UserError` naming the key pearl_py
lacks) or, every key read, its env id is *unknown* to this gymnasium (PyBullet, MiniGrid, ...). The zoo's ``atari``
entry is read for ``BreakoutNoFrameskip-v4`` and its ``default`` entry for CartPole-v1 (DQN) or Pendulum-v1 (the
others), ids the zoo would use them for. "Env installed here" counts the entries whose env this machine makes.
Anything else (a traceback) is a bug: it is printed and the script exits 1.

Usage::

    python benchmarks/zoo_coverage.py                 # counts, refusals by key
    python benchmarks/zoo_coverage.py --list          # also every entry's outcome
"""
from __future__ import annotations

import argparse
import sys
import traceback
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from pearl_py.envs.make import check_installed
from pearl_py.envs import EnvError, check_env_id
from pearl_py.config.yaml_source import YamlDocument
from pearl_py.errors import UserError
from pearl_py.run_config.zoo import read_entry

ZOO = Path(__file__).resolve().parent.parent / "tests" / "data" / "zoo"
FILES = ("a2c", "dqn", "ppo", "sac", "td3", "ddpg")
STAND_IN = {"atari": "BreakoutNoFrameskip-v4", "default": "Pendulum-v1"}
"""Env a pseudo-entry is read for (DQN's ``default``: CartPole-v1, its actions being discrete)."""


@dataclass(frozen=True)
class Outcome:
    file: str
    entry: str
    env: str
    kind: str
    """``accepted``, ``refused``, ``env unknown`` (every key read, the id unknown to this gymnasium) or ``bug``."""
    not_here: str
    """Why the env is not made here (its id unknown, a package missing); empty when it is."""
    detail: str = ""


def classify(file: Path, doc: YamlDocument, entry: str) -> Outcome:
    """What :func:`load_zoo` makes of ``entry`` of ``file`` (read as ``doc``; the env id is checked last)."""
    env = "CartPole-v1" if entry == "default" and file.stem == "dqn" else STAND_IN.get(entry, entry)
    try:
        check_env_id(env)
        check_installed(env)
        not_here = ""
    except EnvError as exc:
        not_here = str(exc)
    try:
        read_entry(doc, env, file.stem)
    except UserError as exc:
        if isinstance(exc.__cause__, EnvError):
            return Outcome(file.name, entry, env, "env unknown", not_here, str(exc.__cause__))
        key = getattr(exc, "key", None) or ""
        return Outcome(file.name, entry, env, "refused", not_here, f"{key.split('.')[-1] if key else '-'}: {exc}")
    except Exception:  # noqa: BLE001 - the point: a traceback is counted, shown and fails the script
        return Outcome(file.name, entry, env, "bug", not_here, traceback.format_exc())
    return Outcome(file.name, entry, env, "accepted", not_here)


def outcomes(folder: Path = ZOO) -> list[Outcome]:
    """Every entry of the six files, in file order."""
    out = []
    for name in FILES:
        file = folder / f"{name}.yml"
        doc = YamlDocument.load(file)
        out += [classify(file, doc, entry) for entry in doc.data]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="print every entry's outcome")
    args = parser.parse_args(argv)
    results = outcomes()
    kinds = Counter(o.kind for o in results)
    here = Counter(o.kind for o in results if not o.not_here)
    installed = sum(here.values())
    if args.list:
        for o in results:
            where = " (env not here)" if o.not_here else ""
            print(f"{o.file:9} {o.entry:36} {o.kind + where:32} {o.detail.splitlines()[0] if o.detail else ''}")
    print(f"{len(results)} entries in {', '.join(f + '.yml' for f in FILES)}; {kinds['bug']} failed with a traceback")
    print(f"  env installed here: {installed}, of which {here['accepted']} accepted "
          f"({100 * here['accepted'] / max(installed, 1):.0f}%), {here['refused']} refused")
    print(f"  every key read (accepted, or accepted but for an env id this gymnasium does not know): "
          f"{kinds['accepted'] + kinds['env unknown']} of {len(results)}")
    for key, n in Counter(o.detail.split(":")[0] for o in results if o.kind == "refused").most_common():
        print(f"  refused by {key}: {n}")
    missing = Counter(o.not_here.split("needs ")[-1].split(",")[0].split(":")[0].removeprefix("the ")
                      for o in results if "needs" in o.not_here)
    print(f"  env unknown to this gymnasium: {kinds['env unknown']}; env not installed here (entries read through): "
          + ", ".join(f"{k} {n}" for k, n in missing.most_common()))
    for o in results:
        if o.kind == "bug":
            print(f"BUG {o.file} {o.entry}:\n{o.detail}", file=sys.stderr)
    return 1 if kinds["bug"] else 0


if __name__ == "__main__":
    sys.exit(main())
