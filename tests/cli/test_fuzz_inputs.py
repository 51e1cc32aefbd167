"""Malformed configs, plans, platform files and flag combinations, generated: each exits 2 with one line, no
traceback, and leaves nothing behind (no process, no shared-memory segment, no file but the inputs).

Every generator draws a mutation that makes its input invalid (a wrong type, a value out of range, an unknown
name, a kernel too many or missing, a truncation, bytes that are no text, a YAML syntax character, a flag
out of place...), so a case that trains instead of refusing fails the test. The examples are derandomized:
the same cases run every time; ``FUZZ_CASES`` (printed with ``-s``) says how many each strategy generated.
"""
from __future__ import annotations

import contextlib
import io
import math
import string
import tempfile
from collections import Counter
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from process_probes import children, shm_segments

from pearl_py.algorithms import REGISTRY
from pearl_py.cli import main
from pearl_py.plan_file import PLACEMENT_KEYS, TOP_KEYS
from pearl_py.platform.local import usable_cores

FUZZ_CASES: Counter[str] = Counter()
"""Cases run per strategy in this session."""

CONFIG = {"algorithm": "dqn", "env": "CartPole-v1", "total_steps": 1000, "seed": 0, "eval_episodes": 1,
          "hyperparameters": {"learning_starts": 100, "train_freq": 50, "gradient_steps": 5, "batch_size": 16,
                              "buffer_size": 5000, "net_arch": [16], "gamma": 0.99, "learning_rate": 0.001}}
KERNELS = ("env_step", "inference", "replay_insert", "replay_sample", "learner_update", "param_sync")
PLAN = {"format": 2, "platform": "local", "objective": "throughput", "solver": "none", "mode": "overlapped",
        "devices": {"cpu": "cpu"},
        "placements": {k: {"device": "cpu", "variant": "reference", "replicas": 1} for k in KERNELS}}
PLATFORM = {"links": {"fuzz-link": {"bandwidth_gbs": 12.0, "latency_us": 1.0}},
            "platforms": {"fuzz": {"devices": {"cpu": {"type": "xeon-gold-6326"}, "gpu": {"type": "a100-sxm4-80gb"}},
                                   "links": [{"between": ["cpu", "gpu"], "type": "fuzz-link"}]}}}

NAME = st.text(alphabet=string.ascii_lowercase + "_", min_size=3, max_size=10)
NOT_AN_INT = st.one_of(st.text(alphabet=string.ascii_letters, min_size=1, max_size=6), st.booleans(),
                       st.lists(st.integers(), max_size=3), st.dictionaries(NAME, st.integers(), max_size=2),
                       st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: not float(x).is_integer()))
NOT_FINITE = st.sampled_from([math.nan, math.inf, -math.inf])
SYNTAX = st.sampled_from(list("[]{}&*!|>%@`\"'"))
FUZZ = settings(deadline=None, derandomize=True, database=None, print_blob=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                       HealthCheck.function_scoped_fixture])


def refused(strategy: str, files: dict[str, str | bytes], argv: list[str], names: str = "") -> None:
    """Write ``files`` into a fresh folder and run ``argv`` there; assert exit 2, one line naming ``names`` (a
    fragment the message must hold: the key, the file), no traceback, and nothing left behind."""
    FUZZ_CASES[strategy] += 1
    before = children()
    with tempfile.TemporaryDirectory(prefix="pearl-fuzz-") as tmp, contextlib.chdir(tmp):
        folder = Path(tmp)
        for name, content in files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(content if isinstance(content, bytes) else content.encode())
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()) as out:
            try:
                code = main(argv)
            except SystemExit as exit_:  # argparse
                code = exit_.code
        text = err.getvalue()
        assert code == 2, f"exit {code} for {argv}; stdout {out.getvalue()!r}, stderr {text!r}"
        assert text.count("\n") == 1 and text.startswith("pearl") and ": error: " in text, text
        assert "Traceback" not in text and names in text, (names, text)
        assert sorted(p.name for p in folder.iterdir()) == sorted({n.split("/")[0] for n in files}), "a file was written"
        if (folder / "taken").is_dir():
            assert [p.name for p in (folder / "taken").iterdir()] == ["result.json"], "a run folder was written into"
    assert children() <= before, "a process was started"
    assert shm_segments() == set(), "a shared-memory segment was left"


