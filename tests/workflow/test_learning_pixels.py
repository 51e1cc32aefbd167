"""Learning test (slow): DQN with a CNN on MinAtar Breakout against Stable-Baselines3's CnnPolicy DQN."""
from __future__ import annotations

import json

import pytest

from pearl_py.cli import main

pytestmark = pytest.mark.slow

SB3_FINAL_RETURN = {0: 5.2, 1: 6.5, 2: 5.6}
"""SB3's DQN (CnnPolicy with the same small CNN, same preprocessed env, same hyperparameters) on
examples/configs/dqn_minatar_breakout.yaml, 150k steps, final greedy evaluation over 10 episodes, per seed;
measured by `python benchmarks/vs_sb3.py examples/configs/dqn_minatar_breakout.yaml --seeds 0 1 2
--backends sb3` (SB3 2.x, torch 2.13 CPU, one thread) on 2026-11-23 (docs/api.md)."""


def test_dqn_cnn_on_minatar_breakout_matches_sb3_on_two_of_three_seeds(tmp_path):
    pytest.importorskip("minatar")
    finals, beaten = {}, []
    for seed in (0, 1, 2):
        out = tmp_path / f"seed{seed}"
        assert main(["run", "examples/configs/dqn_minatar_breakout.yaml", "--seed", str(seed), "--out", str(out)]) == 0
        result = json.loads((out / "result.json").read_text())
        assert result["env_steps"] == 150_000
        finals[seed] = result["eval_return_mean"]
        beaten.append(finals[seed] >= SB3_FINAL_RETURN[seed])
        if sum(beaten) == 2:
            break
    assert sum(beaten) >= 2, f"final eval returns {finals} against SB3's {SB3_FINAL_RETURN}"
