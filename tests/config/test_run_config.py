"""Config files: valid ones load into dataclasses; each kind of mistake names file, line and key."""
from __future__ import annotations

import pytest

import pearl_py as pearl
from pearl_py.errors import ConfigError

GOOD = """
algorithm: dqn
env: CartPole-v1
total_steps: 1000
seed: 3
hyperparameters:
  learning_rate: 2.3e-3
  batch_size: 64
  buffer_size: 1e5
  net_arch: [256, 256]
"""


def test_example_configs_load_with_zoo_values():
    dqn = pearl.load_config("examples/configs/dqn_cartpole.yaml")
    assert dqn.settings.total_steps == 50_000
    h = dqn.hyperparameters
    assert (h.learning_rate(1.0), h.batch_size, h.buffer_size, h.learning_starts) == (2.3e-3, 64, 100_000, 1000)
    assert (h.train_freq, h.gradient_steps, h.target_update_interval) == (256, 128, 10)
    assert (h.exploration_fraction, h.exploration_final_eps, h.net_arch) == (0.16, 0.04, (256, 256))
    ddpg = pearl.load_config("examples/configs/ddpg_pendulum.yaml")
    h = ddpg.hyperparameters
    assert (h.gamma, h.buffer_size, h.learning_starts, h.noise_std) == (0.98, 200_000, 10_000, 0.1)
    assert (h.batch_size, h.tau, h.net_arch) == (256, 0.005, (400, 300))  # SB3 defaults fill the gaps


def test_td3_and_sac_zoo_configs_load():
    td3 = pearl.load_config("examples/configs/td3_pendulum.yaml").hyperparameters
    assert isinstance(td3, pearl.TD3Config)
    assert (td3.gamma, td3.buffer_size, td3.learning_starts, td3.noise_std, td3.net_arch) == (
        0.98, 200_000, 10_000, 0.1, (400, 300))
    assert (td3.policy_delay, td3.target_policy_noise, td3.target_noise_clip, td3.target_interval) == (2, 0.2, 0.5, 2)
    sac = pearl.load_config("examples/configs/sac_pendulum.yaml").hyperparameters
    assert isinstance(sac, pearl.SACConfig) and sac == pearl.SACConfig(learning_rate=1e-3)  # the rest: SB3's
    lunar = pearl.load_config("examples/configs/sac_lunarlander.yaml")
    assert lunar.settings.env == "LunarLanderContinuous-v3" and lunar.hyperparameters.tau == 0.01
    assert pearl.load_config("examples/configs/td3_lunarlander.yaml").settings.total_steps == 300_000


@pytest.mark.parametrize("text, message", [
    ("  ent_coef: automatic\n", "hyperparameters.ent_coef: must be a number, 'auto' or 'auto_<initial value > 0>', "
                                "got 'automatic'"),
    ("  ent_coef: auto_0\n", "hyperparameters.ent_coef: must be a number, 'auto' or 'auto_<initial value > 0>', "
                             "got 'auto_0'"),
    ("  ent_coef: -0.1\n", "hyperparameters.ent_coef: must be >= 0.0, got -0.1"),
    ("  target_entropy: [1]\n", "hyperparameters.target_entropy: expected number or text, got list [1]"),
    ("  target_entropy: high\n", "hyperparameters.target_entropy: must be a number or 'auto', got 'high'"),
])
def test_sac_entropy_settings_are_checked_with_file_and_line(write_config, text, message):
    path = write_config("algorithm: sac\nenv: Pendulum-v1\nhyperparameters:\n  batch_size: 64\n" + text)
    with pytest.raises(ConfigError) as err:
        pearl.load_config(path)
    assert str(err.value) == f"{path}:5: {message}"


def test_sac_entropy_settings_read_as_sb3_does(write_config):
    def hyper(text):
        return pearl.load_config(write_config(f"algorithm: sac\nenv: Pendulum-v1\nhyperparameters:\n{text}")
                                 ).hyperparameters

    assert (hyper("  ent_coef: auto_0.1\n").initial_ent_coef, hyper("  ent_coef: auto_0.1\n").learns_ent_coef) == (
        0.1, True)
    assert (hyper("  ent_coef: 0.05\n").initial_ent_coef, hyper("  ent_coef: 0.05\n").learns_ent_coef) == (
        0.05, False)
    assert hyper("  target_entropy: -2.5\n").target_entropy == -2.5


def test_values_are_typed_and_defaults_are_sb3s(write_config):
    cfg = pearl.load_config(write_config(GOOD))
    assert cfg.settings.seed == 3
    h = cfg.hyperparameters
    assert isinstance(h, pearl.DQNConfig)
    assert h.buffer_size == 100_000 and isinstance(h.buffer_size, int)
    assert h.gamma == 0.99 and h.max_grad_norm == 10.0 and h.exploration_initial_eps == 1.0


