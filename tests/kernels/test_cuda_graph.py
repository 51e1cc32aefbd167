"""The CUDA-graph learner update equals the reference on the GPU (runs only where CUDA is present).

Losses that draw random numbers (TD3's target smoothing) are not compared: inside a
captured graph the CUDA generator advances by offsets, not in eager order.
"""
from __future__ import annotations

import pytest
import torch
from kernel_helpers import assert_same_run

import pearl_py as pearl
from pearl_py import kernels

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(),
                                 reason="needs CUDA: torch.cuda.is_available() is False on this machine")]


@pytest.mark.parametrize("make_algo", [
    lambda: pearl.DQN("CartPole-v1", batch_size=64, net_arch=[256, 256], double_q=True, target_update_interval=10),
    lambda: pearl.DDPG("Pendulum-v1"),
], ids=["double_dqn", "ddpg"])
def test_cuda_graph_equals_reference(make_algo):
    def build(learner):
        return kernels.build("learner_update", "cuda_graph", learner, device_class="gpu")

    assert_same_run(make_algo(), build, device="cuda")


def test_a_lin_learning_rate_set_per_round_reaches_the_captured_graph():
    def build(learner):
        return kernels.build("learner_update", "cuda_graph", learner, device_class="gpu")

    assert_same_run(pearl.DDPG("Pendulum-v1", learning_rate="lin_1e-3"), build, device="cuda", rounds_of=10)
