"""rl-baselines3-zoo's own hyperparameter files (tests/data/zoo, MIT) through the loader: no traceback, and as many
entries read as benchmarks/zoo_coverage.py reached (``python benchmarks/zoo_coverage.py`` prints the counts)."""
from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from pathlib import Path

import pytest

from pearl_py.errors import ConfigError
from pearl_py.run_config.zoo import load_zoo

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "zoo_coverage.py"
if not _PATH.exists():
    pytest.skip("benchmarks/ is not shipped with an installed package", allow_module_level=True)
_spec = importlib.util.spec_from_file_location("zoo_coverage", _PATH)
coverage = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = coverage  # its dataclass looks its module up
_spec.loader.exec_module(coverage)

KEYS_READ = 118
"""Entries whose every key pearl_py reads (accepted, or accepted but for an env id this gymnasium lacks), of 139."""


def test_every_zoo_entry_is_read_or_refused_by_name():
    results = coverage.outcomes()
    kinds = Counter(o.kind for o in results)
    assert len(results) == 139 and kinds["bug"] == 0, [o.detail for o in results if o.kind == "bug"]
    assert kinds["accepted"] + kinds["env unknown"] >= KEYS_READ
    refused = [o for o in results if o.kind == "refused"]
    assert all(o.detail.split(":")[0] != "-" for o in refused), "a refusal that names no key"


ZOO = Path(__file__).resolve().parents[1] / "data" / "zoo"


def test_gradient_steps_minus_one_is_one_step_per_env_step_of_the_round():
    cfg = load_zoo(ZOO / "dqn.yml", "Acrobot-v1")
    assert (cfg.hyperparameters.train_freq, cfg.hyperparameters.gradient_steps) == (4, 4)
    assert load_zoo(ZOO / "dqn.yml", "Acrobot-v1", sets=["n_envs=2"]).hyperparameters.gradient_steps == 8


@pytest.mark.parametrize("value, message", [
    ("0", "zoo.yml:3: CartPole-v1.gradient_steps: must be >= 1, or -1 (as many as the env steps of a round), got 0"),
    ("-2", "zoo.yml:3: CartPole-v1.gradient_steps: must be >= -1, got -2"),
    ("all", "zoo.yml:3: CartPole-v1.gradient_steps: expected integer, got str 'all'"),
])
def test_bad_gradient_steps_are_located(tmp_path, value, message):
    path = tmp_path / "zoo.yml"
    path.write_text(f"CartPole-v1:\n  train_freq: 4\n  gradient_steps: {value}\n")
    with pytest.raises(ConfigError) as err:
        load_zoo(path, "CartPole-v1", algorithm="dqn")
    assert str(err.value) == f"{path.parent}/{message}"


def test_set_repairs_an_entry_before_it_is_validated(tmp_path):
    path = tmp_path / "sac.yml"
    refused = "  use_sde: True\n  optimize_memory_usage: True\n"
    path.write_text((ZOO / "sac.yml").read_text().replace("  use_sde: True\n", refused, 1))
    with pytest.raises(ConfigError, match=r"sac.yml:21: MountainCarContinuous-v0.optimize_memory_usage: the memory-"):
        load_zoo(path, "MountainCarContinuous-v0")
    cfg = load_zoo(path, "MountainCarContinuous-v0", sets=[
        "optimize_memory_usage=false", "policy_kwargs=dict(net_arch=[32, 32])", "seed=3", "total_steps=1000"])
    assert (cfg.settings.seed, cfg.settings.total_steps, cfg.hyperparameters.train_freq,
            cfg.hyperparameters.net_arch, cfg.hyperparameters.use_sde) == (3, 1000, 32, (32, 32), True)


@pytest.mark.parametrize("flag, message", [
    ("batch_size=-1", "pearl: error: --set batch_size=-1: batch_size: must be >= 1, got -1"),
    ("seed=-1", "pearl: error: --set seed=-1: seed: must be >= 0, got -1"),
    ("normalize=maybe", "pearl: error: --set normalize=maybe: normalize: expected true/false or a mapping of "
                        "norm_obs, norm_reward, clip_obs, clip_reward, gamma, epsilon, got text 'maybe'"),
    ("tau2=1", "pearl: error: --set tau2=1: tau2: dqn in pearl_py has no hyperparameter 'tau2'"),
    ("env=Acrobot-v1", "pearl: error: --set env=Acrobot-v1: with --zoo the algorithm is the file's and the env is "
                       "--env"),
])
def test_a_bad_set_on_a_zoo_entry_names_the_flag(capsys, flag, message):
    from pearl_py.cli import main

    assert main(["run", "--zoo", str(ZOO / "dqn.yml"), "--env", "CartPole-v1", "--set", flag]) == 2
    assert capsys.readouterr().err == message + "\n"


