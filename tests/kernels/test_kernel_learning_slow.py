"""Learning holds with every CPU variant: DQN CartPole (zoo config) with the reference, compiled or fused kernels.

``pearl run`` (tests/workflow/test_learning.py) uses whatever variants the plan picks on the machine;
here each variant is forced through the plan, the fused learner update with the fused inference."""
from __future__ import annotations

import dataclasses

import pytest

import pearl_py as pearl
from pearl_py.runtime.serial import SerialExecutor

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("learner_update", "inference"),
                         [("reference", "reference"), ("compiled", "reference"), ("fused", "fused")],
                         ids=["reference", "compiled", "fused"])
def test_dqn_cartpole_reaches_475_for_two_of_seeds_0_1_2(learner_update, inference):
    """As the reference test: the final or a periodic evaluation (every 5k steps, 10 episodes) >= 475."""
    config = pearl.load_config("examples/configs/dqn_cartpole.yaml")
    reached = []
    for seed in (0, 1, 2):
        algo = config.make_algorithm()
        plan = pearl.Plan.single_device(algo.protocol(serialized=True))
        for kernel, variant in (("learner_update", learner_update), ("inference", inference)):
            plan.placements[kernel] = dataclasses.replace(plan.placements[kernel], variant=variant)
        result = SerialExecutor(algo, seed, eval_freq=5_000, progress=False, plan=plan).run(
            config.settings.total_steps)
        assert result.plan["placements"]["learner_update"]["variant"] == learner_update
        assert result.plan["placements"]["inference"]["variant"] == inference
        best = max(result.eval_return_mean, (result.best_eval or {}).get("return_mean", float("-inf")))
        print(f"{learner_update}/{inference} seed {seed}: final eval {result.eval_return_mean:.1f}, "
              f"best {best:.1f}")
        reached.append(best >= 475)
        if sum(reached) == 2:
            break
    assert sum(reached) >= 2, f"seeds reaching 475: {reached}"
