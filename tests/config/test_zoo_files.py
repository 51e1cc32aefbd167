"""rl-baselines3-zoo's own hyperparameter files (tests/data/zoo, MIT) through the loader: no traceback, and as many
entries read as benchmarks/zoo_coverage.py reached (``python benchmarks/zoo_coverage.py`` prints the counts)."""
from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "zoo_coverage.py"
if not _PATH.exists():
    pytest.skip("benchmarks/ is not shipped with an installed package", allow_module_level=True)
_spec = importlib.util.spec_from_file_location("zoo_coverage", _PATH)
coverage = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = coverage  # its dataclass looks its module up
_spec.loader.exec_module(coverage)

KEYS_READ = 54
"""Entries whose every key pearl_py reads (accepted, or accepted but for an env not installed here), of 139."""


def test_every_zoo_entry_is_read_or_refused_by_name():
    results = coverage.outcomes()
    kinds = Counter(o.kind for o in results)
    assert len(results) == 139 and kinds["bug"] == 0, [o.detail for o in results if o.kind == "bug"]
    assert kinds["accepted"] + kinds["env not installed"] >= KEYS_READ
    refused = [o for o in results if o.kind == "refused"]
    assert all(o.detail.split(":")[0] != "-" for o in refused), "a refusal that names no key"