def dump(data: object) -> str:
    return yaml.safe_dump(data, sort_keys=False)


def corrupt(draw: st.DrawFn, text: str, kind: str, file: str) -> tuple[str | bytes, str]:
    """``text`` with a YAML syntax character or a byte that is no UTF-8 put somewhere, and what the error names."""
    at = draw(st.integers(0, len(text)))
    if kind == "syntax":
        return text[:at] + draw(SYNTAX) + text[at:], file
    return text[:at].encode() + bytes([draw(st.integers(0x80, 0xff))]) + text[at:].encode(), "not a text file"


# -- configs ---------------------------------------------------------------------------------------------------
INT_KEYS = ("learning_starts", "train_freq", "gradient_steps", "batch_size", "buffer_size", "target_update_interval")


@st.composite
def bad_configs(draw: st.DrawFn) -> tuple[str | bytes, str]:
    """A config with one mistake, and the key (or file) its error must name."""
    config = yaml.safe_load(dump(CONFIG))
    hyper = config["hyperparameters"]
    kind = draw(st.sampled_from(["top key", "hyper key", "wrong type", "below range", "float range", "not finite",
                                 "learning starts", "small buffer", "huge widths", "huge seed", "algorithm", "env",
                                 "syntax", "binary", "empty", "not a mapping"]))
    key = draw(st.sampled_from(INT_KEYS))
    if kind == "top key":
        key = draw(NAME.filter(lambda k: k not in CONFIG))
        config[key] = draw(st.integers())
        return dump(config), f"{key}: unknown key"
    if kind == "hyper key":
        key = draw(NAME.filter(lambda k: k not in REGISTRY["dqn"].Config.__dataclass_fields__))
        hyper[key] = 1
        return dump(config), f"hyperparameters.{key}: unknown key"
    if kind == "wrong type":
        key = draw(st.sampled_from(INT_KEYS + ("total_steps", "seed")))
        (config if key in ("total_steps", "seed") else hyper)[key] = draw(NOT_AN_INT)
        return dump(config), f"{'' if key in ('total_steps', 'seed') else 'hyperparameters.'}{key}: expected integer"
    if kind == "below range":
        hyper[key] = draw(st.integers(max_value=-1 if key == "learning_starts" else 0))
        return dump(config), f"hyperparameters.{key}: must be >= "
    if kind == "float range":
        key = draw(st.sampled_from(["gamma", "learning_rate"]))
        hyper[key] = draw(st.floats(min_value=1.0001, max_value=1e300) if key == "gamma"
                          else st.floats(max_value=0.0, min_value=-1e300))
        return dump(config), f"hyperparameters.{key}: must be "
    if kind == "not finite":
        key = draw(st.sampled_from(["gamma", "learning_rate", "exploration_fraction"]))
        hyper[key] = draw(NOT_FINITE)
        return dump(config), f"hyperparameters.{key}: must be a finite number"
    if kind == "learning starts":
        hyper["learning_starts"] = draw(st.integers(min_value=CONFIG["total_steps"], max_value=10**12))
        return dump(config), "hyperparameters.learning_starts: "
    if kind == "small buffer":
        hyper["buffer_size"] = draw(st.integers(min_value=1, max_value=hyper["batch_size"] - 1))
        return dump(config), "hyperparameters.buffer_size: "
    if kind == "huge widths":
        hyper["net_arch"] = draw(st.lists(st.integers(min_value=10**6, max_value=10**9), min_size=2, max_size=3))
        return dump(config), "hyperparameters.net_arch: the learner's networks would take"
    if kind == "huge seed":
        config["seed"] = draw(st.integers(min_value=2**32, max_value=10**30))
        return dump(config), "seed: must be <= 4294967295"
    if kind == "algorithm":
        config["algorithm"] = draw(NAME.filter(lambda k: k not in REGISTRY))
        return dump(config), "algorithm: unknown algorithm"
    if kind == "env":
        config["env"] = draw(NAME) + "-v" + str(draw(st.integers(0, 9)))
        return dump(config), "env: "
    if kind in ("syntax", "binary"):
        return corrupt(draw, dump(config), kind, "config.yaml")
    if kind == "empty":
        return draw(st.sampled_from(["", "\n\n", "# nothing here\n", "{}\n"])), "the config is empty"
    return draw(st.sampled_from(["- a\n- b\n", "42\n", "just text\n", "null\n", "[]"])), "a run config is a mapping"


