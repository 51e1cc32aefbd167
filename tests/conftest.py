"""Shared test helpers: config files written into a temporary folder."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest


@pytest.fixture(autouse=True, scope="session")
def _session_calibration_cache(tmp_path_factory):
    """Every test reads and writes calibrations in one empty folder of its own session, never the user's
    ``~/.cache/pearl_py``: a machine's cached calibration would otherwise turn modelled figures into calibrated
    ones and make results depend on what was profiled there before."""
    patch = pytest.MonkeyPatch()
    patch.setenv("PEARL_CACHE_DIR", str(tmp_path_factory.mktemp("pearl-cache")))
    yield
    patch.undo()


@pytest.fixture
def write_config(tmp_path: Path):
    """Write YAML text (dedented) to ``tmp_path/name`` and return its path."""
    def write(text: str, name: str = "config.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text).lstrip())
        return path

    return write
