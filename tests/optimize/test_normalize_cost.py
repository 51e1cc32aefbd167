"""``normalize``'s cost in the model (issue 33 item 2): the transform's work per collector step and per off-policy
sample, assumed (estimators/roofline.yaml) or timed by ``pearl profile``, charged with the loop's work beside the
env step and the update, and shown in the plan and its report."""
from __future__ import annotations

import pytest
from variant_helpers import synthetic_calibration

import pearl_py as pearl
from pearl_py.estimate import Estimator
from pearl_py.estimate.calibration import LOOP_KEY, NORMALIZE_KEY
from pearl_py.optimize.api import plan
from pearl_py.plan import Plan
from pearl_py.profile.loop_overhead import LoopWork
from pearl_py.profile.normalize_cost import time_normalize
from pearl_py.protocol.kernel import ENV_STEP, LEARNER_UPDATE
from pearl_py.report.content import loop_sentence

CPU = pearl.Platform.local().by_kind("cpu")[0]


def test_the_transforms_assumed_work_is_charged_with_the_loops():
    estimator = Estimator(use_cache=False)
    ppo, dqn = pearl.PPO("Acrobot-v1", n_envs=16).protocol(), pearl.DQN("Acrobot-v1", batch_size=128).protocol()
    cases = [
        # 16 envs x 6 observation values a step: 40 us + 7 ns x 96 (estimators/roofline.yaml's assumed figures);
        # the rollout is normalized already, so PPO's update carries none
        (pearl.PPO("Acrobot-v1", n_envs=16, normalize=True), ppo, {ENV_STEP: 40e-6 + 7e-9 * 96, LEARNER_UPDATE: 0.0}),
        (pearl.PPO("Acrobot-v1", n_envs=16, normalize={"norm_obs": False}), ppo, {ENV_STEP: 40e-6}),  # rewards only
        # an off-policy update normalizes its sample: observations and next observations, 2 x 128 x 6 values
        (pearl.DQN("Acrobot-v1", batch_size=128, normalize=True), dqn,
         {ENV_STEP: 40e-6 + 7e-9 * 6, LEARNER_UPDATE: 19e-6 + 3e-9 * 2 * 128 * 6}),
    ]
    for algo, plain, expected in cases:
        protocol = algo.protocol()
        for kind, normalize_s in expected.items():
            cost, bare = (estimator.cost(p.by_kind(kind)[0], CPU) for p in (protocol, plain))
            assert (cost.normalize_s, bare.normalize_s) == (pytest.approx(normalize_s), 0.0)
            assert cost.loop_s == pytest.approx(bare.loop_s + normalize_s)   # part of the loop's work, added to it
            assert cost.latency_s == pytest.approx(bare.latency_s + normalize_s)
            assert cost.loop_source == "modelled"


def test_the_figures_pearl_profile_timed_replace_the_assumed_ones():
    calibration = synthetic_calibration()
    calibration.meta[LOOP_KEY] = {"on_policy": LoopWork(50e-6, 30e-6).to_dict()}
    algo = pearl.PPO("Acrobot-v1", n_envs=16, normalize=True)
    step = algo.protocol().by_kind(ENV_STEP)[0]
    # the loop timed, the transform not: the whole loop figure is as good as its assumed part
    assert Estimator(calibration).cost(step, CPU).loop_source == "modelled"
    calibration.meta[NORMALIZE_KEY] = {"step": {"per_call": 10e-6, "per_value": 2e-9},
                                       "sample": {"per_call": 5e-6, "per_value": 1e-9}}
    cost = Estimator(calibration).cost(step, CPU)
    assert (cost.normalize_s, cost.loop_s, cost.loop_source) == (
        pytest.approx(10e-6 + 2e-9 * 96), pytest.approx(50e-6 + 10e-6 + 2e-9 * 96), "calibrated")


def test_pearl_profile_times_the_transform_as_two_lines():
    lines = time_normalize()
    assert set(lines) == {"step", "sample"}
    for line in lines.values():
        assert line["per_call"] > 0 and line["per_value"] >= 0


def test_the_plan_and_its_report_show_the_transforms_part_of_the_loop():
    algo = pearl.PPO("Acrobot-v1", n_envs=16, normalize=True)
    made = plan(algo.protocol(serialized=True), pearl.Platform.local(), estimator=Estimator(use_cache=False),
                horizon=4096, pareto_points=2)
    place = made.placements[ENV_STEP]
    cost = made.prediction.cost(ENV_STEP, place.device, place.variant)
    assert cost.normalize_s == pytest.approx(40e-6 + 7e-9 * 96)
    again = Plan.from_dict(made.to_dict())         # plan.json keeps it
    assert again.prediction.cost(ENV_STEP, place.device, place.variant).normalize_s == cost.normalize_s
    assert "60.7 us per env_step call, modelled, 40.7 us of it normalize's" in loop_sentence(made)