@settings(FUZZ, max_examples=200)
@given(case=bad_configs())
def test_generated_bad_configs_are_refused(case):
    text, names = case
    refused("config", {"config.yaml": text}, ["run", "config.yaml", "--out", "out"], names)


# -- plans -----------------------------------------------------------------------------------------------------
@st.composite
def bad_plans(draw: st.DrawFn) -> tuple[str | bytes, str]:
    """A plan with one mistake, and the key (or file) its error must name."""
    plan = yaml.safe_load(dump(PLAN))
    placements = plan["placements"]
    kernel = draw(st.sampled_from(KERNELS))
    kind = draw(st.sampled_from(["variant", "device", "rename", "drop", "replicas type", "replicas", "threads",
                                 "actors", "top key", "placement key", "platform", "mode", "format", "kind",
                                 "truncated", "binary"]))
    if kind == "variant":
        placements[kernel]["variant"] = draw(NAME.filter(lambda v: v not in ("reference", "fused", "compiled")))
        return dump(plan), f"placements.{kernel}.variant: no {kernel} variant"
    if kind == "device":
        placements[kernel]["device"] = draw(NAME.filter(lambda d: d != "cpu"))
        return dump(plan), f"placements.{kernel}.device: platform 'local' has no device"
    if kind == "rename":
        name = draw(NAME.filter(lambda k: k not in KERNELS))
        placements[name] = placements.pop(kernel)
        return dump(plan), f"placements.{name}: dqn has no kernel"
    if kind == "drop":
        for name in draw(st.lists(st.sampled_from(KERNELS), min_size=1, unique=True)):
            placements.pop(name)
        return dump(plan), "placements: " if placements else "placements: must map kernel names"
    if kind == "replicas type":
        placements[kernel]["replicas"] = draw(st.one_of(NOT_AN_INT, st.integers(max_value=0)))
        return dump(plan), f"placements.{kernel}.replicas: must be an integer >= 1"
    if kind == "replicas":
        kernel = draw(st.sampled_from(["replay_insert", "replay_sample", "param_sync"]))
        placements[kernel]["replicas"] = draw(st.integers(min_value=2, max_value=10**9))
        return dump(plan), f"placements.{kernel}.replicas: {kernel} does not replicate"
    if kind == "threads":
        placements["learner_update"]["replicas"] = draw(st.integers(min_value=usable_cores() + 1, max_value=10**9))
        return dump(plan), "placements.learner_update.replicas: "
    if kind == "actors":  # more actor processes than cores, or than the memory holds
        placements["env_step"]["replicas"] = draw(st.integers(min_value=usable_cores() + 1, max_value=10**7))
        return dump(plan), "placements.env_step.replicas: "
    if kind == "top key":
        name = draw(NAME.filter(lambda k: k not in TOP_KEYS))
        plan[name] = 1
        return dump(plan), f"{name}: unknown key"
    if kind == "placement key":
        name = draw(NAME.filter(lambda k: k not in PLACEMENT_KEYS))
        placements[kernel][name] = 1
        return dump(plan), f"placements.{kernel}.{name}: unknown key"
    if kind == "platform":
        plan["platform"] = draw(st.one_of(NAME.filter(lambda p: p != "local"), st.integers(), st.lists(NAME)))
        return dump(plan), "platform: "
    if kind == "mode":
        plan["mode"] = draw(st.one_of(NAME.filter(lambda m: m not in ("serialized", "overlapped")), st.integers()))
        return dump(plan), "mode: must be one of serialized, overlapped"
    if kind == "format":
        plan["format"] = draw(st.one_of(st.integers().filter(lambda f: f not in (1, 2)), NAME))
        return dump(plan), "format: format "
    if kind == "kind":
        plan["devices"]["cpu"] = draw(NAME.filter(lambda k: k != "cpu"))
        return dump(plan), "devices.cpu: 'cpu' is a cpu device on platform 'local', not a"
    text = dump(plan)
    if kind == "truncated":  # any prefix lacks a whole param_sync placement, the last one
        return text[:draw(st.integers(0, text.rindex("replicas: 1") + len("replicas: ")))], "plan.yaml"
    return corrupt(draw, text, kind, "plan.yaml")


