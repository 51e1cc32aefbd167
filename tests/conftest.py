"""Shared test helpers: config files written into a temporary folder."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest


@pytest.fixture
def write_config(tmp_path: Path):
    """Write YAML text (dedented) to ``tmp_path/name`` and return its path."""
    def write(text: str, name: str = "config.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text).lstrip())
        return path

    return write
