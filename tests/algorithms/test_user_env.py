"""A user's own env: gymnasium's ``module:EnvName-v0`` ids, the ``env_module`` key and ``--env-module`` flag, Discrete
observations one-hot encoded (as SB3 does), and the spaces pearl_py does not take refused by name."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import pearl_py as pearl
from pearl_py.envs import EnvError, EnvSpec, make_env
from pearl_py.cli import main

USER_ENV = Path(__file__).resolve().parents[1] / "data" / "user_env"
ZOO = Path(__file__).resolve().parents[1] / "data" / "zoo"


@pytest.fixture
def user_module(monkeypatch):
    """tests/data/user_env on the import path (as a user's package is installed); afterwards neither imported
    nor registered, so each test imports it as a fresh process would."""
    monkeypatch.syspath_prepend(str(USER_ENV))
    yield "pearl_user_env"
    gym.registry.pop("UserChain-v0", None)
    sys.modules.pop("pearl_user_env", None)


def test_a_user_env_module_runs_through_pearl_run(user_module, write_config, tmp_path, capsys):
    config = write_config(f"""\
algorithm: dqn
env: UserChain-v0
env_module: {user_module}
total_steps: 400
hyperparameters: {{learning_starts: 100, train_freq: 4, batch_size: 32, buffer_size: 1000}}
""")
    out = tmp_path / "run"
    assert main(["run", str(config), "--plan", "serial", "--set", "eval_episodes=2", "--out", str(out)]) == 0
    result = json.loads((out / "result.json").read_text())
    assert result["env"] == "pearl_user_env:UserChain-v0" and result["env_steps"] == 400
    capsys.readouterr()
    assert main(["eval", str(out), "--episodes", "1"]) == 0
    assert "dqn on pearl_user_env:UserChain-v0" in capsys.readouterr().out


def test_env_module_flag_with_a_zoo_file(user_module, tmp_path):
    out = tmp_path / "run"
    assert main(["run", "--zoo", str(ZOO / "ppo.yml"), "--env", "UserChain-v0", "--env-module", user_module,
                 "--steps", "256", "--set", "n_envs=2", "--set", "n_steps=64", "--set", "eval_episodes=1",
                 "--plan", "serial", "--out", str(out)]) == 0
    assert json.loads((out / "result.json").read_text())["env_steps"] == 256


def test_module_colon_id_in_python_and_discrete_observations_one_hot(user_module):
    algo = pearl.DQN("pearl_user_env:UserChain-v0", learning_starts=10)
    assert (algo.spec.obs_dim, algo.spec.action_dim, algo.spec.discrete) == (5, 2, True)
    env = make_env("FrozenLake-v1")
    obs, _ = env.reset(seed=0)
    assert env.observation_space == gym.spaces.Box(0.0, 1.0, (16,), np.float32)
    assert obs.dtype == np.float32 and obs.tolist() == [1.0] + [0.0] * 15
    obs, *_ = env.step(2)  # right: cell 1 (or another cell FrozenLake's slip chose), one hot either way
    assert obs.sum() == 1.0


UNKNOWN = ("unknown gymnasium env id 'UserChain-v0' (Environment `UserChain` doesn't exist.); an env of your own: "
           "env_module (--env-module) names the module that registers it")


@pytest.mark.parametrize("argv, where, message", [
    (["--env-module", "pearl_no_such_module"], "--env-module pearl_no_such_module: ",
     "env 'pearl_no_such_module:UserChain-v0': cannot import 'pearl_no_such_module', the module that should register "
     "it (No module named 'pearl_no_such_module')"),
    ([], "{config}:2: env: ", UNKNOWN),
    (["--set", "env_module=pearl_no_such_module"], "{config}:2: env: ",
     UNKNOWN),
])
def test_a_module_that_is_not_there_or_not_named_is_one_line(write_config, capsys, argv, where, message):
    config = write_config("algorithm: dqn\nenv: UserChain-v0\n")
    assert main(["run", str(config), *argv]) == 2
    assert capsys.readouterr().err == f"pearl: error: {where.format(config=config)}{message}\n"


def test_env_module_key_that_cannot_be_imported_is_located(write_config, capsys):
    config = write_config("algorithm: dqn\nenv: UserChain-v0\nenv_module: pearl_no_such_module\n")
    assert main(["run", str(config)]) == 2
    assert capsys.readouterr().err == (
        f"pearl: error: {config}:3: env_module: env 'pearl_no_such_module:UserChain-v0': cannot import "
        "'pearl_no_such_module', the module that should register it (No module named 'pearl_no_such_module')\n")


class _Spaces(gym.Env):
    def __init__(self, observation_space: gym.Space, action_space: gym.Space) -> None:
        self.observation_space, self.action_space = observation_space, action_space


@pytest.mark.parametrize("obs, act, message", [
    (gym.spaces.Dict({"a": gym.spaces.Box(0, 1, (2,))}), gym.spaces.Discrete(2),
     "observation space Dict('a': Box(0.0, 1.0, (2,), float32)) is not supported: pearl_py takes Box observations "
     "of any rank and Discrete ones (one-hot encoded); Dict, Tuple, MultiDiscrete and MultiBinary observations are "
     "not implemented"),
    (gym.spaces.Box(0, 1, (2,)), gym.spaces.MultiDiscrete([2, 3]),
     "action space MultiDiscrete([2 3]) is not supported: pearl_py takes Discrete and 1-D Box actions "
     "(MultiDiscrete, MultiBinary, Dict and Tuple actions are not implemented)"),
])
def test_spaces_pearl_does_not_take_are_refused_naming_them(obs, act, message):
    env = _Spaces(obs, act)
    with pytest.raises(EnvError) as err:
        EnvSpec.from_spaces("pearl_test/Spaces-v0", env.observation_space, env.action_space)
    assert str(err.value) == f"env 'pearl_test/Spaces-v0': {message}"


def test_env_kwargs_reach_gymnasium_make_and_the_saved_policy(write_config, tmp_path, capsys):
    config = write_config("""\
algorithm: td3
env: Pendulum-v1
total_steps: 300
hyperparameters:
  learning_starts: 100
  batch_size: 32
  net_arch: [16]
  env_kwargs: {g: 5.0}
""")
    out = tmp_path / "run"
    assert main(["run", str(config), "--plan", "serial", "--set", "eval_episodes=1", "--out", str(out)]) == 0
    policy = pearl.load(out)
    assert policy.algorithm.spec.env_kwargs.to_config() == {"g": 5.0}
    env = make_env("Pendulum-v1", env_kwargs=policy.algorithm.spec.env_kwargs)
    assert env.unwrapped.g == 5.0


@pytest.mark.parametrize("value, message", [
    ("[1]", "config.yaml:4: hyperparameters.env_kwargs: expected a mapping of keyword arguments (continuous: true), "
            "got list [1]"),
    ("{g: {a: 1}}", "config.yaml:4: hyperparameters.env_kwargs: g: expected a number, text, true/false, null or a "
                    "list of them, got dict {'a': 1}"),
    ("{gravity: 1}", "env 'Pendulum-v1' does not take env_kwargs {gravity: 1}: PendulumEnv.__init__() got an "
                     "unexpected keyword argument 'gravity'"),
])
def test_bad_env_kwargs_are_one_line(write_config, capsys, value, message):
    config = write_config(f"algorithm: td3\nenv: Pendulum-v1\nhyperparameters:\n  env_kwargs: {value}\n")
    assert main(["run", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"pearl: error: {config.parent}/{message}" if "config.yaml" in message
                          else f"pearl: error: {message}") and err.count("\n") == 1
