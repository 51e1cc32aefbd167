"""The ``pearl`` command: a real run writes result.json; user mistakes exit 2 with one line."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pearl_py.cli import main

TINY = """
algorithm: dqn
env: CartPole-v1
total_steps: 300
seed: 0
eval_episodes: 2
hyperparameters:
  learning_starts: 100
  train_freq: 50
  gradient_steps: 5
  batch_size: 16
  net_arch: [16]
"""


def test_run_writes_result_json(write_config, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["run", str(write_config(TINY)), "--steps", "200", "--seed", "3", "--out", str(out)]) == 0
    data = json.loads((out / "result.json").read_text())
    assert data["env_steps"] == 200 and data["seed"] == 3 and len(data["eval_returns"]) == 2
    assert "samples/s, measured" in capsys.readouterr().out


@pytest.mark.parametrize("edit, message", [
    (("batch_size: 16", "batch_size: -16"), "config.yaml:10: hyperparameters.batch_size: must be >= 1, got -16"),
    (("batch_size: 16", "batchsize: 16"), "config.yaml:10: hyperparameters.batchsize: unknown key; did you mean 'batch_size'?"),
    (("env: CartPole-v1", "env: CartPole-v0x"), "config.yaml:2: env: unknown gymnasium env id 'CartPole-v0x'"),
    (("total_steps: 300", "total_steps: lots"), "config.yaml:3: total_steps: expected integer, got str 'lots'"),
    (("net_arch: [16]", "net_arch: 16"), "config.yaml:11: hyperparameters.net_arch: expected a list of integer, got int 16"),
    (("algorithm: dqn", "algorithm: trpo"), "config.yaml:1: algorithm: unknown algorithm 'trpo'"),
    (("env: CartPole-v1", "env: Pendulum-v1"), "env 'Pendulum-v1': dqn needs discrete actions"),
])
def test_bad_config_exits_2_with_one_line(write_config, tmp_path, capsys, edit, message):
    path = write_config(TINY.replace(*edit))
    assert main(["run", str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err
    assert not (tmp_path / "o" / "result.json").exists()


def test_console_entry_point_exit_code(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pearl_py.cli", "run", str(tmp_path / "missing.yaml")],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"pearl: error: {tmp_path / 'missing.yaml'}: file not found"


def test_simulate_and_plan_reject_an_unknown_platform(write_config, capsys):
    config = str(write_config(TINY))
    for command in (["simulate", config, "--platform", "nope"], ["plan", config, "--platform", "nope"]):
        assert main(command) == 2
        assert "unknown platform 'nope'; known: " in capsys.readouterr().err


def test_resume_without_a_checkpoint_is_refused(write_config, tmp_path, capsys):
    config = str(write_config(TINY))
    (tmp_path / "checkpoint").mkdir()
    (tmp_path / "checkpoint" / "checkpoint.pt").touch()  # an interrupted run's, as far as the folder shows
    assert main(["run", config, "--resume", str(tmp_path), "--plan", "local"]) == 2
    assert (f"resume: {tmp_path / 'checkpoint' / 'checkpoint.pt'} is not a checkpoint pearl_py can read"
            in capsys.readouterr().err)


def test_unknown_backend_is_an_argument_error(write_config, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["run", str(write_config(TINY)), "--backend", "slurm"])
    assert exit_.value.code == 2
    assert "invalid choice: 'slurm'" in capsys.readouterr().err


@pytest.mark.parametrize("edit, message", [
    (("net_arch: [16]", "net_arch: [16]\n  adam_eps: 0"), "config.yaml:12: hyperparameters.adam_eps: must be > 0.0, got 0.0"),
    (("net_arch: [16]", "net_arch: [16]\n  replay_fanout: 1"), "config.yaml:12: hyperparameters.replay_fanout: must be >= 2, got 1"),
])
def test_new_hyperparameters_reject_garbage(write_config, tmp_path, capsys, edit, message):
    assert main(["run", str(write_config(TINY.replace(*edit))), "--out", str(tmp_path / "o")]) == 2
    assert message in capsys.readouterr().err


def test_unknown_objective_is_an_argument_error(write_config, capsys):
    for command in ("run", "plan"):
        with pytest.raises(SystemExit) as exit_:
            main([command, str(write_config(TINY)), "--objective", "cheapest"])
        assert exit_.value.code == 2
        assert "invalid choice: 'cheapest'" in capsys.readouterr().err


def test_ctrl_c_while_the_command_loads_is_one_line_and_exit_130(write_config, monkeypatch, capsys):
    """The heavy imports (torch, the pipeline) happen inside the command's handler: a Ctrl-C there is one line."""
    import importlib.abc

    class Interrupting(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "pearl_py.cli.run":
                raise KeyboardInterrupt
            return None

    monkeypatch.delitem(sys.modules, "pearl_py.cli.run", raising=False)
    monkeypatch.setattr(sys, "meta_path", [Interrupting(), *sys.meta_path])
    assert main(["run", str(write_config("algorithm: dqn\nenv: CartPole-v1\n"))]) == 130
    assert capsys.readouterr().err == "pearl: interrupted\n"
    loaded = subprocess.run([sys.executable, "-c", "import sys, pearl_py.cli; print(sorted({'torch', 'gymnasium', "
                             "'networkx', 'scipy', 'numba'} & set(sys.modules)))"],
                            capture_output=True, text=True, check=True)
    assert loaded.stdout == "[]\n"  # nothing heavy before main's try


def test_zoo_style_steps_and_a_random_seed(write_config, tmp_path, capsys):
    """``--steps 3e2`` is 300 env steps; ``--seed -1`` a random seed, said and recorded in result.json."""
    config = write_config("algorithm: dqn\nenv: CartPole-v1\neval_episodes: 1\nhyperparameters:\n  learning_starts: 100\n"
                          "  train_freq: 50\n  gradient_steps: 5\n  batch_size: 16\n  net_arch: [16]\n")
    out = tmp_path / "out"
    assert main(["run", str(config), "--steps", "3e2", "--seed", "-1", "--out", str(out)]) == 0
    result = json.loads((out / "result.json").read_text())
    assert result["env_steps"] == 300
    assert f"--seed -1: a random seed, {result['seed']}\n" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["run", str(config), "--steps", "2.5e0"])
    assert exit_.value.code == 2
    assert "argument --steps: not a whole number of env steps: '2.5e0'" in capsys.readouterr().err
