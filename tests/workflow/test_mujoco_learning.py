"""MuJoCo (the ``mujoco`` extra): the zoo's SAC HalfCheetah-v4 entry as it is, briefly, through ``pearl run``."""
from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path

import pytest

from pearl_py.cli import main

pytest.importorskip("mujoco", reason="the mujoco extra: pip install -c constraints.txt '.[mujoco]'")
pytestmark = pytest.mark.slow

ZOO = Path(__file__).parents[1] / "data" / "zoo"


def test_the_zoos_sac_halfcheetah_entry_learns_beyond_its_random_warm_up(tmp_path):
    """20k steps of the entry as it is (learning_starts 10000: the first 10 episodes, 1000 steps each, take uniform
    random actions, so the same run measures a random policy; then 10k gradient steps). The greedy policy's
    evaluation (10 episodes) must beat the random episodes' mean. Measured (seed 0, this machine): random -256 +- 85
    over the warm-up's 10 episodes, greedy -237 +- 31: at 20k steps the entry has only begun to learn, so this
    asserts the run and a policy no worse than random, not the zoo's benchmark (1M steps)."""
    out = tmp_path / "run"
    assert main(["run", "--zoo", str(ZOO / "sac.yml"), "--env", "HalfCheetah-v4", "--steps", "20000", "--seed", "0",
                 "--out", str(out)]) == 0
    result = json.loads((out / "result.json").read_text())
    assert result["env_steps"] == 20_000 and result["gradient_steps"] == 10_000
    assert all((out / name).is_file() for name in ("report.md", "policy.pt", "episodes.csv"))
    with open(out / "episodes.csv") as file:
        episodes = [(int(row["step"]), float(row["episode_return"])) for row in csv.DictReader(file)]
    random = [ret for step, ret in episodes if step <= 10_000]
    assert len(random) == 10 and len(episodes) == 20
    assert result["eval_return_mean"] > statistics.mean(random), (result["eval_return_mean"], random)
