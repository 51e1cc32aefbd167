"""pearl.plan on catalogue platforms: objectives that disagree, infeasible problems, the CPU/GPU ratio."""
from __future__ import annotations

import pytest

import pearl_py as pearl
from pearl_py.errors import PlanningError, UserError
from pearl_py.estimate import Estimator
from pearl_py.optimize.api import plan
from pearl_py.optimize.builder import build_problem
from pearl_py.optimize.solve import solve
from pearl_py.plan import Plan
from pearl_py.platform import Platform


@pytest.fixture(scope="module")
def pearl_platform():
    return Platform.load("pearl-cpu-gpu-fpga")


@pytest.fixture(scope="module")
def estimator():
    return Estimator(use_cache=False)


@pytest.fixture(scope="module")
def wide_dqn():
    return pearl.DQN("CartPole-v1", net_arch=[256, 256], batch_size=256).protocol()


def test_throughput_and_power_plans_differ_and_report_says_why(pearl_platform, estimator, wide_dqn):
    fast = plan(wide_dqn, pearl_platform, objective="throughput", estimator=estimator)
    frugal = plan(wide_dqn, pearl_platform, objective="power", estimator=estimator)
    moved = [k for k in fast.placements if fast.placements[k].device != frugal.placements[k].device]
    assert moved, "the models favour different devices for some kernel"
    assert fast.prediction.samples_per_s > frugal.prediction.samples_per_s
    assert frugal.prediction.samples_per_j > fast.prediction.samples_per_j
    # neither plan switches the GPU on: it would add its 55 W idle power and no speed (among the fastest plans
    # the throughput objective takes the least energy one); the power plan saves dynamic energy on the FPGA
    assert "gpu" not in {p.device for p in [*fast.placements.values(), *frugal.placements.values()]}
    sentence = fast.prediction.comparison
    assert sentence.startswith("The power objective moves") and "less dynamic energy per sample" in sentence
    assert fast.prediction.alternative.placements["replay_sample"].device == \
        frugal.placements["replay_sample"].device
    assert fast.prediction.solver.optimal and frugal.prediction.solver.optimal


def test_plan_round_trips_and_states_ratio(pearl_platform, estimator):
    # wide enough for the GPU to host the update: it pays its 300 counted operators' launches per update whatever
    # the widths, the FPGA its MACs (at DDPG's default [400, 300] the power objective puts the update on the FPGA)
    ddpg = pearl.DDPG("Pendulum-v1", net_arch=[1024, 1024]).protocol()
    result = plan(ddpg, pearl_platform, objective="power", estimator=estimator)
    again = Plan.from_dict(result.to_dict())
    assert again == result
    ratio = result.prediction.cpu_gpu_ratio
    assert ratio.learner_gpus == 1 and ratio.ratio == ratio.actor_cores
    assert len(result.prediction.pareto) >= 2
    assert result.prediction.limit.startswith("Throughput is limited by gpu (learner_update, param_sync)")


def test_no_device_can_host_a_pinned_kernel(pearl_platform, estimator, wide_dqn):
    with pytest.raises(PlanningError, match=r"kernel 'env_step' is pinned to 'gpu', which cannot host it "
                                            r"\(env_step does not fit on gpu: device kind"):
        plan(wide_dqn, pearl_platform, constraints={"pin": {"env_step": "gpu"}}, estimator=estimator)


def test_no_device_left_for_a_kernel(pearl_platform, estimator, wide_dqn):
    with pytest.raises(PlanningError, match=r"kernel 'env_step': no device of 'pearl-cpu-gpu-fpga' can host it"):
        plan(wide_dqn, pearl_platform, constraints={"exclude": ["cpu"]}, estimator=estimator)


def test_power_cap_below_idle_power(pearl_platform, estimator, wide_dqn):
    with pytest.raises(PlanningError, match=r"kernel 'env_step': power cap 40 W is below the idle power of every "
                                            r"device that can host it \(least: cpu idles at 55 W\)"):
        plan(wide_dqn, pearl_platform, constraints={"power_cap_w": 40}, estimator=estimator)


def test_fpga_design_that_does_not_fit(pearl_platform, estimator):
    # weights that do not fit on chip stream from off-chip memory; a batch's activations kept for backward must fit
    big = pearl.DQN("CartPole-v1", net_arch=[1024, 1024], batch_size=1024).protocol()
    with pytest.raises(PlanningError, match=r"kernel 'learner_update' is pinned to 'fpga', which cannot host it "
                                            r"\(learner_update does not fit on (fpga|agilex-agf014): (dsp|lut|m20k|mlab): needs"):
        plan(big, pearl_platform, constraints={"pin": {"learner_update": "fpga"}}, estimator=estimator)


def test_power_cap_slows_the_plan_and_the_report_says_so(pearl_platform, estimator, wide_dqn):
    free = plan(wide_dqn, pearl_platform, objective="throughput", estimator=estimator)
    # the fastest plans tie (the FPGA learner bounds them); the most frugal of them sets the power a cap must undercut
    tied = plan(wide_dqn, pearl_platform, objective="throughput", estimator=estimator,
                constraints={"power_cap_w": 0.999 * free.prediction.figures.power_w})
    assert tied.prediction.samples_per_s <= free.prediction.samples_per_s
    cap = 0.97 * tied.prediction.figures.power_w
    capped = plan(wide_dqn, pearl_platform, objective="throughput", constraints={"power_cap_w": cap},
                  estimator=estimator)
    assert capped.prediction.figures.power_w <= cap * (1 + 1e-9)
    assert capped.prediction.samples_per_s < free.prediction.samples_per_s


def test_bad_constraints_and_objective_are_user_errors(pearl_platform, estimator, wide_dqn):
    with pytest.raises(PlanningError, match="unknown constraint 'power_cap'"):
        plan(wide_dqn, pearl_platform, constraints={"power_cap": 10}, estimator=estimator)
    with pytest.raises(PlanningError, match="objective must be throughput or power"):
        plan(wide_dqn, pearl_platform, objective="speed", estimator=estimator)
    with pytest.raises(UserError, match="pin: platform 'pearl-cpu-gpu-fpga' has no device 'tpu'"):
        plan(wide_dqn, pearl_platform, constraints={"pin": {"learner_update": "tpu"}}, estimator=estimator)


def test_cluster_actors_spread_over_the_cpu_pool(estimator):
    algo = pearl.DQN("CartPole-v1", n_envs=1).protocol()
    problem = build_problem(algo, Platform.load("dgx-a100-node"), estimator)
    assert "pool:epyc-7742x2" in problem.devices
    assert ("env_step", "pool:epyc-7742x2") in {(k, d) for k, d, _ in problem.options}
    sol = solve(problem, "throughput")
    assert sol.optimal and sol.performance.feasible
