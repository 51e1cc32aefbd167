"""Reading plan files: ``plan.yaml`` (with ``prediction.json`` beside it) or ``plan.json``, validated.

Every mistake is a :class:`~pearl_py.errors.ConfigError` naming ``file:line: key`` and what would
be valid (the CLI prints it on one line and exits with code 2). A plan of the first format (its prediction
inline under ``predicted``) is refused: make it again with ``pearl plan``.

Example::

    >>> plan = load_plan("out/plan/plan.yaml")      # pearl.load_plan
    >>> plan.prediction is not None           # out/plan/prediction.json was read with it
    True
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pearl_py.config.yaml_source import YamlDocument
from pearl_py.errors import ConfigError, UserError
from pearl_py.plan import FORMAT, MODES, Plan

PREDICTION_FILE = "prediction.json"
TOP_KEYS = ("format", "platform", "objective", "solver", "mode", "devices", "placements", "made_for", "prediction")
MADE_FOR_KEYS = ("algorithm", "env", "kernels")
"""``made_for``: the algorithm, env and kernels the plan was made for (absent in files of older pearl_py)."""
PLACEMENT_KEYS = ("device", "variant", "replicas")


def load_plan(path: str | Path) -> Plan:
    """Validate and read the ``plan.yaml`` or ``plan.json`` at ``path`` (a ``prediction.json`` beside a plan.yaml
    is read with it); a mistake raises a ConfigError naming ``file:line: key``."""
    path = Path(path)
    doc = YamlDocument.load(path)  # JSON is YAML too
    data = doc.data
    if not isinstance(data, dict):
        raise doc.error((), "a plan file is a mapping with platform, objective, mode, devices and placements")
    if "predicted" in data:
        raise doc.error(("predicted",), "a plan of the first format, which this pearl_py no longer reads; make the "
                                        "plan again with `pearl plan`")
    for key in data:
        if key not in TOP_KEYS:
            raise doc.error((key,), f"unknown key; a plan file has {', '.join(TOP_KEYS)}")
    for key in ("platform", "objective", "placements"):
        if key not in data:
            raise doc.error((), f"missing key {key!r}")
    for key in ("platform", "objective", "solver"):
        if key in data and (not isinstance(data[key], str) or not data[key]):
            raise doc.error((key,), f"must be a name, got {data[key]!r}")
    version = data.get("format", FORMAT)  # a hand-written plan may leave it out
    if version != FORMAT:
        raise doc.error(("format",), f"format {version!r} is not one this pearl_py reads ({FORMAT}); "
                                     "make the plan again with `pearl plan`")
    if "mode" in data and data["mode"] not in MODES:
        raise doc.error(("mode",), f"must be one of {', '.join(MODES)}, got {data['mode']!r}")
    devices = data.get("devices", {})
    if not isinstance(devices, dict) or not all(isinstance(k, str) for k in devices.values()):
        raise doc.error(("devices",), "must map device names to their kinds (cpu, gpu, fpga, ...)")
    placements = data["placements"]
    if not isinstance(placements, dict) or not placements:
        raise doc.error(("placements",), "must map kernel names to {device, variant, replicas}")
    for kernel, entry in placements.items():
        if not isinstance(entry, dict) or "device" not in entry:
            raise doc.error(("placements", kernel), "needs a device")
        unknown = set(entry) - set(PLACEMENT_KEYS)
        if unknown:
            raise doc.error(("placements", kernel, sorted(unknown)[0]), f"unknown key; a placement has "
                                                                        f"{', '.join(PLACEMENT_KEYS)}")
        for key in ("device", "variant"):
            if key in entry and (not isinstance(entry[key], str) or not entry[key]):
                raise doc.error(("placements", kernel, key), f"must be a name, got {entry[key]!r}")
        replicas = entry.get("replicas", 1)
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 1:
            raise doc.error(("placements", kernel, "replicas"), f"must be an integer >= 1, got {replicas!r}")
    _check_made_for(doc, data.get("made_for"))
    if "prediction" not in data:
        beside = path.parent / PREDICTION_FILE
        if beside.is_file():
            data = {**data, "prediction": _read_prediction(beside)}
    try:
        return Plan.from_dict(data)
    except UserError as exc:  # from_dict looks up on the platform the kinds of devices the file leaves out
        kinds = data.get("devices", {})
        unplaced = [k for k, entry in placements.items() if entry["device"] not in kinds]
        where = ("platform",) if isinstance(exc, ConfigError) or not unplaced else ("placements", unplaced[0], "device")
        raise doc.error(where, str(exc).removeprefix("plan: ")) from None
    except (TypeError, ValueError, KeyError) as exc:
        raise doc.error(("prediction",), f"cannot be read ({exc}); make the plan again with `pearl plan`") from None


def _check_made_for(doc: YamlDocument, made_for: Any) -> None:
    """``made_for``, when present: a mapping of an algorithm name, an env id and a list of kernel names."""
    if made_for is None:
        return
    if not isinstance(made_for, dict) or set(made_for) != set(MADE_FOR_KEYS):
        raise doc.error(("made_for",), f"must map {', '.join(MADE_FOR_KEYS)} (what the plan was made for)")
    for key in ("algorithm", "env"):
        if not isinstance(made_for[key], str) or not made_for[key]:
            raise doc.error(("made_for", key), f"must be a name, got {made_for[key]!r}")
    kernels = made_for["kernels"]
    if not isinstance(kernels, list) or not all(isinstance(k, str) and k for k in kernels):
        raise doc.error(("made_for", "kernels"), f"must be a list of kernel names, got {kernels!r}")


def _read_prediction(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"not a prediction written by pearl_py ({exc}); delete it or make the plan again with "
                          "`pearl plan`", file=str(path)) from None
    if not isinstance(data, dict):
        raise ConfigError("not a prediction written by pearl_py (expected a JSON object)", file=str(path))
    return data
