"""Ctrl-C (SIGINT) or SIGTERM in a serial run writes a stop checkpoint named in the message; --resume continues
from it to exactly the run's total steps, with the update count of a run never stopped."""
from __future__ import annotations

import json
import os
import signal

import pytest

import pearl_py as pearl
from pearl_py.cli import main
from pearl_py.runtime.on_policy_collect import RolloutCollector

CONFIGS = {
    "dqn": """
        algorithm: dqn
        env: CartPole-v1
        total_steps: 1000
        seed: 0
        eval_episodes: 1
        hyperparameters:
          learning_starts: 100
          train_freq: 50
          gradient_steps: 5
          batch_size: 16
          net_arch: [16]
        """,
    "ppo": """
        algorithm: ppo
        env: CartPole-v1
        total_steps: 512
        seed: 2
        eval_episodes: 1
        hyperparameters:
          n_envs: 4
          n_steps: 32
          batch_size: 64
          n_epochs: 2
          net_arch: [16]
        """,
}
PER_STEP = {"dqn": (pearl.DQN, "after_env_step"), "ppo": (RolloutCollector, "step")}
"""What the serial loops call once per vector step: where the test sends the signal from."""


def _signal_at(monkeypatch, name: str, call: int, signum: int) -> None:
    """Send ``signum`` to this process during the ``call``-th per-step call of ``name``'s serial loop."""
    owner, method = PER_STEP[name]
    original, calls = getattr(owner, method), [0]

    def step(self, *args, **kwargs):
        calls[0] += 1
        if calls[0] == call:
            os.kill(os.getpid(), signum)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(owner, method, step)


@pytest.mark.parametrize("name, signum", [("dqn", signal.SIGINT), ("ppo", signal.SIGTERM)])
def test_a_stopped_serial_run_resumes_to_exactly_its_total_steps(write_config, tmp_path, monkeypatch, capsys,
                                                                name, signum):
    config = str(write_config(CONFIGS[name]))
    whole, stopped = tmp_path / "whole", tmp_path / "stopped"
    assert main(["run", config, "--out", str(whole)]) == 0
    expected = json.loads((whole / "result.json").read_text())
    capsys.readouterr()

    with monkeypatch.context() as patch:
        _signal_at(patch, name, 400 if name == "dqn" else 70, signum)
        assert main(["run", config, "--out", str(stopped)]) == 130
    checkpoint = stopped / "checkpoint"
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"pearl: run interrupted by {signal.Signals(signum).name}; checkpoint written to {checkpoint}")
    summary = json.loads((checkpoint / "checkpoint.json").read_text())
    assert 0 < summary["transitions"] < expected["env_steps"] and not (stopped / "result.json").exists()

    assert main(["run", config, "--resume", str(stopped)]) == 0
    resumed = json.loads((stopped / "result.json").read_text())
    assert resumed["env_steps"] == expected["env_steps"]
    assert resumed["gradient_steps"] == expected["gradient_steps"]