@pytest.mark.parametrize("text, line, message", [
    ("hyperparameters:\n  learning_rat: 0.1\n", 6, "hyperparameters.learning_rat: unknown key; did you mean 'learning_rate'?"),
    ("hyperparameters:\n  batch_size: sixty\n", 6, "hyperparameters.batch_size: expected integer, got str 'sixty'"),
    ("hyperparameters:\n  gamma: 1.5\n", 6, "hyperparameters.gamma: must be <= 1.0, got 1.5"),
    ("hyperparameters:\n  batch_size: 0\n", 6, "hyperparameters.batch_size: must be >= 1, got 0"),
    ("hyperparameters:\n  net_arch: [64, -2]\n", 6, "hyperparameters.net_arch.1: must be >= 1, got -2"),
    ("hyperparameters:\n  double_q: 2\n", 6, "hyperparameters.double_q: expected true/false, got int 2"),
    ("hyperparameters:\n  learning_rate: .nan\n", 6, "hyperparameters.learning_rate: must be a finite number, got nan"),
    ("hyperparameters:\n  noise_std: 0.1\n", 6, "hyperparameters.noise_std: unknown key"),
    ("colour: blue\n", 5, "colour: unknown key"),
])
def test_bad_values_name_file_line_and_key(write_config, text, line, message):
    base = "algorithm: dqn\nenv: CartPole-v1\ntotal_steps: 100\nseed: 0\n"
    path = write_config(base + text)
    with pytest.raises(ConfigError) as err:
        pearl.load_config(path)
    assert str(err.value).startswith(f"{path}:{line}: {message}")


def test_unknown_env_and_algorithm(write_config):
    with pytest.raises(ConfigError, match=r"config.yaml:2: env: unknown gymnasium env id 'CartPol-v9'"):
        pearl.load_config(write_config("algorithm: dqn\nenv: CartPol-v9\n"))
    with pytest.raises(ConfigError, match=r"config.yaml:1: algorithm: unknown algorithm 'trpo'; known: a2c, ddpg, dqn, ppo"):
        pearl.load_config(write_config("algorithm: trpo\nenv: CartPole-v1\n"))


def test_wrong_action_space_for_the_algorithm(write_config):
    cfg = pearl.load_config(write_config("algorithm: dqn\nenv: Pendulum-v1\n"))
    with pytest.raises(pearl.UserError, match="dqn needs discrete actions, the env has continuous ones"):
        cfg.make_algorithm()


def test_invalid_yaml_and_missing_file(write_config, tmp_path):
    with pytest.raises(ConfigError, match=r"config.yaml:2: invalid YAML: mapping values are not allowed here"):
        pearl.load_config(write_config("algorithm: dqn\nenv: a: b\n"))
    with pytest.raises(ConfigError, match="nope.yaml: file not found"):
        pearl.load_config(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="key given twice"):
        pearl.load_config(write_config("seed: 1\nseed: 2\n"))


def test_overrides_are_validated_too(write_config):
    cfg = pearl.load_config(write_config(GOOD))
    assert cfg.with_overrides(total_steps=500, seed=None).settings.total_steps == 500
    with pytest.raises(ConfigError, match="total_steps: must be >= 1, got 0"):
        cfg.with_overrides(total_steps=0)


def test_the_dedicated_key_and_flag_declare_the_machine_dedicated(write_config):
    from pearl_py.cli.main import build_parser

    assert pearl.load_config(write_config(GOOD)).settings.dedicated is False
    cfg = pearl.load_config(write_config(GOOD + "dedicated: true\n"))
    assert cfg.settings.dedicated is True
    flags = build_parser().parse_args(["run", "x.yaml"])
    assert flags.dedicated is None and flags.adapt is True     # the config's key stands; the monitor is on
    flags = build_parser().parse_args(["run", "x.yaml", "--dedicated", "--no-adapt"])
    assert pearl.load_config(write_config(GOOD)).with_overrides(dedicated=flags.dedicated).settings.dedicated
    assert flags.adapt is False
    with pytest.raises(ConfigError, match="dedicated"):
        pearl.load_config(write_config(GOOD + "dedicated: maybe\n"))


def test_python_api_validates_keywords():
    algo = pearl.DQN("CartPole-v1", batch_size=64, net_arch=[32])
    assert algo.config.net_arch == (32,)
    with pytest.raises(ConfigError, match="batch_sise: unknown key; did you mean 'batch_size'"):
        pearl.DQN("CartPole-v1", batch_sise=64)
    merged = pearl.DQN("CartPole-v1", config=algo.config, gamma=0.9)
    assert (merged.config.gamma, merged.config.net_arch) == (0.9, (32,))


def test_config_reference_in_docs_matches_the_code():
    from pathlib import Path

    from pearl_py.cli.reference import render

    assert Path("docs/config.md").read_text() == render(), "regenerate: python -m pearl_py.cli.reference > docs/config.md"
