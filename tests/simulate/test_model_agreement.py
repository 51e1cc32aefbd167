"""The simulator agrees with the performance model within 5% where the model is exact.

The model is exact when no two processes contend for a unit (every device and link in use serves one
process's stream of calls, or a CPU's processes have a core each) and the actors' inference runs beside
their envs: then the steady-state rate is set by the busiest resource, or the busiest process, alone. Every plan below
is such a pipeline, on a different platform or with a different bottleneck.
"""
from __future__ import annotations

import pytest
from sim_problems import problem_for

from pearl_py.optimize.model import POLICY_LAG, Choice, evaluate
from pearl_py.simulate import SimSchedule, simulate

ZOO = dict(train_freq=256, gradient_steps=128, batch_size=64, net_arch=(256, 256))
LIGHT_LEARNER = dict(train_freq=64, gradient_steps=1, batch_size=64, n_envs=8)

CASES = {
    # GPU learner bound; replay on a CPU of its own (replay server + learner processes)
    "dgx: learner-bound": ("dgx-a100-node", ZOO, {
        "env_step": Choice("cpu1", replicas=4), "inference": Choice("cpu1", replicas=4),
        "replay_insert": Choice("cpu0"), "replay_sample": Choice("cpu0"),
        "learner_update": Choice("gpu0"), "param_sync": Choice("gpu0")}),
    # one actor is the bottleneck
    "dgx: actor-bound": ("dgx-a100-node", LIGHT_LEARNER, {
        "env_step": Choice("cpu1"), "inference": Choice("cpu1"),
        "replay_insert": Choice("cpu0"), "replay_sample": Choice("cpu0"),
        "learner_update": Choice("gpu0"), "param_sync": Choice("gpu0")}),
    # replay with the learner in one process (the local runtime's layout) on a CPU of its own
    "dgx: replay in the learner process": ("dgx-a100-node", ZOO, {
        "env_step": Choice("cpu1", replicas=2), "inference": Choice("cpu1", replicas=2),
        "replay_insert": Choice("cpu0"), "replay_sample": Choice("cpu0"),
        "learner_update": Choice("cpu0"), "param_sync": Choice("cpu0")}),
    # actor processes and the learner process side by side on the cores of one CPU (the local runtime's layout
    # on one machine): the learner's process sets the pace, then the actors' (each runs its share in turn)
    "one CPU's cores: learner-bound": ("dgx-a100-node", ZOO, {
        "env_step": Choice("cpu0", replicas=2), "inference": Choice("cpu0", replicas=2),
        "replay_insert": Choice("cpu0"), "replay_sample": Choice("cpu0"),
        "learner_update": Choice("cpu0"), "param_sync": Choice("cpu0")}),
    "one CPU's cores: actor-bound": ("dgx-a100-node", LIGHT_LEARNER, {
        "env_step": Choice("cpu0"), "inference": Choice("cpu0"),
        "replay_insert": Choice("cpu0"), "replay_sample": Choice("cpu0"),
        "learner_update": Choice("cpu0"), "param_sync": Choice("cpu0")}),
    # PEARL's box: prioritized replay on the FPGA, learner on the GPU
    "pearl box: FPGA replay": ("pearl-cpu-gpu-fpga", dict(ZOO, prioritized_replay=True), {
        "env_step": Choice("cpu", replicas=8), "inference": Choice("cpu", replicas=8),
        "replay_insert": Choice("fpga"), "replay_sample": Choice("fpga"), "priority_update": Choice("fpga"),
        "learner_update": Choice("gpu"), "param_sync": Choice("gpu")}),
    # one actor on each of 64 nodes, transitions over 40GbE TCP to a GPU replay (in the learner's process: a
    # replay on a GPU is a TorchReplayBuffer beside the learner)
    "cluster: pooled actors": ("cluster-64x8gpu", LIGHT_LEARNER, {
        "env_step": Choice("pool:epyc-7742x64", replicas=64), "inference": Choice("pool:epyc-7742x64", replicas=64),
        "replay_insert": Choice("node0.gpu0"), "replay_sample": Choice("node0.gpu0"),
        "learner_update": Choice("node0.gpu0"), "param_sync": Choice("node0.gpu0")}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_simulated_rate_matches_the_model(case: str) -> None:
    platform, hyper, assignment = CASES[case]
    algo, problem = problem_for(platform, **hyper)
    perf = evaluate(problem, assignment)
    assert perf.feasible, perf.violations
    steps = 40 * algo.config.train_freq * algo.config.n_envs
    result = simulate(problem, assignment, SimSchedule.from_config(algo.config, steps, learning_starts=0))
    assert result.samples_per_s == pytest.approx(perf.samples_per_s, rel=0.05)
    # under the policy-lag chain the learner's device is the busiest, idle while actors collect
    busiest = assignment["learner_update"].device if perf.bottleneck == POLICY_LAG else perf.bottleneck
    assert result.bottleneck == busiest
    assert result.utilization[busiest] == pytest.approx(perf.utilization[busiest], abs=0.05)
