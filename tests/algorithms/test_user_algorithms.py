"""User-defined algorithms through the public API: the docs example and the TD3 example run."""
from __future__ import annotations

import re
import runpy
from pathlib import Path

import pearl_py as pearl
from pearl_py.algorithms import REGISTRY


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