def test_the_zoo_entry_for_an_id_without_one_is_atari_or_default():
    from pearl_py.config.yaml_source import YamlDocument
    from pearl_py.run_config.zoo import entry_key

    dqn = YamlDocument.load(ZOO / "dqn.yml")
    assert entry_key(dqn, "BreakoutNoFrameskip-v4") == "atari" and entry_key(dqn, "ALE/Pong-v5") == "atari"
    assert entry_key(dqn, "Taxi-v4") == "default" and entry_key(dqn, "Acrobot-v1") == "Acrobot-v1"
    assert load_zoo(ZOO / "dqn.yml", "Taxi-v4").settings.total_steps == 1_000_000


def test_the_zoos_atari_entries_are_read_with_their_atari_wrapper():
    pytest.importorskip("ale_py")
    for algorithm in ("dqn", "ppo"):
        config = load_zoo(ZOO / f"{algorithm}.yml", "BreakoutNoFrameskip-v4")
        assert (config.settings.total_steps, config.hyperparameters.frame_stack) == (10_000_000, 4)
    # a2c's atari entry names SB3's RMSpropTFLike optimizer, which pearl_py does not have
    with pytest.raises(ConfigError, match=r"a2c.yml:19: atari.policy_kwargs: cannot read 'dict\(optimizer_class="):
        load_zoo(ZOO / "a2c.yml", "BreakoutNoFrameskip-v4")


WRAPPER = "stable_baselines3.common.atari_wrappers.AtariWrapper"


@pytest.mark.parametrize("wrapper", [WRAPPER, [WRAPPER], [{WRAPPER: {"terminal_on_life_loss": True, "noop_max": 30}}]])
def test_the_atari_wrapper_is_accepted_in_the_zoos_forms(tmp_path, wrapper):
    pytest.importorskip("ale_py")
    import yaml

    (tmp_path / "dqn.yml").write_text(yaml.safe_dump({"atari": {"env_wrapper": wrapper, "policy": "CnnPolicy"}}))
    assert load_zoo(tmp_path / "dqn.yml", "PongNoFrameskip-v4").settings.env_id == "PongNoFrameskip-v4"


def test_the_atari_wrappers_arguments_join_the_env_kwargs(tmp_path):
    pytest.importorskip("ale_py")
    (tmp_path / "dqn.yml").write_text(f"atari:\n  env_kwargs: {{full_action_space: true}}\n  env_wrapper:\n"
                                      f"    - {WRAPPER}:\n        terminal_on_life_loss: false\n")
    config = load_zoo(tmp_path / "dqn.yml", "PongNoFrameskip-v4")
    assert config.hyperparameters.env_kwargs.to_config() == {"full_action_space": True, "terminal_on_life_loss": False}


@pytest.mark.parametrize("env, entry, message", [
    ("CartPole-v1", "env_wrapper: rl_zoo3.wrappers.TimeFeatureWrapper",
     "CartPole-v1.env_wrapper: env wrapper 'rl_zoo3.wrappers.TimeFeatureWrapper' is not applied by pearl_py "
     f"(it applies the Atari family's {WRAPPER} only): remove the key to run without it"),
    ("CartPole-v1", f"env_wrapper: [{WRAPPER}]", f"CartPole-v1.env_wrapper: {WRAPPER} is for Atari envs; "
                                                 "'CartPole-v1' is not one"),
    ("PongNoFrameskip-v4", f"env_wrapper: [{{{WRAPPER}: {{action_repeat_probability: 0.25}}}}]",
     "PongNoFrameskip-v4.env_wrapper: AtariWrapper's 'action_repeat_probability' is not implemented in pearl_py (it "
     "takes noop_max, frame_skip, screen_size, terminal_on_life_loss, clip_reward)"),
    ("CartPole-v1", "policy: CnnPolicy", "CartPole-v1.policy: policy 'CnnPolicy' is not supported for 'CartPole-v1': "
                                         "pearl_py implements MlpPolicy, and CnnPolicy for the image envs"),
])
def test_other_env_wrappers_and_arguments_are_refused_by_name(tmp_path, env, entry, message):
    (tmp_path / "dqn.yml").write_text(f"{env}:\n  n_timesteps: 1000\n  {entry}\n")
    with pytest.raises(ConfigError) as caught:
        load_zoo(tmp_path / "dqn.yml", env)
    assert message in str(caught.value) and "dqn.yml:3:" in str(caught.value)


