"""pearl run --auto reuses the plan an earlier run made from the same inputs (pearl_py.pipeline.plan_cache): the same
files as planning again, no derivation or solve; any changed input is another key; --replan plans again.

A calibration with no fitted model is cached first: every cost is modelled, nothing is profiled."""
from __future__ import annotations

import os

import pytest

import pearl_py
from pearl_py.cli.main import main
from pearl_py.estimate.calibration import Calibration, machine_fingerprint
from pearl_py.pipeline import plan_cache, planning

CONFIG = ("algorithm: dqn\nenv: CartPole-v1\neval_episodes: 1\nhyperparameters:\n  learning_starts: 100\n"
          "  train_freq: 50\n  gradient_steps: 5\n  batch_size: 16\n  net_arch: [16]\n")
PLAN_FILES = ("plan.yaml", "plan.json", "prediction.json")


@pytest.fixture
def modelled(tmp_path, monkeypatch):
    monkeypatch.setenv("PEARL_CACHE_DIR", str(tmp_path / "cache"))
    Calibration(machine_fingerprint()).save()


def key_of(algorithm, total_steps=1_000):
    return plan_cache.plan_key(algorithm, "throughput", total_steps, one_process=True, dedicated=False)


def test_a_second_auto_run_reuses_the_plan_and_writes_the_same_plan_files(write_config, tmp_path, capsys, monkeypatch,
                                                                         modelled):
    config = str(write_config(CONFIG))
    assert main(["run", config, "--auto", "--steps", "200", "--out", str(tmp_path / "first")]) == 0
    assert "plan reused" not in capsys.readouterr().out
    monkeypatch.setattr(planning, "auto_plan", lambda *args, **kwargs: pytest.fail("planned again"))
    assert main(["run", config, "--auto", "--steps", "200", "--out", str(tmp_path / "second")]) == 0
    said = capsys.readouterr().out
    kept = sorted((tmp_path / "cache" / "plans").iterdir())
    assert len(kept) == 1 and f"plan reused from {kept[0]}" in said
    for name in PLAN_FILES:
        assert (tmp_path / "first" / name).read_bytes() == (tmp_path / "second" / name).read_bytes(), name


def test_replan_plans_again(write_config, tmp_path, capsys, monkeypatch, modelled):
    config = str(write_config(CONFIG))
    assert main(["run", config, "--auto", "--steps", "200", "--out", str(tmp_path / "first")]) == 0
    planned = []
    real = planning.auto_plan
    monkeypatch.setattr(planning, "auto_plan", lambda *args, **kwargs: planned.append(1) or real(*args, **kwargs))
    assert main(["run", config, "--auto", "--replan", "--steps", "200", "--out", str(tmp_path / "again")]) == 0
    assert planned == [1] and "plan reused" not in capsys.readouterr().out


def test_every_input_of_the_plan_is_in_its_key(tmp_path, monkeypatch, modelled):
    algo = pearl_py.DQN("CartPole-v1", net_arch=(16,))
    key = key_of(algo)
    assert key == key_of(pearl_py.DQN("CartPole-v1", net_arch=(16,)))     # a fresh process's algorithm: the same
    assert key != key_of(pearl_py.DQN("CartPole-v1", net_arch=(32,)))
    assert key != key_of(pearl_py.DQN("Acrobot-v1", net_arch=(16,)))
    assert key != key_of(algo, total_steps=2_000)
    assert key != plan_cache.plan_key(algo, "power", 1_000, one_process=True, dedicated=False)
    assert key != plan_cache.plan_key(algo, "throughput", 1_000, one_process=False, dedicated=False)
    assert key != plan_cache.plan_key(algo, "throughput", 1_000, one_process=True, dedicated=True)
    monkeypatch.setenv("PEARL_SOMETHING", "1")
    assert key_of(algo) != key
    monkeypatch.delenv("PEARL_SOMETHING")
    calibration = Calibration(machine_fingerprint())
    calibration.meta["note"] = "profiled again"
    calibration.save()
    assert key_of(algo) not in (key, None)


def test_a_changed_source_file_is_another_key(tmp_path, monkeypatch, modelled):
    package = tmp_path / "package"
    package.mkdir()
    (package / "module.py").write_text("X = 1\n")
    monkeypatch.setattr(plan_cache, "_PACKAGE", package)
    algo = pearl_py.DQN("CartPole-v1", net_arch=(16,))
    key = key_of(algo)
    status = (package / "module.py").stat()
    os.utime(package / "module.py", ns=(status.st_atime_ns, status.st_mtime_ns + 1_000_000))
    assert key_of(algo) != key


def test_nothing_is_reused_without_a_calibration_or_with_an_unstable_config(tmp_path, monkeypatch):
    monkeypatch.setenv("PEARL_CACHE_DIR", str(tmp_path / "empty"))
    algo = pearl_py.DQN("CartPole-v1", net_arch=(16,))
    assert key_of(algo) is None                      # the run profiles first: its plan is keyed after
    Calibration(machine_fingerprint()).save()

    class Unstable:                                 # a config holding a function: its repr names an address
        env_id, spec, config = "CartPole-v1", algo.spec, (lambda: 0)

    assert key_of(Unstable()) is None and plan_cache.keep_plan(None, None) is None


def test_an_unreadable_kept_plan_is_planned_again(tmp_path, modelled):
    path = plan_cache.plan_path("0" * 20)
    path.parent.mkdir(parents=True)
    for junk in (b"", b"not a pickle", plan_cache.pickle.dumps({"a": "dict, not a Plan"})):
        path.write_bytes(junk)
        assert plan_cache.reused_plan("0" * 20) is None
    assert plan_cache.reused_plan(None) is None
