"""docs/extending.md's seven examples run as written, each in a fresh process (registries are process-wide)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "extending.md"
EXAMPLES = {"1. A new algorithm family": "hill climbing: eval return",
            "2. A new kernel kind": "obs_normalize runs on",
            "3. A new device kind": "learner_update on the NPU",
            "4. A new kernel variant": "learner_update ran 'foreach'",
            "5. A new env family": "noisy/CartPole-v1 (4,): eval return",
            "6. A new run-level feature": "round boundaries seen by the session",
            "7. A new device runtime": "learner_update is placed on xpu1 (a xpu device), but this machine has no XPU"}


def example(heading: str) -> str:
    """The Python blocks of the section ``## <heading>``, in order."""
    text = DOC.read_text()
    section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return "\n".join(re.findall(r"```python\n(.*?)```", section, re.S))


@pytest.mark.parametrize("heading", sorted(EXAMPLES))
def test_the_extending_example_runs_as_written(heading, tmp_path):
    code = example(heading)
    assert code, f"docs/extending.md has no code under '## {heading}'"
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, f"{heading}:\n{done.stderr[-3000:]}"
    assert EXAMPLES[heading] in done.stdout, done.stdout
