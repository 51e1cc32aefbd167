"""Inputs that cannot train as the user thinks, and files that are no YAML at all: exit 2 naming the key or file."""
from __future__ import annotations

import pytest

import pearl_py as pearl
from pearl_py.cli import main
from pearl_py.config.yaml_source import MAX_BYTES, YamlDocument
from pearl_py.errors import ConfigError

BASE = """\
algorithm: dqn
env: CartPole-v1
total_steps: 1000
seed: 0
hyperparameters:
  learning_starts: 100
  train_freq: 50
  batch_size: 16
  buffer_size: 5000
"""


def run(write_config, capsys, text: str, *flags: str) -> str:
    """``pearl run`` on ``text``: asserts exit 2 and one line without a traceback; returns that line."""
    assert main(["run", str(write_config(text)), *flags]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err.strip()


@pytest.mark.parametrize("text, where", [("", ""), ("# only a comment\n", ""), ("{}\n", ":1")])
def test_an_empty_config_is_refused(write_config, capsys, tmp_path, text, where):
    assert run(write_config, capsys, text) == (f"pearl: error: {tmp_path / 'config.yaml'}{where}: the config is empty: "
                                               "a run config names at least its algorithm and env (see examples/configs)")


@pytest.mark.parametrize("edit, flags, message", [
    (("learning_starts: 100", "learning_starts: 1000"), (),
     "config.yaml:6: hyperparameters.learning_starts: 1000 is not below total_steps 1000: the run would end before "
     "its first update (lower learning_starts or raise total_steps)"),
    (("learning_starts: 100", "learning_starts: 100"), ("--steps", "80"),
     "config.yaml:6: hyperparameters.learning_starts: 100 is not below total_steps 80"),
    (("train_freq: 50", "train_freq: 2000"), (),
     "config.yaml:7: hyperparameters.train_freq: the first training round comes at env step 2000, past total_steps "
     "1000: the run would never update (lower train_freq or raise total_steps)"),
    (("buffer_size: 5000", "buffer_size: 8"), (),
     "config.yaml:9: hyperparameters.buffer_size: 8 is less than batch_size 16: every batch would hold the same "
     "transitions more than once; the replay must hold at least one batch"),
    (("seed: 0", "seed: 100000000000000000000"), (),
     "config.yaml:4: seed: must be <= 4294967295, got 100000000000000000000"),
    (("seed: 0", "seed: 0"), ("--seed", "4294967296"), "seed: must be <= 4294967295, got 4294967296"),
])
def test_a_config_that_cannot_train_as_meant_names_its_key(write_config, capsys, edit, flags, message):
    assert message in run(write_config, capsys, BASE.replace(*edit), *flags)


def test_a_small_replay_is_refused_from_python_too():
    with pytest.raises(ConfigError, match=r"^buffer_size: 8 is less than batch_size 16"):
        pearl.DQN("CartPole-v1", buffer_size=8, batch_size=16)


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf"])
def test_a_platform_number_must_be_finite(write_config, capsys, tmp_path, value):
    platform = write_config(f"""\
links:
  odd-link:
    bandwidth_gbs: {value}
    latency_us: 1.0
platforms:
  odd:
    devices:
      cpu: {{type: xeon-gold-6326}}
      gpu: {{type: a100-sxm4-80gb}}
    links:
      - {{between: [cpu, gpu], type: odd-link}}
""", "platform.yaml")
    assert main(["plan", str(write_config(BASE)), "--platform", str(platform), "--out", str(tmp_path / "o")]) == 2
    shown = {".nan": "nan", ".inf": "inf", "-.inf": "-inf"}[value]
    assert capsys.readouterr().err == (f"pearl: error: {platform}:3: links.odd-link.bandwidth_gbs: must be a finite "
                                       f"number, got {shown}\n")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("text, message", [
    ("a: " + "[" * 5000 + "]" * 5000, "f.yaml: invalid YAML: nested too deeply"),
    ("a: &a [" + ", ".join(["x"] * 100) + "]\nb: &b [" + ", ".join(["*a"] * 100) + "]\nc: [" +
     ", ".join(["*b"] * 200) + "]\n", "f.yaml:1: more than 1,000,000 values (aliases counted where used)"),
    ("a: 2001-13-45\n", "f.yaml:1: a: invalid YAML: month must be in 1..12"),
    ("a: !!python/object:os.system x\n", "f.yaml:1: a: invalid YAML: could not determine a constructor for the tag"),
])
def test_hostile_yaml_is_a_located_error(text, message):
    with pytest.raises(ConfigError) as err:
        YamlDocument.parse(text, "f.yaml")
    assert str(err.value).startswith(message)


def test_files_that_are_no_yaml_are_refused_without_reading_them_whole(tmp_path):
    with pytest.raises(ConfigError, match=r"^/dev/zero: not a regular file \(a device, a pipe or a socket\)$"):
        YamlDocument.load("/dev/zero")
    big = tmp_path / "big.yaml"
    big.write_bytes(b"a: 1\n" * (MAX_BYTES // 5 + 1))
    with pytest.raises(ConfigError, match=r"big.yaml: larger than 16 MiB: not a YAML file pearl_py wrote or reads$"):
        YamlDocument.load(big)
    with pytest.raises(ConfigError, match=r": cannot read: Is a directory$"):
        YamlDocument.load(tmp_path)