@settings(FUZZ, max_examples=150)
@given(case=bad_plans())
def test_generated_bad_plans_are_refused(case):
    text, names = case
    refused("plan", {"config.yaml": dump(CONFIG), "plan.yaml": text},
            ["run", "config.yaml", "--plan", "plan.yaml", "--out", "out"], names)


# -- platform files ---------------------------------------------------------------------------------------------
@st.composite
def bad_platforms(draw: st.DrawFn) -> tuple[str, str]:
    """A platform file with one mistake, and the key its error must name."""
    data = yaml.safe_load(dump(PLATFORM))
    link, platform = data["links"]["fuzz-link"], data["platforms"]["fuzz"]
    kind = draw(st.sampled_from(["not finite", "number", "link key", "platform key", "group key", "device type",
                                 "count", "link end", "link type", "two platforms", "section", "no platform"]))
    field = draw(st.sampled_from(["bandwidth_gbs", "latency_us"]))
    if kind == "not finite":
        link[field] = draw(NOT_FINITE)
        return dump(data), f"links.fuzz-link.{field}: must be a finite number"
    if kind == "number":
        link[field] = draw(st.one_of(st.floats(max_value=0.0, min_value=-1e300), st.booleans(),
                                     st.text(alphabet=string.ascii_letters, min_size=1), st.lists(st.integers())))
        return dump(data), f"links.fuzz-link.{field}: must be "
    if kind == "link key":
        name = draw(NAME.filter(lambda k: k not in ("bandwidth_gbs", "latency_us")))
        link[name] = 1.0
        return dump(data), f"links.fuzz-link.{name}: unknown key"
    if kind == "platform key":
        name = draw(NAME.filter(lambda k: k not in ("description", "devices", "links", "nodes", "node", "network")))
        platform[name] = 1
        return dump(data), f"platforms.fuzz.{name}: unknown key"
    if kind == "group key":
        name = draw(NAME.filter(lambda k: k not in ("type", "count")))
        platform["devices"]["cpu"][name] = 1
        return dump(data), f"platforms.fuzz.devices.cpu.{name}: unknown key"
    if kind == "device type":
        platform["devices"]["gpu"]["type"] = draw(NAME)
        return dump(data), "platforms.fuzz.devices.gpu.type: unknown device type"
    if kind == "count":
        platform["devices"]["gpu"]["count"] = draw(st.one_of(st.integers(max_value=0), NOT_AN_INT))
        return dump(data), "platforms.fuzz.devices.gpu.count: must be a whole number >= 1"
    if kind == "link end":
        platform["links"][0]["between"] = ["cpu", draw(NAME.filter(lambda g: g not in ("cpu", "gpu")))]
        return dump(data), "platforms.fuzz.links.0.between: link to unknown device"
    if kind == "link type":
        platform["links"][0]["type"] = draw(NAME)
        return dump(data), "platforms.fuzz.links.0.type: unknown link type"
    if kind == "two platforms":
        data["platforms"][draw(NAME)] = platform
        return dump(data), "must define exactly one platform, found 2"
    if kind == "section":
        name = draw(NAME.filter(lambda s: s not in ("cpus", "gpus", "fpgas", "links", "platforms")))
        data[name] = {}
        return dump(data), f"{name}: unknown key"
    del data["platforms"]
    return dump(data), "must define exactly one platform, found 0"


