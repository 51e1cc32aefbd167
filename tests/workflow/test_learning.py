"""Learning tests (slow): the zoo configs learn through `pearl run`, as a user runs them."""
from __future__ import annotations

import json

import pytest

from pearl_py.cli import main

pytestmark = pytest.mark.slow


def run(config: str, seed: int, out) -> dict:
    assert main(["run", config, "--seed", str(seed), "--out", str(out)]) == 0
    return json.loads((out / "result.json").read_text())


def test_dqn_cartpole_reaches_475_for_two_of_seeds_0_1_2(tmp_path):
    """Within 50k steps: the final evaluation or a periodic one (every 5k steps, 10 episodes) >= 475."""
    reached = []
    for seed in (0, 1, 2):
        result = run("examples/configs/dqn_cartpole.yaml", seed, tmp_path / f"seed{seed}")
        assert result["env_steps"] == 50_000
        best = max(result["eval_return_mean"], result["best_eval_return_mean"] or float("-inf"))
        reached.append(best >= 475)
        if sum(reached) == 2:
            break
    assert sum(reached) >= 2, f"seeds reaching 475: {reached}"


def test_ddpg_pendulum_reaches_minus_200(tmp_path):
    result = run("examples/configs/ddpg_pendulum.yaml", 0, tmp_path)
    assert result["env_steps"] == 20_000
    assert result["eval_return_mean"] >= -200


def test_ppo_cartpole_zoo_config_reaches_475_on_seeds_0_1_2(tmp_path):
    """The zoo's PPO CartPole-v1 config (1e5 steps): the final evaluation (10 episodes) >= 475 on every seed."""
    finals = {}
    for seed in (0, 1, 2):
        result = run("examples/configs/ppo_cartpole.yaml", seed, tmp_path / f"seed{seed}")
        assert result["env_steps"] == 391 * 256       # whole rollouts of 32 steps x 8 envs
        finals[seed] = result["eval_return_mean"]
    assert all(final >= 475 for final in finals.values()), f"final eval returns by seed: {finals}"


def test_a2c_cartpole_zoo_config_reaches_475_for_two_of_seeds_0_1_2(tmp_path):
    """The zoo's A2C CartPole-v1 config (5e5 steps): the final evaluation (10 episodes) >= 475 on 2 of 3 seeds."""
    finals = {}
    for seed in (0, 1, 2):
        result = run("examples/configs/a2c_cartpole.yaml", seed, tmp_path / f"seed{seed}")
        assert result["env_steps"] == 500_000
        finals[seed] = result["eval_return_mean"]
        if sum(final >= 475 for final in finals.values()) == 2:
            break
    assert sum(final >= 475 for final in finals.values()) >= 2, f"final eval returns by seed: {finals}"


@pytest.mark.parametrize("algorithm", ["td3", "sac"])
def test_td3_and_sac_pendulum_reach_minus_200_on_seeds_0_1_2(tmp_path, algorithm):
    """The zoo configs (20k steps): the final evaluation (10 greedy episodes) >= -200 for every seed."""
    returns = []
    for seed in (0, 1, 2):
        result = run(f"examples/configs/{algorithm}_pendulum.yaml", seed, tmp_path / f"seed{seed}")
        assert result["env_steps"] == 20_000
        returns.append(result["eval_return_mean"])
    assert min(returns) >= -200, f"{algorithm} final eval returns by seed: {returns}"


A2C_ACROBOT_BENCHMARK = -83.353 - 2 * 17.213
"""rl-baselines3-zoo's benchmark.md row ``a2c | Acrobot-v1 | -83.353 | 17.213 | 500k`` (DLR-RM/rl-baselines3-zoo,
benchmark.md at 0088472b): its mean minus two standard deviations, -117.779."""


def test_a2c_acrobot_zoo_entry_with_normalize_reaches_the_zoo_benchmark_on_two_of_seeds_0_1_2(tmp_path, capsys):
    """The zoo's a2c Acrobot-v1 entry as it is (normalize: true, 16 envs, 5e5 steps) through `pearl run --zoo`:
    the final evaluation (10 episodes) >= the zoo's benchmark on 2 of 3 seeds, and `pearl eval` of the normalized
    run reproduces that evaluation from the saved policy and statistics."""
    finals = {}
    for seed in (0, 1, 2):
        out = tmp_path / f"seed{seed}"
        assert main(["run", "--zoo", "tests/data/zoo/a2c.yml", "--env", "Acrobot-v1", "--seed", str(seed),
                     "--out", str(out)]) == 0
        result = json.loads((out / "result.json").read_text())
        assert result["env_steps"] == 500_000
        finals[seed] = result["eval_return_mean"]
        capsys.readouterr()
        assert main(["eval", str(out)]) == 0
        assert f"eval return {result['eval_return_mean']:.1f}" in capsys.readouterr().out
        if sum(final >= A2C_ACROBOT_BENCHMARK for final in finals.values()) == 2:
            break
    assert sum(final >= A2C_ACROBOT_BENCHMARK for final in finals.values()) >= 2, f"final eval returns: {finals}"
