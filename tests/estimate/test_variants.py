"""Kernel variants in the cost models: calibrated per variant, modelled per variant, offered where they run."""
from __future__ import annotations

import dataclasses

import pytest

import pearl_py as pearl
from pearl_py.estimate import Calibration, Estimator, Infeasible
from pearl_py.estimate.calibration import model_key
from pearl_py.estimate.fit import FittedModel
from pearl_py.profile.microbench import OFF_POLICY, BenchCall, BenchPoint, build
from pearl_py.profile.profiler import (
    calibration_grid,
    measure,
    setup_cached,
    setup_entry,
    variant_available,
)
from pearl_py.kernels import REGISTRY
from pearl_py.platform import Platform
from pearl_py.protocol import KernelKind

NET = ("flops", "bytes", "ops")


def synthetic_calibration(compiled: bool = True, fused: bool = True) -> Calibration:
    """Reference learner 1 ms + 10 ns/FLOP; compiled 0.2 ms + 8 ns/FLOP after a 9 s cold compile."""
    models = {model_key("learner_update", "reference"): FittedModel("linear", NET, (1e-3, 1e-11, 0, 0), "flops"),
              model_key("inference", "reference"): FittedModel("linear", NET, (60e-6, 1e-12, 0, 0), "flops")}
    meta = {}
    if compiled:
        models[model_key("learner_update", "compiled")] = FittedModel("linear", NET, (2e-4, 8e-12, 0, 0), "flops")
        meta["setup"] = {"learner_update/compiled": {"seconds": 9.0, "cold": [9.0], "warm": []}}
    if fused:
        models[model_key("inference", "fused")] = FittedModel("linear", NET, (50e-6, 1e-12, 0, 0), "flops")
    return Calibration("test", models, meta)


@pytest.fixture(scope="module")
def graph():
    return pearl.DQN("CartPole-v1", batch_size=64, net_arch=[256, 256]).protocol()


@pytest.fixture
def cpu():
    return Platform.local().device("cpu")


def unavailable(monkeypatch, kind: str, name: str, device_class: str, reason: str) -> None:
    key = (KernelKind(kind), device_class, name)
    monkeypatch.setitem(REGISTRY._variants, key,
                        dataclasses.replace(REGISTRY._variants[key], requires=lambda: (False, reason)))


def test_each_variant_gets_its_own_calibrated_cost_and_setup(graph, cpu):
    est = Estimator(synthetic_calibration())
    kernel = graph.kernel("learner_update")
    flops = kernel.workload.flops
    ref, fast = est.kernel_cost(kernel, cpu), est.kernel_cost(kernel, cpu, "compiled")   # alone: no loop work
    assert ref.source == fast.source == "calibrated"
    assert ref.latency_s == pytest.approx(1e-3 + 1e-11 * flops)
    assert fast.latency_s == pytest.approx(2e-4 + 8e-12 * flops)
    assert ref.setup_s == 0 and fast.setup_s == 9.0
    infer = graph.kernel("inference")
    assert est.cost(infer, cpu, "fused").latency_s < est.cost(infer, cpu).latency_s


def test_local_cpu_offers_calibrated_available_variants(graph, cpu):
    est = Estimator(synthetic_calibration())
    # other registered variants the synthetic calibration lacks are not offered
    assert est.variants(graph.kernel("learner_update"), cpu) == ["reference", "compiled"]
    assert est.variants(graph.kernel("inference"), cpu) == ["reference", "fused"]
    assert est.variants(graph.kernel("replay_sample"), cpu) == ["reference"]


def test_a_calibration_older_than_the_variant_does_not_offer_it(graph, cpu):
    est = Estimator(synthetic_calibration(compiled=False))
    kernel = graph.kernel("learner_update")
    assert est.variants(kernel, cpu) == ["reference"]
    assert "run `pearl profile`" in est.unavailable_variants(kernel, cpu)["compiled"]


def test_unavailable_variant_is_not_offered_on_this_machine(graph, cpu, monkeypatch):
    unavailable(monkeypatch, "learner_update", "compiled", "cpu", "no C++ compiler")
    est = Estimator(synthetic_calibration())
    kernel = graph.kernel("learner_update")
    assert est.variants(kernel, cpu) == ["reference"]
    assert est.unavailable_variants(kernel, cpu)["compiled"] == "no C++ compiler"
    assert variant_available("learner_update", "compiled", family=OFF_POLICY) == (False, "no C++ compiler")


def test_uncalibrated_devices_get_a_modelled_cost_per_variant(graph):
    est = Estimator(use_cache=False)
    kernel = graph.kernel("learner_update")
    xeon = Platform.load("pearl-cpu-gpu-fpga").device("cpu")
    offered = est.variants(kernel, xeon)
    assert offered[0] == "reference" and "compiled" in offered and "cuda_graph" not in offered
    ref, fast = est.cost(kernel, xeon), est.cost(kernel, xeon, "compiled")
    assert fast.source == "modelled" and fast.latency_s < ref.latency_s
    assert fast.detail["dispatch"] == pytest.approx(0.3 * ref.detail["dispatch"])
    assert fast.setup_s == est.params.setup_s("compiled") > 0
    gpu = Platform.load("dgx-a100-node").device("gpu0")   # a catalogue GPU has CUDA: cuda_graph is offered
    assert est.variants(kernel, gpu) == ["reference", "cuda_graph"]
    graph_cost, eager = est.cost(kernel, gpu, "cuda_graph"), est.cost(kernel, gpu)
    assert graph_cost.latency_s < 0.5 * eager.latency_s and graph_cost.setup_s > 0
    assert est.variants(graph.kernel("inference"), gpu) == ["reference"]


