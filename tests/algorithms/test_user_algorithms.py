"""User-defined algorithms through the public API: the docs examples (off- and on-policy) and the TD3 example run."""
from __future__ import annotations

import re
import runpy
from pathlib import Path

import numpy as np
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


def test_td3_example_defines_a_working_algorithm():
    module = runpy.run_path("examples/custom_algorithm.py", run_name="example")
    try:
        algo = module["TD3"]("Pendulum-v1", net_arch=[16], learning_starts=50, batch_size=8,
                             target_update_interval=2)
        learner_kernel = algo.protocol().kernel("learner_update")
        assert learner_kernel.workload.period == 2  # delayed actor
        result = pearl.train(algo, total_steps=150, seed=0, eval_episodes=1, progress=False)
        assert result.gradient_steps == 100
        assert "td3" in REGISTRY
    finally:
        REGISTRY.pop("td3", None)


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
