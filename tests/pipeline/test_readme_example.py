"""The README's Python example is the first screen's CLI job: the zoo config's values, its run length, seed and
evaluation, and the plan ``--auto`` runs; run whole (slow) it learns CartPole."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pearl_py as pearl

ROOT = Path(__file__).resolve().parents[2]


def readme_example() -> str:
    """The README's first Python block (the one that trains)."""
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    return next(block for block in blocks if "pearl.train(" in block)


def test_the_readme_example_is_the_cli_job(monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(pearl, "train", lambda algo, **kwargs: calls.append((algo, kwargs)) or
                        type("Result", (), {"eval_return_mean": 0.0, "best_eval": {"return_mean": 0.0},
                                            "samples_per_second": 0.0})())
    exec(compile(readme_example(), "README.md", "exec"), {"__name__": "__main__"})
    (algo, kwargs), = calls
    job = pearl.load_config(ROOT / "examples" / "configs" / "dqn_cartpole.yaml")
    assert algo.config == job.make_algorithm().config and algo.env_id == job.settings.env
    assert kwargs["plan"] == "auto"  # `pearl run ... --auto`
    assert (kwargs["total_steps"], kwargs["seed"], kwargs["eval_freq"]) == (
        job.settings.total_steps, job.settings.seed, job.settings.eval_freq)
    assert kwargs.get("eval_episodes", 10) == job.settings.eval_episodes


@pytest.mark.slow  # calibrates this machine if no calibration is cached, then 50,000 env steps
def test_the_readme_example_learns(tmp_path):
    """Run as a script, as a user would (its processes import it again: the main guard is needed): its best
    periodic evaluation, whose policy the run keeps, reaches 475 (the final greedy policy of DQN on CartPole swings
    between evaluations: 423 at the end of seed 0's run)."""
    script = tmp_path / "example.py"
    script.write_text(readme_example())
    env = {k: v for k, v in os.environ.items() if k.startswith("PEARL_") or k == "HOME"}  # the calibration cache
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=3600,
                          env={**env, "PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    final, best, _ = map(float, proc.stdout.strip().splitlines()[-1].split())
    assert best >= 475, f"final {final}, best {best}"
    assert (tmp_path / "runs" / "dqn-py" / "best_policy.pt").is_file()
