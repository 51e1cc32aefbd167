"""Central batched inference: replies reach the actor that asked, rounds batch every unfinished actor
in actor order, exploration is the same for a seed however the requests arrive."""
from __future__ import annotations

import contextlib
import os
import random
import threading
import time

import numpy as np
import torch
from served_helpers import (
    MISROUTED,
    SEEN,
    SMALL_DQN,
    FixedPolicyDQN,
    plan_with,
    reset_records,
)

from pearl_py import kernels
from pearl_py.algorithms.networks import Networks
from pearl_py.runtime.parallel import ParallelExecutor
from pearl_py.runtime.parallel.control import ControlBlock
from pearl_py.runtime.parallel.inference_server import InferenceClient
from pearl_py.runtime.parallel.params import ParamBoard
from pearl_py.runtime.parallel.services import start_inference_server

ROUNDS = 30


def test_actions_come_back_to_the_actor_that_asked():
    """Greedy rule, no exploration, no warm-up: every stored action must be the rule's for its own obs."""
    algo = FixedPolicyDQN("CartPole-v1", **{**SMALL_DQN, "learning_starts": 0}, exploration_initial_eps=0.0,
                          exploration_final_eps=0.0)
    plan = plan_with(algo, actors=2)
    reset_records()
    result = ParallelExecutor(algo, plan, seed=1, eval_episodes=1, progress=False, inference="central").run(401)
    assert result.env_steps == 401 and result.gradient_steps == 400 // 25 * 5
    assert len(SEEN) == result.gradient_steps and sum(MISROUTED) == 0
    times = result.kernel_times
    assert times["inference_request"]["calls"] == 401  # every vector step of both actors asked the server
    assert times["inference"]["calls"] == 201  # rounds: 200 with both actors, then actor 0's last step alone
    assert result.layout["inference"] == "central on cpu (one server process, batched over the actors)"
    assert result.executed_on["inference"] == "cpu"  # as the server reported building its networks


def test_rounds_batch_actors_in_order_and_exploration_follows_the_seed(tmp_path):
    """Two clients ask with random delays; the server's actions must equal one batched call per round
    (actor 0's rows, then actor 1's) on a torch stream seeded as the server's."""
    algo = FixedPolicyDQN("CartPole-v1", **SMALL_DQN, exploration_initial_eps=0.5, exploration_final_eps=0.5)
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(2, ROUNDS, 1, 4)).astype(np.float32)
    answers: dict[int, list[np.ndarray]] = {0: [], 1: []}
    prefix = f"pearl-{os.getpid()}-test"
    with contextlib.ExitStack() as stack:
        control = ControlBlock.create(actors=2, name=f"{prefix}-ctl")
        stack.callback(control.close)
        board = ParamBoard.create(Networks(algo.build_networks()).acting_state(algo.acting_networks),
                                  f"{prefix}-params")
        stack.callback(board.close)
        endpoints = start_inference_server(stack, prefix, algo, control, board, actors=2, variant="reference",
                                           device=torch.device("cpu"), seed=11, total_steps=1_000, errors=tmp_path)

        def actor(index: int) -> None:
            client = InferenceClient(endpoints.links[index], control, index)
            delays = random.Random()  # unseeded: the arrival order differs from run to run
            try:
                for r in range(ROUNDS):
                    time.sleep(delays.uniform(0, 0.004))
                    answers[index].append(client(obs[index, r], steps=r, progress=0.5))
                client.finish()
            finally:
                client.close()

        threads = [threading.Thread(target=actor, args=(i,)) for i in (0, 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        endpoints.service.check()
    got = np.concatenate([np.concatenate([answers[0][r], answers[1][r]]) for r in range(ROUNDS)])
    assert np.array_equal(got, expected_actions(algo, obs, seed=11))
    assert not np.array_equal(got, expected_actions(algo, obs, seed=12))  # the seed decides the exploration


def expected_actions(algo, obs: np.ndarray, seed: int) -> np.ndarray:
    """What the server computes: torch seeded, networks built, one reference call per round."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        infer = kernels.build(kernels.KernelKind.INFERENCE, "reference", algo, Networks(algo.build_networks()),
                              device_class="cpu")
        return np.concatenate([infer(np.concatenate([obs[0, r], obs[1, r]]), explore=True, progress=0.5)
                               for r in range(obs.shape[1])])
