"""Shared test helpers: config files written into a temporary folder, and a record of host-to-device transfers."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch


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


@pytest.fixture
def transfers(monkeypatch) -> list[str]:
    """The host-to-device traffic without an accelerator: each pinned allocation (``torch.empty(...,
    pin_memory=True)``, made as an ordinary one) or pinning copy (``Tensor.pin_memory``, a no-op), and each
    ``Tensor.to`` call, in order; upload to torch's ``meta`` device to stand for a GPU."""
    log: list[str] = []
    empty, to = torch.empty, torch.Tensor.to

    def pinned_empty(*args, pin_memory: bool = False, **kwargs):
        if pin_memory:
            log.append("pinned staging")
        return empty(*args, **kwargs)

    def pin(self):
        log.append("pin")
        return self

    def recording_to(self, *args, **kwargs):
        log.append(f"to non_blocking={kwargs.get('non_blocking', False)}")
        return to(self, *args, **kwargs)

    monkeypatch.setattr(torch, "empty", pinned_empty)
    monkeypatch.setattr(torch.Tensor, "pin_memory", pin)
    monkeypatch.setattr(torch.Tensor, "to", recording_to)
    return log
