"""The synchronous (on-policy) simulation agrees with the performance model's ``1 / (C + L)``.

The model is exact when every phase's calls run one after another (an actor's vector steps on its own core,
the learner's kernels in series): then the simulated rate is the model's to rounding. A batched inference on
a GPU serving several actors shares its links with them; the model charges the transfers in series, the
simulation lets the actors' transfers overlap: within 5%.
"""
from __future__ import annotations

import functools

import pytest

import pearl_py as pearl
from pearl_py.estimate import Estimator
from pearl_py.optimize.builder import build_problem
from pearl_py.optimize.model import Choice, evaluate
from pearl_py.platform import Platform
from pearl_py.protocol.schedule import RolloutSchedule
from pearl_py.simulate import simulate

PPO = dict(n_envs=8, n_steps=32, batch_size=64, n_epochs=4, net_arch=[64, 64])
A2C = dict(n_envs=8, n_steps=5, net_arch=[64, 64])


def actors(device: str, n: int, inference: str | None = None) -> dict[str, Choice]:
    return {"env_step": Choice(device, replicas=n), "inference": Choice(inference or device, replicas=1 if inference
                                                                        else n),
            "rollout_insert": Choice(device, replicas=n)}


CASES = {
    # the PEARL box: advantage scan on the FPGA, learner on the GPU
    "pearl box: FPGA advantage, GPU learner": ("pearl-cpu-gpu-fpga", "ppo", PPO, 0.0, {
        **actors("cpu", 4), "advantage": Choice("fpga"), "learner_update": Choice("gpu"), "param_sync": Choice("gpu")}),
    # everything on one CPU: the phases alternate on the same cores
    "dgx: one CPU": ("dgx-a100-node", "ppo", PPO, 0.0, {
        **actors("cpu1", 4), "advantage": Choice("cpu1"), "learner_update": Choice("cpu1"), "param_sync": Choice("cpu1")}),
    "dgx: A2C, eight actors": ("dgx-a100-node", "a2c", A2C, 0.0, {
        **actors("cpu1", 8), "advantage": Choice("cpu0"), "learner_update": Choice("gpu0"), "param_sync": Choice("gpu0")}),
    # one batched inference on a GPU for all actors
    "dgx: GPU inference": ("dgx-a100-node", "ppo", PPO, 0.05, {
        **actors("cpu1", 4, inference="gpu1"), "advantage": Choice("cpu0"), "learner_update": Choice("gpu0"),
        "param_sync": Choice("gpu0")}),
}


@functools.lru_cache(maxsize=None)
def _problem(platform: str, algo_name: str, hyper: tuple):
    algo = {"ppo": pearl.PPO, "a2c": pearl.A2C}[algo_name]("CartPole-v1", **dict(hyper))
    return algo, build_problem(algo.protocol(), Platform.load(platform), Estimator())


@pytest.mark.parametrize("case", sorted(CASES))
def test_simulated_rollouts_run_at_the_models_rate(case):
    platform, name, hyper, tolerance, assignment = CASES[case]
    algo, problem = _problem(platform, name, tuple((k, tuple(v) if isinstance(v, list) else v)
                                                   for k, v in hyper.items()))
    perf = evaluate(problem, assignment)
    assert perf.feasible, perf.violations
    assert perf.time_per_sample == pytest.approx(perf.collect_s + perf.learn_s)
    schedule = RolloutSchedule.from_config(algo.config, 12 * algo.config.rollout_size)
    result = simulate(problem, assignment, schedule)
    assert result.samples_per_s == pytest.approx(perf.samples_per_s, rel=tolerance or 1e-9)
    # the phase that bounds the plan names the device doing most of its work, the simulation's busiest
    assert perf.bottleneck.endswith(f"({result.bottleneck})")


def test_more_actors_shorten_collection_and_lengthen_the_publication():
    """Four actors each step a quarter of the envs (a call's fixed cost stays), and every one of them receives
    the parameters: collection shortens, learning lengthens; the simulation follows the model."""
    algo, problem = _problem("dgx-a100-node", "ppo", tuple((k, tuple(v) if isinstance(v, list) else v)
                                                           for k, v in PPO.items()))
    learner = {"advantage": Choice("cpu0"), "learner_update": Choice("gpu0"), "param_sync": Choice("gpu0")}
    one, four = (evaluate(problem, {**actors("cpu1", n), **learner}) for n in (1, 4))
    assert four.collect_s < 0.8 * one.collect_s and four.learn_s > one.learn_s
    schedule = RolloutSchedule.from_config(algo.config, 12 * algo.config.rollout_size)
    sim_one, sim_four = (simulate(problem, {**actors("cpu1", n), **learner}, schedule) for n in (1, 4))
    assert sim_four.samples_per_s / sim_one.samples_per_s == pytest.approx(one.time_per_sample
                                                                           / four.time_per_sample, rel=1e-9)