@settings(FUZZ, max_examples=80)
@given(case=bad_platforms())
def test_generated_bad_platform_files_are_refused(case):
    text, names = case
    refused("platform", {"config.yaml": dump(CONFIG), "platform.yaml": text},
            ["plan", "config.yaml", "--platform", "platform.yaml", "--out", "out"], names)


# -- flag combinations --------------------------------------------------------------------------------------------
@st.composite
def bad_flags(draw: st.DrawFn) -> list[str]:
    """One to three misused flags of ``pearl run``, among flags used well."""
    def misuse() -> list[str]:
        kind = draw(st.sampled_from(["steps", "steps text", "seed", "tune", "top-k", "tune top-k", "tune seconds",
                                     "auto and plan", "backend", "objective", "out file", "out proc", "out under file",
                                     "out taken", "resume missing", "resume file", "resume empty", "plan missing",
                                     "plan word", "unknown flag"]))
        return {
            "steps": lambda: ["--steps", str(draw(st.integers(max_value=0)))],
            "steps text": lambda: ["--steps", draw(NAME)],
            "seed": lambda: ["--seed", str(draw(st.one_of(st.integers(max_value=-1),
                                                          st.integers(min_value=2**32, max_value=10**30))))],
            "tune": lambda: ["--tune"],
            "top-k": lambda: ["--tune-top-k", str(draw(st.integers(1, 9)))],
            "tune top-k": lambda: ["--auto", "--tune", "--tune-top-k", str(draw(st.integers(max_value=0)))],
            "tune seconds": lambda: ["--auto", "--tune", "--tune-seconds",
                                     str(draw(st.one_of(st.floats(max_value=0.0), NOT_FINITE)))],
            "auto and plan": lambda: ["--auto", "--plan", "plan.yaml"],
            "backend": lambda: ["--backend", draw(NAME.filter(lambda b: b not in ("local", "ray")))],
            "objective": lambda: ["--objective", draw(NAME.filter(lambda o: o not in ("throughput", "power")))],
            "out file": lambda: ["--out", "afile"],
            "out proc": lambda: ["--out", "/proc/" + draw(NAME)],
            "out under file": lambda: ["--out", "afile/" + draw(NAME)],
            "out taken": lambda: ["--out", "taken"],
            "resume missing": lambda: ["--resume", draw(NAME)],
            "resume file": lambda: ["--resume", "afile"],
            "resume empty": lambda: ["--resume", "."],
            "plan missing": lambda: ["--plan", draw(NAME) + ".yaml"],
            "plan word": lambda: ["--plan", draw(NAME)],
            "unknown flag": lambda: ["--" + draw(NAME)],
        }[kind]()

    flags = [flag for _ in range(draw(st.integers(1, 3))) for flag in misuse()]
    fine = draw(st.lists(st.sampled_from([["--seed", "3"], ["--steps", "500"], ["--objective", "power"]]),
                         max_size=2))
    order = draw(st.permutations([flags] + fine))
    return [flag for group in order for flag in group]


@settings(FUZZ, max_examples=120)
@given(flags=bad_flags())
def test_generated_bad_flag_combinations_are_refused(flags):
    files = {"config.yaml": dump(CONFIG), "afile": "not a folder", "taken/result.json": "{}"}  # taken: a run's
    refused("flags", files, ["run", "config.yaml", *flags])


@pytest.fixture(scope="module", autouse=True)
def report_cases():
    yield
    print(f"\nfuzz cases: {dict(FUZZ_CASES)}, {sum(FUZZ_CASES.values())} in all")
