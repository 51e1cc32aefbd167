"""The zoo's SAC, TD3 and PPO entries for HalfCheetah, Hopper and Walker2d are read as they are (v4 ids, as the
zoo's files name them; the same entries under v5 ids in a copy of the file). Reading needs no MuJoCo: gymnasium
registers the ids either way (running them needs the ``mujoco`` extra: tests/workflow/test_mujoco_learning.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from pearl_py.run_config.zoo import load_zoo

ZOO = Path(__file__).parents[1] / "data" / "zoo"
ENVS = ("HalfCheetah", "Hopper", "Walker2d")


def _file(tmp_path: Path, algo: str, version: str) -> Path:
    """The zoo's file, or a copy whose MuJoCo entries are keyed ``-v5`` (their anchors and merges kept)."""
    if version == "v4":
        return ZOO / f"{algo}.yml"
    text = (ZOO / f"{algo}.yml").read_text()
    for env in ENVS:
        text = text.replace(f"\n{env}-v4:", f"\n{env}-v5:")
    path = tmp_path / f"{algo}.yml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("version", ["v4", "v5"])
@pytest.mark.parametrize("env", ENVS)
def test_sac_and_td3_mujoco_entries_are_read_with_their_merged_defaults(tmp_path, env, version):
    sac = load_zoo(_file(tmp_path, "sac", version), f"{env}-{version}")
    assert (sac.settings.total_steps, sac.hyperparameters.learning_starts, sac.hyperparameters.use_sde) == \
        (1_000_000, 10_000, False)
    td3 = load_zoo(_file(tmp_path, "td3", version), f"{env}-{version}").hyperparameters
    assert (td3.learning_starts, td3.noise_std, td3.net_arch, td3.batch_size) == (10_000, 0.1, (400, 300), 256)
    assert td3.learning_rate(1.0) == 1e-3 and td3.train_freq == td3.gradient_steps == 1


TUNED = ((256, 256), -2, False, "relu")
"""HalfCheetah's and Hopper's policy_kwargs; Walker2d's entry has none (SB3's defaults)."""


@pytest.mark.parametrize("version", ["v4", "v5"])
@pytest.mark.parametrize("env, batch_size, policy", [("HalfCheetah", 64, TUNED), ("Hopper", 32, TUNED),
                                                     ("Walker2d", 32, ((64, 64), 0.0, True, "tanh"))])
def test_ppo_mujoco_entries_are_read_with_normalize_and_their_policy_kwargs(tmp_path, env, batch_size, policy,
                                                                            version):
    h = load_zoo(_file(tmp_path, "ppo", version), f"{env}-{version}").hyperparameters
    assert h.normalize.enabled and h.normalize.norm_reward and (h.n_steps, h.batch_size) == (512, batch_size)
    assert (h.net_arch, h.log_std_init, h.ortho_init, h.activation_fn) == policy
