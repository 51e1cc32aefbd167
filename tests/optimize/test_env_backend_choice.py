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


@pytest.fixture
def made_envs(monkeypatch) -> list:
    """The vector env of every Collector made from now on."""
    made, real = [], collect.Collector.__init__

    def recording(self, *args, **kwargs):
        real(self, *args, **kwargs)
        made.append(self.envs)

    monkeypatch.setattr(collect.Collector, "__init__", recording)
    return made


def run_with(algo, variant: str, steps: int) -> int:
    """Env steps of a serial run of ``algo`` whose plan places ``env_step`` as ``variant``."""
    base = Plan.single_device(algo.protocol(serialized=True))
    placed = dataclasses.replace(base, placements={
        **base.placements, "env_step": dataclasses.replace(base.placements["env_step"], variant=variant)})
    return SerialExecutor(algo, seed=0, plan=placed, eval_episodes=1, progress=False).run(steps).env_steps


def test_the_serial_executor_steps_the_planned_backend(made_envs):
    algo = pearl.DQN("CartPole-v1", **TINY)
    assert run_with(algo, "native_vector", 128) == 128 and isinstance(made_envs[0], SameStepAutoreset)
    assert run_with(algo, "reference", 64) == 64 and not isinstance(made_envs[-1], SameStepAutoreset)


def test_envpool_is_chosen_where_it_is_calibrated_cheapest_and_the_run_steps_it(local, made_envs):
    pytest.importorskip("envpool")
    from pearl_py.envs.envpool_vector import EnvPoolVector

    algo = pearl.DQN("CartPole-v1", **TINY)
    p = planned(algo, local, calibration("CartPole-v1", {"reference": 30.0, "native_vector": 10.0, "envpool": 1.0}))
    assert p.placements["env_step"].variant == "envpool"
    assert run_with(algo, "envpool", 128) == 128 and isinstance(made_envs[0], EnvPoolVector)


def with_cores(platform: Platform, cores: int) -> Platform:
    cpu = platform.device("cpu")
    return dataclasses.replace(platform, devices={**platform.devices, "cpu": dataclasses.replace(
        cpu, spec=dataclasses.replace(cpu.spec, cores=cores))})


def test_envpools_worker_threads_are_calibrated_per_count_and_charged_as_cores(local, made_envs):
    """``envpool_t2`` (2 worker threads) costs its own calibration and holds 2 cores a replica: chosen on 4 cores;
    on 2 cores its actor (2 cores) and the inference replica (1) do not fit, so the 1-thread pool is chosen."""
    pytest.importorskip("envpool")
    from pearl_py.optimize.builder import build_problem
    from pearl_py.optimize.model import Choice, evaluate
    from pearl_py.optimize.solve import solve

    algo = pearl.DQN("CartPole-v1", **TINY)
    estimator = Estimator(calibration("CartPole-v1", {"reference": 30.0, "envpool": 10.0, "envpool_t2": 1.0}))
    env_step = next(k for k in algo.protocol().kernels() if k.name == "env_step")
    cost = estimator.cost(env_step, local.device("cpu"), "envpool_t2")
    assert (cost.resources["cores"], cost.source) == (2, "calibrated")
    four, two = (build_problem(algo.protocol(), with_cores(local, n), estimator, horizon=1e6) for n in (4, 2))
    assert {v: four.options[("env_step", "cpu", v)].cores for v in ("reference", "envpool", "envpool_t2")} == \
        {"reference": 1, "envpool": 1, "envpool_t2": 2}
    assert four.cores("env_step", "cpu", "envpool_t2", 2) == 4
    assert solve(four).assignment["env_step"] == Choice("cpu", "envpool_t2", 1)
    plan_two = dict(solve(two).assignment)
    assert plan_two["env_step"] == Choice("cpu", "envpool", 1)
    crowded = evaluate(two, {**plan_two, "env_step": Choice("cpu", "envpool_t2", 1)})
    assert crowded.violations == ["device 'cpu': 3 replicas' cores on 2 units"]
    assert run_with(algo, "envpool_t2", 128) == 128 and made_envs[0].pool.config["num_threads"] == 2
