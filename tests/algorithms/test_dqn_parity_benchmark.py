"""benchmarks/dqn_parity.py builds SB3's DQN with the zoo entry's hyperparameters, as pearl_py reads the entry
(issue 33, item 7: "SB3 with the same hyperparameters from the same zoo entry")."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if not (BENCHMARKS / "dqn_parity.py").exists():
    pytest.skip("benchmarks/ is not shipped with an installed package", allow_module_level=True)
pytest.importorskip("stable_baselines3")
sys.path.insert(0, str(BENCHMARKS))     # dqn_parity imports its siblings sb3_side and vs_sb3 by plain name
import dqn_parity  # noqa: E402
import sb3_side  # noqa: E402
from vs_sb3 import sb3_job  # noqa: E402

from pearl_py.run_config.zoo import load_zoo  # noqa: E402


@pytest.mark.parametrize("env, gradient_steps", [("CartPole-v1", 128), ("Acrobot-v1", 4)])
def test_sb3_model_has_the_entrys_hyperparameters(env: str, gradient_steps: int) -> None:
    cfg = load_zoo(dqn_parity.ZOO, env)
    h = cfg.hyperparameters
    model = sb3_side.model(sb3_job(cfg), seed=0)
    # Acrobot's gradient_steps -1 is SB3's "as many as env steps a round": train_freq 4 * 1 env; pearl_py resolves
    # it when the entry is read, SB3 gets the resolved number
    assert h.gradient_steps == model.gradient_steps == gradient_steps
    assert (model.learning_rate, model.batch_size, model.buffer_size, model.learning_starts, model.gamma) == \
        (h.learning_rate.initial, h.batch_size, h.buffer_size, h.learning_starts, h.gamma)
    assert (model.target_update_interval, model.train_freq.frequency, model.max_grad_norm) == \
        (h.target_update_interval, h.train_freq, h.max_grad_norm)
    assert (model.exploration_fraction, model.exploration_initial_eps, model.exploration_final_eps) == \
        (h.exploration_fraction, h.exploration_initial_eps, h.exploration_final_eps)
    assert model.policy.net_arch == list(h.net_arch) == [256, 256]
    assert model.policy.optimizer.defaults["eps"] == h.adam_eps
    assert cfg.settings.total_steps == {"CartPole-v1": 50_000, "Acrobot-v1": 100_000}[env]
