"""User-defined algorithms through the public API: the docs examples (off- and on-policy) and the Averaged-DQN
example run."""
from __future__ import annotations

import re
import runpy
from pathlib import Path

import numpy as np
import pytest
import torch

import pearl_py as pearl
from pearl_py.algorithms import REGISTRY, Networks
from pearl_py.runtime.on_policy_serial import OnPolicySerialExecutor


def docs_block(after_heading: str) -> str:
    text = Path("docs/api.md").read_text()
    section = text.split(f"## {after_heading}", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_docs_example_algorithm_trains_and_derives_its_protocol():
    namespace: dict = {}
    exec(compile(docs_block("Define a new algorithm"), "docs/api.md", "exec"), namespace)
    try:
        algo = namespace["SoftQ"]("CartPole-v1", net_arch=[16], learning_starts=50, batch_size=8)
        graph = algo.protocol()
        assert graph.kernel("learner_update").workload.trained_params > 0
        result = pearl.train(algo, total_steps=200, seed=0, eval_episodes=1, progress=False)
        # rounds every 4 steps once past learning_starts: steps 52, 56, ..., 200
        assert result.env_steps == 200 and result.gradient_steps == 38
    finally:
        REGISTRY.pop("softq", None)


def test_averaged_dqn_example_defines_a_working_algorithm():
    module = runpy.run_path("examples/custom_algorithm.py", run_name="example")
    try:
        algo = module["AveragedDQN"]("CartPole-v1", net_arch=[16], learning_starts=50, batch_size=8,
                                     target_update_interval=20, n_averaged=3)
        (loss,) = algo.losses()
        assert loss.form == "custom"              # not DQN's math: kernels written for DQN refuse it
        layers = algo.protocol().kernel("learner_update").workload.layers
        # 3 snapshots on next_obs (no gradient), then the online network on obs (with gradient)
        assert [(layer.n_out, layer.backward) for layer in layers] == [(16, False), (2, False)] * 3 + [
            (16, True), (2, True)]
        result = pearl.train(algo, total_steps=200, seed=0, eval_episodes=1, progress=False)
        assert result.gradient_steps == 38 and "averaged_dqn" in REGISTRY
    finally:
        REGISTRY.pop("averaged_dqn", None)


def test_averaged_dqn_snapshots_rotate_oldest_first():
    module = runpy.run_path("examples/custom_algorithm.py", run_name="example")
    REGISTRY.pop("averaged_dqn", None)
    q = torch.nn.Linear(2, 1)
    snapshots = module["QSnapshots"](q, 3)
    for value in (1.0, 2.0, 3.0, 4.0):
        with torch.no_grad():
            q.weight.fill_(value)
        snapshots.push(q)
    assert [float(c.weight[0, 0]) for c in snapshots.copies] == [4.0, 2.0, 3.0]
    obs = torch.ones(1, 2)
    with torch.no_grad():
        assert float(snapshots(obs)) == pytest.approx(float(q.bias) + 2 * (4.0 + 2.0 + 3.0) / 3)


def test_docs_on_policy_example_trains_a_few_rollouts(write_config):
    namespace: dict = {}
    exec(compile(docs_block("Define a new on-policy algorithm"), "docs/api.md", "exec"), namespace)
    try:
        algo = namespace["algo"]
        assert (algo.config.n_envs, algo.config.n_steps, algo.config.gae_lambda) == (4, 128, 1.0)
        executor = OnPolicySerialExecutor(algo, seed=0, eval_episodes=2, progress=False)
        torch.manual_seed(0)     # the executor seeds torch so before it builds the networks
        before = {k: v.clone() for k, v in Networks(algo.build_networks()).state_dict().items()}
        result = executor.run(4 * 512)
        # 4 rollouts of 128 x 4 steps, one gradient step each (A2C-like: the whole rollout, one epoch)
        assert (result.env_steps, result.gradient_steps) == (2048, 4)
        after = executor.learner.nets.state_dict()
        assert set(after) == {"online.pi.0.weight", "online.pi.0.bias", "online.pi.2.weight", "online.pi.2.bias",
                              "online.pi.4.weight", "online.pi.4.bias", "online.v.0.weight", "online.v.0.bias",
                              "online.v.2.weight", "online.v.2.bias", "online.v.4.weight", "online.v.4.bias"}
        assert all(not torch.equal(before[k], after[k]) for k in after)   # both networks learned
        # it learned from Monte-Carlo returns (lambda = 1): R_t = r_t + gamma * R_{t+1} within an episode
        r = executor.rollout
        same_episode = r.episode_starts[1:] == 0
        np.testing.assert_allclose((r.rewards[:-1] + 0.99 * r.returns[1:])[same_episode], r.returns[:-1][same_episode],
                                   rtol=1e-4)
        path = write_config("algorithm: vpg\nenv: CartPole-v1\nhyperparameters:\n  gae_lambda: 1.0\n")
        assert isinstance(pearl.load_config(path).make_algorithm(), namespace["VPG"])
    finally:
        REGISTRY.pop("vpg", None)
