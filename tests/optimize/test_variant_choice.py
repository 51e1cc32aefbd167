"""The optimizer chooses a kernel's variant with its device: the faster one, the reference where the fast one
cannot run, and one with a one-off setup only when the run pays it back; the report says why."""
from __future__ import annotations

import dataclasses

import pytest
from variant_helpers import estimator

import pearl_py as pearl
from pearl_py.estimate import Estimator
from pearl_py.kernels import REGISTRY
from pearl_py.optimize.api import plan
from pearl_py.optimize.builder import break_even_calls, build_problem
from pearl_py.platform import Platform
from pearl_py.protocol import KernelKind
from pearl_py.report import content
from pearl_py.report.markdown import render_markdown


@pytest.fixture(scope="module")
def algo():
    return pearl.DQN("CartPole-v1", batch_size=64, net_arch=[256, 256])


@pytest.fixture(scope="module")
def local():
    return Platform.local()


def without(monkeypatch, kind: str, name: str, device_class: str = "cpu") -> None:
    key = (KernelKind(kind), device_class, name)
    monkeypatch.setitem(REGISTRY._variants, key, dataclasses.replace(
        REGISTRY._variants[key], requires=lambda: (False, "torch.compile cannot run here: test")))


def test_break_even():
    assert break_even_calls(10.0, 1e-3, 2e-3) == pytest.approx(10_000)
    assert break_even_calls(0.0, 3e-3, 2e-3) == 0.0
    assert break_even_calls(1.0, 3e-3, 2e-3) == float("inf")


def test_faster_variants_are_chosen_over_a_long_run(algo, local):
    p = plan(algo, local, estimator=estimator(), horizon=1e6, pareto_points=2)
    assert p.placements["learner_update"].variant == "compiled"
    assert p.placements["inference"].variant == "fused"
    costs = p.prediction.costs["learner_update"][p.placements["learner_update"].device]
    assert costs["compiled"].latency_s < costs["reference"].latency_s
    assert costs["compiled"].setup_s > 0 and costs["reference"].setup_s == 0


def test_reference_where_the_fast_variant_is_unavailable(algo, local, monkeypatch):
    without(monkeypatch, "learner_update", "compiled")
    p = plan(algo, local, estimator=estimator(), horizon=1e6, pareto_points=2)
    assert p.placements["learner_update"].variant == "reference"
    assert p.placements["inference"].variant == "fused"
    assert any("'compiled' not offered on cpu: torch.compile cannot run here" in n
               for n in p.prediction.variant_notes["learner_update"])


def test_setup_not_paid_back_keeps_the_reference(algo, local):
    est = estimator()
    protocol = algo.protocol()
    kernel = protocol.kernel("learner_update")
    cpu = local.device("cpu")
    fast, ref = est.cost(kernel, cpu, "compiled"), est.cost(kernel, cpu)
    needed = break_even_calls(fast.setup_s, fast.latency_s, ref.latency_s)
    samples = needed / kernel.rate
    short = build_problem(protocol, local, est, horizon=0.5 * samples)
    long = build_problem(protocol, local, est, horizon=2 * samples)
    unknown = build_problem(protocol, local, est)
    assert ("learner_update", "cpu", "compiled") not in short.options
    assert ("learner_update", "cpu", "compiled") in long.options
    assert ("learner_update", "cpu", "compiled") not in unknown.options
    assert ("inference", "cpu", "fused") in unknown.options           # no setup: offered whatever the run
    (note,) = [n for n in short.variant_notes["learner_update"] if "'compiled'" in n]
    assert "not chosen: its one-off setup of" in note and "the run makes" in note
    assert any("'compiled'" in n and "run length is unknown" in n for n in unknown.variant_notes["learner_update"])


def test_report_says_why_each_variant_runs(algo, local):
    p = plan(algo, local, estimator=estimator(), horizon=1e6, pareto_points=2)
    sentences = content.variant_sentences(p)
    assert len(sentences) == 2
    learner = next(s for s in sentences if s.startswith("learner_update"))
    assert learner.startswith("learner_update runs 'compiled' on cpu: ")
    assert "per call for 'reference' (calibrated)" in learner
    assert "one-off setup of" in learner and "pays back after" in learner and "updates (the run makes" in learner
    inference = next(s for s in sentences if s.startswith("inference"))
    assert inference.endswith("with no one-off setup.")
    assert learner in render_markdown(p)


def test_report_lists_variants_not_chosen(algo, local):
    p = plan(algo, local, estimator=estimator(), pareto_points=2)
    assert p.placements["learner_update"].variant == "reference"
    text = render_markdown(p)
    assert "learner_update: variant 'compiled' on cpu not chosen" in text and "run length is unknown" in text


def test_catalogue_gpu_learner_uses_cuda_graph_over_a_long_run():
    ddpg = pearl.DDPG("Pendulum-v1")
    p = plan(ddpg, "dgx-a100-node", estimator=Estimator(use_cache=False), horizon=1e7, pareto_points=2,
             constraints={"pin": {"learner_update": "gpu0"}})
    assert p.placements["learner_update"] == pearl.Plan.from_dict(p.to_dict()).placements["learner_update"]
    assert p.placements["learner_update"].variant == "cuda_graph"
    assert any(s.startswith("learner_update runs 'cuda_graph' on gpu0") for s in content.variant_sentences(p))
