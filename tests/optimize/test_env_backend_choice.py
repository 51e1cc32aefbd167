"""The optimizer picks the env_step backend (``reference`` SyncVectorEnv or ``native_vector``) by its calibrated
cost, like any other variant; a fake calibration, no timing. The serial executor then steps the chosen backend."""
from __future__ import annotations

import dataclasses

import pytest

import pearl_py as pearl
from pearl_py.envs.vector import SameStepAutoreset
from pearl_py.estimate import Calibration, Estimator
from pearl_py.estimate.calibration import model_key
from pearl_py.estimate.fit import FittedModel
from pearl_py.optimize.api import plan
from pearl_py.plan import Plan
from pearl_py.platform import Platform
from pearl_py.runtime import collect
from pearl_py.runtime.serial import SerialExecutor

TINY = {"net_arch": [16], "batch_size": 8, "learning_starts": 32, "train_freq": 16, "gradient_steps": 1,
        "buffer_size": 1_000, "n_envs": 4}


def calibration(env_id: str, per_env_us: dict[str, float]) -> Calibration:
    """``env_step`` of ``env_id`` costing 5 us plus ``per_env_us[variant]`` per env, per variant given."""
    return Calibration("test", {model_key("env_step", variant, env_id): FittedModel(
        "linear", ("n_envs",), (5e-6, us * 1e-6), "n_envs") for variant, us in per_env_us.items()})


@pytest.fixture(scope="module")
def local() -> Platform:
    return Platform.local()


def planned(algo, local: Platform, cache: Calibration) -> Plan:
    return plan(algo, local, estimator=Estimator(cache), horizon=1e6, pareto_points=2)


@pytest.mark.parametrize(("per_env_us", "chosen"), [({"reference": 30.0, "native_vector": 1.0}, "native_vector"),
                                                    ({"reference": 1.0, "native_vector": 30.0}, "reference")])
def test_the_cheaper_calibrated_backend_is_chosen(local, per_env_us, chosen):
    p = planned(pearl.DQN("CartPole-v1", **TINY), local, calibration("CartPole-v1", per_env_us))
    placement = p.placements["env_step"]
    assert placement.variant == chosen
    costs = p.prediction.costs["env_step"][placement.device]
    assert {v: c.source for v, c in costs.items()} == {"reference": "calibrated", "native_vector": "calibrated"}
    loop = costs["reference"].latency_s - (5e-6 + 4 * per_env_us["reference"] * 1e-6)
    for variant, us in per_env_us.items():    # the model's figure for 4 envs, plus the same loop work per step
        assert costs[variant].latency_s == pytest.approx(5e-6 + 4 * us * 1e-6 + loop)


def test_a_backend_is_offered_only_where_it_steps_the_env_and_is_calibrated(local):
    pendulum = planned(pearl.DDPG("Pendulum-v1", **{k: v for k, v in TINY.items() if k != "n_envs"}), local,
                       calibration("Pendulum-v1", {"reference": 30.0}))
    assert pendulum.placements["env_step"].variant == "reference"
    assert any("'native_vector' not offered on cpu: gymnasium registers no numpy vector_entry_point for "
               "'Pendulum-v1'" in note for note in pendulum.prediction.variant_notes["env_step"])
    older = planned(pearl.DQN("CartPole-v1", **TINY), local, calibration("CartPole-v1", {"reference": 30.0}))
    assert older.placements["env_step"].variant == "reference"
    assert any("'native_vector' not offered on cpu: not calibrated on this machine" in note
               for note in older.prediction.variant_notes["env_step"])


def test_the_serial_executor_steps_the_planned_backend(monkeypatch):
    algo = pearl.DQN("CartPole-v1", **TINY)
    base = Plan.single_device(algo.protocol(serialized=True))
    native = dataclasses.replace(base, placements={
        **base.placements, "env_step": dataclasses.replace(base.placements["env_step"], variant="native_vector")})
    made = []
    real = collect.Collector.__init__

    def recording(self, *args, **kwargs):
        real(self, *args, **kwargs)
        made.append(self.envs)

    monkeypatch.setattr(collect.Collector, "__init__", recording)
    result = SerialExecutor(algo, seed=0, plan=native, eval_episodes=1, progress=False).run(128)
    assert result.env_steps == 128 and isinstance(made[0], SameStepAutoreset)
    SerialExecutor(algo, seed=0, plan=base, eval_episodes=1, progress=False).run(64)
    assert not isinstance(made[-1], SameStepAutoreset)
