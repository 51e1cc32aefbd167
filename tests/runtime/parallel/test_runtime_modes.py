"""Where a plan puts inference and replay: the layout's rules, options, description and report rows."""
from __future__ import annotations

import pytest
import torch
from served_helpers import plan_with, with_modelled_costs

import pearl_py as pearl
from pearl_py.report.measured import summary_rows
from pearl_py.runtime.parallel.placement import RuntimeLayout


@pytest.fixture
def algo():
    return pearl.DQN("CartPole-v1")


def test_everything_on_the_cpu_runs_inference_on_the_actors_and_replay_in_the_learner(algo):
    layout = RuntimeLayout.from_plan(plan_with(algo, actors=2))
    assert (layout.inference, layout.replay) == ("actor", "colocated")
    assert layout.describe()["inference"] == "on each actor (batched over its envs)"
    assert layout.describe()["replay"] == "co-located with the learner"


def test_cpu_devices_of_other_names_are_the_same_host(algo):
    layout = RuntimeLayout.from_plan(plan_with(algo, inference="cpu1", replay_sample="cpu1"))
    assert (layout.inference, layout.replay) == ("actor", "colocated")


def test_replay_kernels_on_another_device_than_the_learner_run_in_a_server(algo):
    plan = with_modelled_costs(plan_with(algo, replay_insert="fpga0"), {"replay_insert": 1e-6})
    layout = RuntimeLayout.from_plan(plan, replay_prefetch=2, replay_order="relaxed")
    assert layout.replay == "server" and set(layout.simulated) == {"replay_insert"}
    assert layout.simulated["replay_insert"].latency_s == 1e-6
    assert layout.describe()["replay"] == "server process (prefetch 2, relaxed priority order)"


def test_inference_on_another_device_than_the_envs_is_central_on_it(algo):
    plan = with_modelled_costs(plan_with(algo, inference="fpga0"), {"inference": 2e-6})
    layout = RuntimeLayout.from_plan(plan)
    assert layout.inference == "central" and layout.inference_device == torch.device("cpu")
    assert layout.describe()["inference"] == "central on cpu (one server process, batched over the actors)"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a machine without CUDA")
def test_central_inference_on_a_gpu_needs_cuda(algo):
    with pytest.raises(pearl.UserError, match="plan: inference is placed on GPU 'gpu0' but torch sees no CUDA"):
        RuntimeLayout.from_plan(plan_with(algo, inference="gpu0"))
    # forced onto the actors, the GPU placement is not used
    assert RuntimeLayout.from_plan(plan_with(algo, inference="gpu0"), inference="actor").inference == "actor"


def test_options_override_the_plan_and_bad_values_name_the_option(algo):
    plan = plan_with(algo)
    layout = RuntimeLayout.from_plan(plan, inference="central", replay="server")
    assert (layout.inference, layout.replay) == ("central", "server")
    with pytest.raises(pearl.UserError, match=r"replay must be one of colocated, server .*got 'remote'"):
        RuntimeLayout.from_plan(plan, replay="remote")
    with pytest.raises(pearl.UserError, match=r"inference must be one of actor, central .*got 'gpu'"):
        RuntimeLayout.from_plan(plan, inference="gpu")
    with pytest.raises(pearl.UserError, match=r"replay_order must be one of strict, relaxed .*got 'loose'"):
        RuntimeLayout.from_plan(plan, replay_order="loose")
    with pytest.raises(pearl.UserError, match="replay_prefetch must be an integer >= 1, got 0"):
        RuntimeLayout.from_plan(plan, replay_prefetch=0)


def test_the_run_report_names_the_layout(algo):
    plan = plan_with(algo, actors=2)
    layout = RuntimeLayout.from_plan(plan, replay="server").describe()
    run = {"env_steps": 1000, "samples_per_second": 500.0, "wall_seconds": 2.0, "eval_return_mean": 9.0,
           "eval_return_std": 1.0, "backend": "local-parallel", "layout": layout}
    rows = dict(summary_rows(plan, run))
    assert rows["runtime: actors"] == "2"
    assert rows["runtime: inference"] == "on each actor (batched over its envs)"
    assert rows["runtime: replay"] == "server process (prefetch 4, strict priority order)"
    assert "runtime: replay" not in dict(summary_rows(plan, {**run, "layout": {}}))
