"""YAML anchors and merge keys (``<<: *defaults``) in every file pearl_py reads, errors still at file:line."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pearl_py.cli import main
from pearl_py.config import yaml_source
from pearl_py.config.yaml_source import YamlDocument
from pearl_py.errors import ConfigError
from pearl_py.run_config import load_config

def test_merged_keys_are_read_and_own_keys_win():
    doc = YamlDocument.parse("a: &a {x: 1, y: 2}\nb: &b {y: 3, z: 4}\nc:\n  <<: [*a, *b]\n  x: 0\n", "f.yaml")
    assert doc.data["c"] == {"x": 0, "y": 2, "z": 4}  # own key first, then the earlier merged mapping
    assert doc.line_of(("c", "x")) == 5 and doc.line_of(("c", "y")) == 1 and doc.line_of(("c", "z")) == 2


def test_a_config_with_merge_keys_loads(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("defaults: &d {learning_starts: 100, train_freq: 50, batch_size: 16}\n"
                    "algorithm: dqn\nenv: CartPole-v1\ntotal_steps: 1000\nhyperparameters:\n  <<: *d\n"
                    "  buffer_size: 5000\n")
    with pytest.raises(ConfigError, match=r"c.yaml:1: defaults: unknown key"):
        load_config(path)  # an anchor holder is still a key of the config: it must be one pearl_py knows


def test_a_bad_merged_value_is_located_at_its_anchor(write_config, capsys):
    text = "hyperparameters:\n  <<: &d {learning_starts: 100, train_freq: 50, batch_size: -1}\n" \
           "  buffer_size: 5000\nalgorithm: dqn\nenv: CartPole-v1\ntotal_steps: 1000\n"
    path = write_config(text)
    assert main(["run", str(path)]) == 2
    assert capsys.readouterr().err == (f"pearl: error: {path}:2: hyperparameters.batch_size: must be >= 1, got -1\n")


@pytest.mark.parametrize("text, message", [
    ("x:\n  <<: 3\n", "f.yaml:2: invalid YAML: '<<' merges a mapping or a list of mappings (<<: *defaults)"),
    ("a: &a [1]\nx:\n  <<: [*a]\n", "f.yaml:1: invalid YAML: '<<' merges a mapping or a list of mappings"),
    ("x:\n  <<: *nowhere\n", "f.yaml:2: invalid YAML: found undefined alias 'nowhere'"),
    ("a0: &a0 {k: 1}\n" + "".join(f"a{i}: &a{i} {{<<: [*a{i - 1}, *a{i - 1}]}}\n" for i in range(1, 40)),
     "f.yaml:8: more than 1,000,000 values (aliases counted where used)"),
])
def test_bad_merges_are_located_errors(text, message):
    with pytest.raises(ConfigError) as err:
        YamlDocument.parse(text, "f.yaml")
    assert str(err.value).startswith(message)


def test_a_platform_file_with_merge_keys_plans(write_config, capsys, tmp_path):
    platform = write_config("""\
links:
  base-link: &link
    bandwidth_gbs: 16.0
    latency_us: 1.0
  slow-link:
    <<: *link
    bandwidth_gbs: .nan
platforms:
  odd:
    devices:
      cpu: {type: xeon-gold-6326}
      gpu: {type: a100-sxm4-80gb}
    links:
      - {between: [cpu, gpu], type: slow-link}
""", "platform.yaml")
    config = write_config("algorithm: dqn\nenv: CartPole-v1\ntotal_steps: 1000\n"
                          "hyperparameters: {learning_starts: 100, train_freq: 50}\n")
    assert main(["plan", str(config), "--platform", str(platform), "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err == (f"pearl: error: {platform}:7: links.slow-link.bandwidth_gbs: must be a finite "
                                       "number, got nan\n")
    platform.write_text(platform.read_text().replace("bandwidth_gbs: .nan", "latency_us: 2.0"))
    assert main(["plan", str(config), "--platform", str(platform), "--out", str(tmp_path / "o")]) == 0


REPO = Path(__file__).resolve().parents[2]
SHIPPED_YAML = sorted(path.relative_to(REPO) for root in ("devices", "estimators", "examples", "pearl_py")
                      for path in (REPO / root).rglob("*.y*ml"))


@pytest.mark.skipif(yaml_source.FAST_COMPOSER is None, reason="PyYAML built without libyaml")
@pytest.mark.parametrize("text", ["a: &a {x: 1, y: [2, 3.5e-3, null, yes, '0x10']}\nb:\n  <<: *a\n  z: !!float 1\n",
                                  *((REPO / path).read_text() for path in SHIPPED_YAML)],
                         ids=["merge", *map(str, SHIPPED_YAML)])
def test_libyaml_and_pyyaml_read_the_same_values_and_lines(text, monkeypatch):
    """The shipped files (the device catalogue and cost models, read on every plan) parse by libyaml: the same
    values at the same lines as PyYAML's own parser gives."""
    yaml.compose(text, Loader=yaml_source.FAST_COMPOSER)  # libyaml takes it: no fallback to PyYAML's parser
    fast = YamlDocument.parse(text, "f.yaml")
    monkeypatch.setattr(yaml_source, "FAST_COMPOSER", None)
    slow = YamlDocument.parse(text, "f.yaml")
    assert (fast.data, fast.lines) == (slow.data, slow.lines)