def test_local_gpu_without_cuda_is_not_offered_cuda_graph(graph, monkeypatch):
    unavailable(monkeypatch, "learner_update", "cuda_graph", "gpu", "CUDA is not available here")
    gpu = dataclasses.replace(Platform.load("dgx-a100-node").device("gpu0"), local=True)
    est = Estimator(use_cache=False)
    assert "cuda_graph" not in est.variants(graph.kernel("learner_update"), gpu)


def test_wrong_variants_are_refused(graph):
    est = Estimator(use_cache=False)
    gpu = Platform.load("dgx-a100-node").device("gpu0")
    with pytest.raises(Infeasible, match="no inference variant 'fused' for gpu devices"):
        est.cost(graph.kernel("inference"), gpu, variant="fused")
    with pytest.raises(KeyError, match="unknown kernel variant 'bogus'"):
        est.cost(graph.kernel("inference"), gpu, variant="bogus")


def test_compiled_grid_compiles_once_per_shape():
    points = calibration_grid("learner_update", variant="compiled", family=OFF_POLICY)
    shapes = {(p.algo, p.width, p.depth) for p in points}
    assert len(shapes) == 4 and len(points) == 16
    assert len(calibration_grid("learner_update", quick=True, variant="compiled", family=OFF_POLICY)) == 12


def test_measure_reports_one_off_setup(monkeypatch):
    from pearl_py.profile import microbench
    from pearl_py.protocol import SyncWorkload

    def runner(point):
        return SyncWorkload(point.nbytes), BenchCall(lambda: None, setup_s=2.0 if point.nbytes == 8 else 0.0,
                                                     setup_cold=False)

    monkeypatch.setitem(microbench._RUNNERS, ("param_sync", "fake", microbench.OFF_POLICY), runner)
    setup = []
    measured = measure("param_sync", "fake", [BenchPoint("param_sync", nbytes=n) for n in (8, 16)], passes=1,
                       setup=setup, family=OFF_POLICY)
    assert len(measured) == 2 and [(s, cold) for _, s, cold in setup] == [(2.0, False)]


def test_setup_entry_keeps_the_median_cold_compile(graph, cpu):
    workload = graph.kernel("learner_update").workload
    entry = setup_entry([(workload, 10.0, True), (workload, 30.0, True), (workload, 20.0, True), (workload, 1.0, False)])
    assert entry == {"seconds": 20.0, "cold": [10.0, 20.0, 30.0], "warm": [1.0]}
    # numba's cache serves every shape: a run after the profile pays the median warm setup
    assert setup_entry([(workload, 10.0, True), (workload, 0.02, False), (workload, 0.01, False),
                        (workload, 0.03, False)], cached=True)["seconds"] == 0.02
    assert setup_entry([(workload, 10.0, True)], cached=True)["seconds"] == 10.0
    assert setup_cached("learner_update", "fused", OFF_POLICY) and setup_cached("inference", "fused", OFF_POLICY)
    assert not setup_cached("learner_update", "compiled", OFF_POLICY) and not setup_cached("learner_update", "nosuch", OFF_POLICY)
    warm_only = setup_entry([(workload, 1.0, False)])
    assert warm_only["seconds"] is None
    cal = synthetic_calibration()
    cal.meta["setup"]["learner_update/compiled"] = warm_only
    est = Estimator(cal)   # a warm cache hid the compile: the modelled (cold) setup is used
    assert est.cost(graph.kernel("learner_update"), cpu, "compiled").setup_s == est.params.setup_s("compiled")


def test_fused_inference_runner_runs_the_registered_variant():
    workload, call = build("inference", "fused", BenchPoint("inference", width=8, batch=2), OFF_POLICY)
    assert call().shape == (2,)
    _, reference = build("inference", "reference", BenchPoint("inference", width=8, batch=2), OFF_POLICY)
    assert reference().shape == (2,)


@pytest.mark.slow
def test_compiled_runner_compiles_once_for_every_batch():
    from pearl_py.profile.microbench import clear_compiled

    try:
        _, first = build("learner_update", "compiled", BenchPoint("learner_update", width=8, batch=4), OFF_POLICY)
        _, second = build("learner_update", "compiled", BenchPoint("learner_update", width=8, batch=16), OFF_POLICY)
        assert first.setup_s > 0 and second.setup_s == 0
        first()
        second()
    finally:
        clear_compiled()


def test_roofline_variant_entries_per_kind():
    from pearl_py.estimate.roofline import RooflineParams

    params = RooflineParams({"reference": 1.0, "fast": {"kinds": ["inference"], "dispatch_scale": 0.5},
                             "learner_update/fast": {"dispatch_scale": 0.2, "setup_s": 3}}, {}, {})
    assert params.variant("reference") == {"dispatch_scale": 1.0, "fixed_ops": 0.0, "setup_s": 0.0}
    assert params.dispatch_scale("fast", "inference") == 0.5
    assert params.dispatch_scale("fast", "learner_update") == 0.2 and params.setup_s("fast", "learner_update") == 3
    with pytest.raises(KeyError, match="no modelled cost for replay_sample variant 'fast'"):
        params.variant("fast", "replay_sample")
