"""rl-baselines3-zoo hyperparameter files through --zoo, and --set KEY=VALUE on any config key.

The fixtures in tests/workflow/zoo/ hold the zoo's entries in its own layout; with PEARL_ZOO_DIR
pointing at a checkout's hyperparams/ folder the zoo's own files are read as well.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pearl_py.algorithms.on_policy.schedules import Schedule
from pearl_py.cli import main
from pearl_py.errors import ConfigError, UserError
from pearl_py.run_config import load_config
from pearl_py.run_config.overrides import apply_sets
from pearl_py.run_config.zoo import load_zoo

HERE = Path(__file__).parent
ZOO = HERE / "zoo"
EXAMPLES = HERE.parents[1] / "examples" / "configs"
ZOO_DIRS = [ZOO, HERE.parent / "data" / "zoo"] + ([Path(os.environ["PEARL_ZOO_DIR"])] if os.environ.get("PEARL_ZOO_DIR") else [])


@pytest.mark.parametrize("zoo_dir", ZOO_DIRS)
@pytest.mark.parametrize("file, env, example", [
    ("dqn.yml", "CartPole-v1", "dqn_cartpole.yaml"),
    ("ddpg.yml", "Pendulum-v1", "ddpg_pendulum.yaml"),
    ("ppo.yml", "CartPole-v1", "ppo_cartpole.yaml"),
    ("a2c.yml", "CartPole-v1", "a2c_cartpole.yaml"),
])
def test_a_zoo_entry_is_the_same_run_as_pearls_own_config_of_it(zoo_dir, file, env, example):
    zoo = load_zoo(zoo_dir / file, env)
    own = load_config(EXAMPLES / example)
    assert zoo.hyperparameters == own.hyperparameters
    assert (zoo.settings.algorithm, zoo.settings.env) == (own.settings.algorithm, own.settings.env)
    assert zoo.settings.total_steps == {"dqn.yml": 50_000, "ddpg.yml": 20_000, "ppo.yml": 100_000,
                                        "a2c.yml": 500_000}[file]


def test_zoo_entries_map_policy_kwargs_and_schedules():
    ppo = load_zoo(ZOO / "ppo.yml", "CartPole-v1")
    assert ppo.hyperparameters.learning_rate == Schedule(0.001, linear=True)
    assert ppo.hyperparameters.n_envs == 8 and ppo.hyperparameters.policy == "MlpPolicy"
    assert load_zoo(ZOO / "dqn.yml", "CartPole-v1").hyperparameters.net_arch == (256, 256)


@pytest.mark.parametrize("entry, message", [
    ("CartPole-v1:\n  policy: 'CnnPolicy'\n", "zoo.yml:2: CartPole-v1.policy: policy 'CnnPolicy' is not supported"),
    ("CartPole-v1:\n  frame_stack: 0\n", "zoo.yml:2: CartPole-v1.frame_stack: must be >= 1, got 0"),
    ("CartPole-v1:\n  train_freq: [1, 'episode']\n", "training per episode is not implemented"),
    ("CartPole-v1:\n  policy_kwargs: 'dict(net_arch=dict(pi=[64], vf=[32]))'\n",
     "separate widths per network are not implemented"),
    ("CartPole-v1:\n  policy_kwargs: 'dict(features_extractor_class=None)'\n",
     "policy_kwargs 'features_extractor_class' is not supported"),
    ("CartPole-v1:\n  policy_kwargs: 'dict(activation_fn=nn.Softsign)'\n",
     "unsupported name nn.Softsign (activations: nn.ReLU, nn.Tanh, nn.ELU, nn.GELU, nn.LeakyReLU, nn.SiLU)"),
    ("CartPole-v1:\n  policy_kwargs: '__import__(\"os\").system(\"true\")'\n", "pearl_py reads dict(...) of literals"),
    ("CartPole-v1:\n  gamma: lin_0.99\n", "CartPole-v1.gamma: 'lin_0.99': linear schedules of gamma are not "
                                        "implemented in pearl_py"),
    ("CartPole-v1:\n  tau2: 1\n", "CartPole-v1.tau2: dqn in pearl_py has no hyperparameter 'tau2'"),
    ("CartPole-v1:\n  batch_size: 0\n", "zoo.yml:2: CartPole-v1.batch_size: must be >= 1, got 0"),
    ("Acrobot-v1:\n  batch_size: 8\n", "no entry for env 'CartPole-v1' (nor an 'atari' or 'default' entry); entries: Acrobot-v1"),
])
def test_what_pearl_does_not_support_is_refused_by_name(tmp_path, entry, message):
    path = tmp_path / "zoo.yml"
    path.write_text(entry)
    with pytest.raises(ConfigError) as error:
        load_zoo(path, "CartPole-v1", algorithm="dqn")
    assert message in str(error.value)


@pytest.mark.parametrize("file, env, message", [
    (HERE.parent / "data" / "zoo" / "a2c.yml", "BreakoutNoFrameskip-v4",
     "a2c.yml:19: atari.policy_kwargs: cannot read 'dict(optimizer_class=RMSpropTFLike, optimizer_kwargs=dict("
     "eps=1e-5))' (unsupported name RMSpropTFLike (activations: nn.ReLU, "),
])
def test_zoo_entries_pearl_cannot_run_exit_2_naming_the_key(capsys, file, env, message):
    assert main(["run", "--zoo", str(ZOO / file), "--env", env]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


@pytest.mark.parametrize("file, env", [("dqn.yml", "CartPole-v1"), ("ddpg.yml", "Pendulum-v1"),
                                       ("ppo.yml", "CartPole-v1"), ("a2c.yml", "CartPole-v1")])
def test_zoo_entries_run_through_the_cli(tmp_path, capsys, file, env):
    out = tmp_path / "run"
    assert main(["run", "--zoo", str(ZOO / file), "--env", env, "--steps", "256", "--plan", "serial",
                 "--set", "eval_episodes=1", "--set", "learning_starts=64" if file in ("dqn.yml", "ddpg.yml")
                 else "seed=0", "--out", str(out)]) == 0
    result = json.loads((out / "result.json").read_text())
    assert result["env_steps"] >= 256 and result["env"] == env
    manifest = json.loads((out / "policy.json").read_text())
    assert manifest["algorithm"] == file.split(".")[0]


def test_set_overrides_any_key_with_the_files_validation():
    cfg = load_config(EXAMPLES / "dqn_cartpole.yaml")
    new = apply_sets(cfg, ["batch_size=128", "hyperparameters.net_arch=[32, 32]", "seed=7", "eval_freq=0",
                           "exploration_final_eps=0.1", "double_q=true"])
    h = new.hyperparameters
    assert (h.batch_size, h.net_arch, h.exploration_final_eps, h.double_q) == (128, (32, 32), 0.1, True)
    assert new.settings.seed == 7 and new.settings.eval_freq == 0 and h.learning_rate == Schedule(2.3e-3)
    ppo = apply_sets(load_config(EXAMPLES / "ppo_cartpole.yaml"), ["learning_rate=lin_3e-4"])
    assert ppo.hyperparameters.learning_rate == Schedule(3e-4, linear=True)


@pytest.mark.parametrize("flag, message", [
    ("batch_size=-1", "--set batch_size=-1: hyperparameters.batch_size: must be >= 1, got -1"),
    ("net_arch=64", "--set net_arch=64: hyperparameters.net_arch: expected a list of integer, got int 64"),
    ("hyperparameters.batchsize=3", "--set hyperparameters.batchsize=3: hyperparameters.batchsize: unknown key; "
                                    "did you mean 'batch_size'?"),
    ("batchsize=3", "--set batchsize=3: unknown key 'batchsize'; known: "),
    ("total_steps=lots", "--set total_steps=lots: total_steps: expected integer, got str 'lots'"),
    ("env=Nope-v0", "--set env=Nope-v0: env: unknown gymnasium env id 'Nope-v0'"),
    ("algorithm=ppo", "--set algorithm=ppo: choose the algorithm in the config file"),
    ("batch_size", "--set batch_size: expected KEY=VALUE"),
])
def test_a_bad_set_exits_2_with_one_line_naming_it(capsys, flag, message):
    assert main(["run", str(EXAMPLES / "dqn_cartpole.yaml"), "--set", flag]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_zoo_and_config_flags_are_checked(tmp_path, capsys):
    for argv, message in [(["run"], "give a config file or --zoo"),
                          (["run", "--zoo", str(ZOO / "dqn.yml")], "--zoo and --env go together"),
                          (["run", str(EXAMPLES / "dqn_cartpole.yaml"), "--zoo", str(ZOO / "dqn.yml"), "--env", "x"],
                           "give a config file or --zoo")]:
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2 and message in capsys.readouterr().err
    unnamed = tmp_path / "example.yml"
    unnamed.write_text((ZOO / "dqn.yml").read_text())
    with pytest.raises(UserError, match="cannot tell the algorithm from the file name 'example.yml'"):
        load_zoo(unnamed, "CartPole-v1")