def test_an_env_whose_package_is_missing_is_one_line_naming_it(tmp_path, capsys):
    import gymnasium as gym

    from pearl_py.cli import main

    gym.register("pearl_test/NeedsPackage-v0", entry_point="pearl_no_such_package.envs:Env")
    path = tmp_path / "dqn.yml"
    path.write_text("pearl_test/NeedsPackage-v0:\n  n_timesteps: 1000\n")
    try:
        assert main(["run", "--zoo", str(path), "--env", "pearl_test/NeedsPackage-v0"]) == 2
    finally:
        del gym.registry["pearl_test/NeedsPackage-v0"]
    assert capsys.readouterr().err == (
        "pearl: error: env 'pearl_test/NeedsPackage-v0' needs pearl_no_such_package, which is not installed: "
        "install the package that provides pearl_no_such_package\n")


def test_box2d_missing_names_the_extra(capsys):
    pytest.importorskip("gymnasium")
    try:
        import Box2D  # noqa: F401
        pytest.skip("Box2D is installed here")
    except ImportError:
        pass
    from pearl_py.envs import EnvNotInstalled, EnvSpec

    with pytest.raises(EnvNotInstalled) as err:
        EnvSpec.from_env_id("LunarLander-v3")
    assert str(err.value) == "env 'LunarLander-v3' needs Box2D, which is not installed: pip install 'pearl_py[box2d]'"


def test_the_zoos_activation_names_build_their_torch_modules(tmp_path):
    from torch import nn

    from pearl_py.algorithms.on_policy.config import ACTIVATION_NAMES
    from pearl_py.algorithms.on_policy.policy import ACTIVATIONS

    assert tuple(ACTIVATIONS) == ACTIVATION_NAMES
    path = tmp_path / "ppo.yml"
    path.write_text("CartPole-v1:\n  policy_kwargs: 'dict(net_arch=[8], activation_fn=nn.GELU)'\n")
    cfg = load_zoo(path, "CartPole-v1")
    assert cfg.hyperparameters.activation_fn == "gelu"
    policy = cfg.make_algorithm().fresh_networks().online["policy"]
    assert [type(m) for m in policy.pi] == [nn.Linear, nn.GELU, nn.Linear]


def test_off_policy_learning_rate_schedules_are_read():
    from pearl_py.algorithms.on_policy.schedules import Schedule

    cfg = load_zoo(ZOO / "sac.yml", "LunarLanderContinuous-v3")
    assert cfg.hyperparameters.learning_rate == Schedule(7.3e-4, linear=True)


def test_a_schedule_of_a_number_only_key_is_refused_by_name(tmp_path):
    path = tmp_path / "td3.yml"
    path.write_text("Pendulum-v1:\n  gamma: lin_0.99\n")
    with pytest.raises(ConfigError) as err:
        load_zoo(path, "Pendulum-v1")
    assert str(err.value) == (f"{path}:2: Pendulum-v1.gamma: 'lin_0.99': linear schedules of gamma are not "
                              "implemented in pearl_py (learning_rate and ppo's clip_range take them): give a number")


def test_gradient_steps_minus_one_follows_a_set_train_freq_in_a_config(write_config):
    from pearl_py.run_config import load_config
    from pearl_py.run_config.overrides import apply_sets

    cfg = load_config(write_config("algorithm: dqn\nenv: CartPole-v1\nhyperparameters: {train_freq: 4, "
                                   "gradient_steps: -1}\n"))
    assert cfg.hyperparameters.gradient_steps == 4
    assert apply_sets(cfg, ["train_freq=8", "n_envs=2"]).hyperparameters.gradient_steps == 16
    assert apply_sets(cfg, ["gradient_steps=2", "train_freq=8"]).hyperparameters.gradient_steps == 2
