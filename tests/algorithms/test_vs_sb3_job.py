"""benchmarks/vs_sb3.py hands SB3's process its model as plain values: that process imports no pearl_py, and the
SB3 model it builds carries every hyperparameter of the zoo config."""
from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("stable_baselines3", reason="stable_baselines3 is not installed (pip install -c constraints.txt "
                    "'.[bench]')")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import vs_sb3  # noqa: E402

CONFIGS = ("ppo_cartpole", "a2c_cartpole", "dqn_cartpole", "ddpg_pendulum", "td3_pendulum", "sac_pendulum")

CHILD = """
import json, pickle, sys
sys.path.insert(0, {benchmarks!r})
import sb3_side
out = {{}}
for name, job in pickle.loads(sys.stdin.buffer.read()).items():
    model = sb3_side.model(job, seed=0)
    figures = {{"class": type(model).__name__, "lr": model.lr_schedule(1.0), "lr_half": model.lr_schedule(0.5),
               "gamma": model.gamma, "n_envs": model.n_envs}}
    for attr in ("n_steps", "batch_size", "n_epochs", "gae_lambda", "ent_coef", "buffer_size", "tau", "policy_delay",
                 "target_update_interval", "exploration_final_eps"):
        if isinstance(getattr(model, attr, None), (int, float)):
            figures[attr] = getattr(model, attr)
    if hasattr(model, "clip_range"):
        figures["clip"] = model.clip_range(1.0)
    if model.action_noise is not None:
        figures["noise_std"] = float(model.action_noise._sigma[0])
    figures["net"] = str(model.policy).count("Linear")
    out[name] = figures
out["imported pearl_py"] = any(m == "pearl_py" or m.startswith("pearl_py.") for m in sys.modules)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def built() -> tuple[dict, dict]:
    """Each config, and what SB3's side built from its job in a process of its own."""
    configs = {name: vs_sb3.configured(str(ROOT / "examples" / "configs" / f"{name}.yaml"), None, [])
               for name in CONFIGS}
    jobs = {name: vs_sb3.sb3_job(cfg) for name, cfg in configs.items()}
    done = subprocess.run([sys.executable, "-c", CHILD.format(benchmarks=str(ROOT / "benchmarks"))],
                          input=pickle.dumps(jobs), capture_output=True, check=True, timeout=300)
    return configs, json.loads(done.stdout.decode().strip().splitlines()[-1])


def test_the_sb3_process_imports_no_pearl_py(built):
    assert built[1]["imported pearl_py"] is False


@pytest.mark.parametrize("name", CONFIGS)
def test_the_sb3_model_has_the_config_hyperparameters(built, name):
    configs, models = built
    h, sb3 = configs[name].hyperparameters, models[name]
    assert sb3["class"] == configs[name].settings.algorithm.upper()
    assert sb3["gamma"] == pytest.approx(h.gamma)
    lr = h.learning_rate
    start = getattr(lr, "initial", lr)
    assert sb3["lr"] == pytest.approx(start)
    assert sb3["lr_half"] == pytest.approx(start * (0.5 if getattr(lr, "linear", False) else 1.0))
    for key in ("n_steps", "batch_size", "n_epochs", "gae_lambda", "ent_coef", "buffer_size", "tau",
                "policy_delay", "target_update_interval", "exploration_final_eps"):
        if key in sb3 and hasattr(h, key) and isinstance(getattr(h, key), (int, float)):
            assert sb3[key] == pytest.approx(getattr(h, key)), key
    if configs[name].settings.algorithm in vs_sb3.ON_POLICY:
        assert sb3["n_envs"] == h.n_envs
    if "clip" in sb3:
        assert sb3["clip"] == pytest.approx(h.clip_range.initial)
    if hasattr(h, "noise_std") and configs[name].settings.algorithm != "sac":
        assert sb3["noise_std"] == pytest.approx(h.noise_std)
    assert sb3["net"] >= len(h.net_arch) + 1


def test_the_spawned_children_reimport_of_the_script_loads_no_pearl_py():
    # multiprocessing's spawn runs vs_sb3.py again as __mp_main__ in SB3's child before its target
    probe = ("import runpy, sys; sys.path.insert(0, {b!r}); runpy.run_path({s!r}, run_name='__mp_main__'); "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pearl_py', 'torch', 'gymnasium')))")
    done = subprocess.run([sys.executable, "-c", probe.format(b=str(ROOT / "benchmarks"),
                                                              s=str(ROOT / "benchmarks" / "vs_sb3.py"))],
                          capture_output=True, check=True, timeout=120)
    assert done.stdout.decode().strip().splitlines()[-1] == "[]"


def test_a_pixel_config_gets_pearl_py_s_env_and_cnn():
    pytest.importorskip("minatar", reason="the minatar extra is not installed")
    cfg = vs_sb3.configured(str(ROOT / "examples" / "configs" / "dqn_minatar_breakout.yaml"), None, [])
    job = vs_sb3.sb3_job(cfg)
    assert job["policy"] == "CnnPolicy" and job["pearl_env"] is not None and job["extractor"] is not None
    flat = vs_sb3.sb3_job(vs_sb3.configured(str(ROOT / "examples" / "configs" / "dqn_minatar_breakout.yaml"), None,
                                            ["features_extractor=flatten"]))
    assert flat["policy"] == "MlpPolicy" and flat["pearl_env"] is not None and flat["extractor"] is None
