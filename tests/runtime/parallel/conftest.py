"""Every parallel-runtime test must leave no child process, zombie or shared-memory segment behind."""
from __future__ import annotations

import pytest
from process_probes import children, shm_segments, zombies


@pytest.fixture(autouse=True)
def no_leaks():
    before = children()
    yield
    assert children() - before == set(), "a child process outlived the run"
    assert zombies() == set(), "an exited child was never reaped"
    assert shm_segments() == set(), "a shared-memory segment outlived the run"
