"""pearl profile on a GPU (with a fake device: the CPU torch device and a recording synchronize), the estimator's use
of its models and of measured power, the GPU catalogue's exact matching, and the labels reports give each figure."""
from __future__ import annotations

import dataclasses
import time
import types

import pytest
import torch

import pearl_py as pearl
from pearl_py.estimate import Calibration, Estimator
from pearl_py.profile import gpu_profile, profiler
from pearl_py.estimate.calibration import model_key
from pearl_py.estimate.fit import FittedModel
from pearl_py.profile.gpu_profile import LocalGpu, profile_gpus, synchronized_clock
from pearl_py.profile.microbench import OFF_POLICY, BenchPoint
from pearl_py.profile.power_profile import PowerProfile
from pearl_py.platform import Catalogue, Platform
from pearl_py.platform.local import GENERIC_GPU, local_gpu_specs, match_gpu
from pearl_py.platform.platform import Device
from pearl_py.platform.yamlsrc import CatalogueError

NET = ("flops", "bytes", "ops")


def test_the_gpu_clock_waits_for_the_device_before_it_reads_the_time(monkeypatch):
    log: list[str] = []
    monkeypatch.setattr(gpu_profile.time, "perf_counter", lambda: log.append("read") or 1.0)
    clock = synchronized_clock(torch.device("cuda", 1), lambda device: log.append(f"wait {device}"))
    assert clock() == 1.0 and log == ["wait cuda:1", "read"]


def test_profile_times_every_gpu_kind_with_synchronized_clocks_and_keys_models_by_gpu(monkeypatch):
    points = {"learner_update": [BenchPoint("learner_update", algo="dqn", width=w, batch=b)
                                 for w, b in ((16, 8), (32, 16), (48, 8), (64, 32), (24, 24))],
              "replay_sample": [BenchPoint("replay_sample", capacity=c, batch=b, prioritized=p)
                                for c, b, p in ((1000, 8, True), (2000, 16, True), (1000, 32, False),
                                                (3000, 8, False), (1500, 4, True))]}
    monkeypatch.setattr(profiler, "calibration_grid",
                        lambda kind, quick=False, variant="reference", **grid: points[kind])
    real = profiler.variant_available  # the reference runs on the fake GPU; cuda_graph is refused as without CUDA
    monkeypatch.setattr(profiler, "variant_available",
                        lambda kind, variant, cls="cpu", *, family: (True, "") if variant == "reference"
                        else real(kind, variant, cls, family=family))
    waits: list[torch.device] = []
    lines: list[str] = []
    calibration = Calibration("test")
    gpus = [LocalGpu("gpu0", torch.device("cpu"), "NVIDIA L4"), LocalGpu("gpu1", torch.device("cpu"), "NVIDIA L4")]
    profile_gpus(calibration, True, ("learner_update", "replay_sample", "env_step"), lines.append, PowerProfile({}),
                 gpus=gpus, synchronize=waits.append)
    assert set(calibration.models) == {"gpu0:learner_update/reference", "gpu0:replay_sample/reference"}
    assert calibration.meta["gpus"] == {"gpu0": {"name": "NVIDIA L4", "models": "gpu0"},
                                        "gpu1": {"name": "NVIDIA L4", "models": "gpu0"}}
    # each point: 3 passes x (one call timed alone + 7 chunks), a wait before each of the clock's 16 reads
    assert len(waits) == 2 * 5 * 3 * 16 and set(waits) == {torch.device("cpu")}
    assert any(line.startswith("gpu0:learner_update/cuda_graph") and "skipped: CUDA is not available" in line
               for line in lines)
    assert not any("env_step" in line for line in lines)  # environments never run on a GPU
    assert "gpu1 (NVIDIA L4): same model as gpu0, its models serve" in lines


def test_a_gpu_model_is_keyed_by_its_network_group_and_a_skipped_variant_is_not_timed(monkeypatch):
    """channels_last is calibrated on CNNs only: its fit has no MLP model (the first lent H200 run failed here with
    ``KeyError: None``); each group's model is kept under its own key, as the CPU's are."""
    monkeypatch.setattr(profiler, "calibration_grid", lambda kind, quick=False, variant="reference", **grid:
                        [BenchPoint(kind, frames=(4, 10, 10))])
    monkeypatch.setattr(profiler, "variant_available", lambda kind, variant, cls="cpu", *, family: (True, ""))
    timed: list[str] = []
    monkeypatch.setattr(profiler, "measure", lambda kind, variant, points, **options: timed.append(variant) or [])
    mlp, cnn = (FittedModel("linear", NET, (c, 0, 0, 0), "flops") for c in (1e-4, 2e-4))
    fits = {"channels_last": {"cnn": cnn}, "reference": {None: mlp, "cnn": cnn}}
    monkeypatch.setattr(profiler, "fit_measurements", lambda kind, measured: fits[timed[-1]])
    monkeypatch.setattr(gpu_profile, "variants", lambda kind, family: ["channels_last", "compiled", "reference"])
    lines: list[str] = []
    calibration = Calibration("test")
    profile_gpus(calibration, True, ("learner_update",), lines.append, PowerProfile({}),
                 gpus=[LocalGpu("gpu0", torch.device("cpu"), "NVIDIA H200")], synchronize=lambda device: None,
                 skip={"learner_update/compiled": "not now"})
    assert calibration.models == {"gpu0:learner_update/channels_last/cnn": cnn, "gpu0:learner_update/reference": mlp,
                                  "gpu0:learner_update/reference/cnn": cnn}
    assert timed == ["channels_last", "reference"]
    assert any(line.startswith("gpu0:learner_update/compiled") and "deferred: not now" in line for line in lines)


L4 = Catalogue.load().devices["l4"]


def gpu(name: str = "gpu0", local: bool = True, model_name: str = "NVIDIA L4 (as l4)") -> Device:
    return Device(name, dataclasses.replace(L4, model_name=model_name), local=local)


def gpu_calibration(energy: dict | None = None, setup: dict | None = None) -> Calibration:
    models = {model_key(kind, variant, device="gpu0"): FittedModel("linear", NET, (2e-4, 1e-13, 0, 1e-6), "flops")
              for kind, variant in (("learner_update", "reference"), ("learner_update", "cuda_graph"),
                                    ("inference", "reference"))}
    meta = {"gpus": {"gpu0": {"name": "NVIDIA L4", "models": "gpu0"}, "gpu1": {"name": "NVIDIA L4", "models": "gpu0"}}}
    if energy:
        meta["energy"] = energy
    if setup:
        meta["setup"] = setup
    return Calibration("test", models, meta)


@pytest.fixture(scope="module")
def learner_kernel():
    return pearl.DQN("CartPole-v1", net_arch=[64, 64], batch_size=64).protocol().kernel("learner_update")


def test_the_estimator_costs_a_profiled_local_gpu_from_its_models_and_others_by_the_roofline(learner_kernel):
    est = Estimator(gpu_calibration())
    here = est.cost(learner_kernel, gpu("gpu0"))
    assert here.source == "calibrated" and here.energy_source == "modelled" and here.resources == {}
    assert est.cost(learner_kernel, gpu("gpu1")).latency_s == here.latency_s  # same model: gpu0's models serve
    assert est.cost(learner_kernel, gpu("gpu0", local=False)).source == "modelled"            # a catalogue GPU
    assert est.cost(learner_kernel, gpu("gpu2")).source == "modelled"                         # not profiled
    assert est.cost(learner_kernel, gpu(model_name="NVIDIA H200 (as h200)")).source == "modelled"  # another card
    assert est.thread_counts(learner_kernel, gpu("gpu0")) == [1]


def test_measured_power_replaces_the_catalogues_and_a_modelled_setup_says_so(learner_kernel):
    energy = {"gpu0": {"source": "measured", "counter": "NVML", "idle_w": 16.0,
                       "kernels": {"learner_update/reference": {"dynamic_w": 40.0, "window_s": 1.0}}}}
    est = Estimator(gpu_calibration(energy=energy))
    cost = est.cost(learner_kernel, gpu("gpu0"))
    assert cost.energy_source == "measured" and cost.energy_j == pytest.approx(cost.latency_s * 40.0)
    graph = est.cost(learner_kernel, gpu("gpu0"), "cuda_graph")
    assert graph.energy_source == "modelled" and graph.setup_source == "modelled" and graph.setup_s == 1.0
    timed = Estimator(gpu_calibration(setup={"gpu0:learner_update/cuda_graph": {"seconds": 0.4}}))
    assert timed.cost(learner_kernel, gpu("gpu0"), "cuda_graph").setup_source == "calibrated"


@pytest.mark.parametrize("name, entry", [
    ("NVIDIA H100 PCIe", "h100-pcie-80gb"), ("NVIDIA H100 80GB HBM3", "h100-sxm5-80gb"), ("NVIDIA H200", "h200-sxm-141gb"),
    ("NVIDIA L4", "l4"), ("NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb"), ("NVIDIA GeForce RTX 4090", "rtx-4090"),
    ("NVIDIA H200 NVL", None), ("NVIDIA A100-SXM4-40GB", None), ("NVIDIA H100 NVL", None), ("NVIDIA L40S", None)])
def test_gpu_names_match_one_catalogue_entry_exactly_or_none(name, entry):
    matched = match_gpu(name, Catalogue.load())
    assert (matched.name if matched else None) == entry


def test_two_entries_matching_one_name_is_a_catalogue_error():
    catalogue = Catalogue.load()
    catalogue.devices["h100-copy"] = dataclasses.replace(catalogue.devices["h100-pcie-80gb"], name="h100-copy")
    with pytest.raises(CatalogueError, match="matches the name_match of several GPUs: h100-pcie-80gb, h100-copy"):
        match_gpu("NVIDIA H100 PCIe", catalogue)


def test_local_gpus_keep_torchs_name_and_an_unknown_one_is_generic_and_assumed(monkeypatch):
    cards = [types.SimpleNamespace(name="NVIDIA H100 PCIe", total_memory=80e9, multi_processor_count=114),
             types.SimpleNamespace(name="NVIDIA B300", total_memory=288e9, multi_processor_count=160)]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: cards[i])
    known, unknown = local_gpu_specs(Catalogue.load())
    assert known.name == "h100-pcie-80gb" and known.model_name == "NVIDIA H100 PCIe (as h100-pcie-80gb)"
    assert known.peak_w == 350 and known.mem_bandwidth_gbs == 2000
    assert unknown.name == GENERIC_GPU and unknown.model_name.startswith("NVIDIA B300 (no catalogue entry")


def test_the_report_says_in_words_when_a_device_is_generic_and_how_each_cost_is_known():
    from pearl_py.plan import KernelCost
    from pearl_py.report.content import cost_source
    from pearl_py.report.energy import assumed_device_sentences

    plan = pearl.plan(pearl.DQN("CartPole-v1"), Platform.load("pearl-cpu-gpu-fpga"))
    info = dataclasses.replace(plan.prediction.platform, devices=(
        {"name": "gpu0", "kind": "gpu", "model": GENERIC_GPU, "node": "", "local": True},))
    generic = plan.with_prediction(dataclasses.replace(plan.prediction, platform=info))
    (sentence,) = assumed_device_sentences(generic)
    assert sentence.startswith("gpu0 matched no catalogue entry: its figures (speed, memory bandwidth, power) are "
                               "generic assumptions")
    assert assumed_device_sentences(plan) == []
    assert cost_source(KernelCost(1e-3, 1e-3, "calibrated", setup_s=20.0, setup_source="modelled")) == \
        "calibrated; setup modelled"
    assert cost_source(KernelCost(1e-3, 1e-3, "calibrated", energy_source="measured")) == "calibrated; energy measured"
    assert cost_source(KernelCost(1e-6, 0.0, "modelled"), "simulated FPGA") == "modelled (simulated FPGA)"


def rapl_fake(root):
    """A fake RAPL package zone (tests/platform/fake_counters.py has the full fakes) and its reader."""
    from pearl_py.platform.counters import RaplCounter, rapl_reader

    zone = root / "intel-rapl:0"
    zone.mkdir(parents=True)
    (zone / "name").write_text("package-0\n")
    (zone / "energy_uj").write_text("0\n")
    (zone / "max_energy_range_uj").write_text(f"{2**40}\n")
    return zone, rapl_reader(RaplCounter(root))


def test_power_profile_measures_idle_and_each_kernels_dynamic_power(tmp_path):
    zone, reader = rapl_fake(tmp_path)
    slept = []

    def sleep(seconds):  # asleep, the package draws 10 W
        slept.append(seconds)
        time.sleep(seconds)
        (zone / "energy_uj").write_text(str(int((zone / "energy_uj").read_text()) + int(10e6 * seconds)))

    power = PowerProfile({"cpu": reader}, sleep=sleep, idle_s=0.2)
    power.start()
    with power.window("cpu", "learner_update/reference"):
        start = time.perf_counter()
        while time.perf_counter() - start < 0.6:  # a grid of 0.6 s (wall clock: load cannot stretch it much) ...
            pass
        (zone / "energy_uj").write_text(str(int((zone / "energy_uj").read_text()) + 30_000_000))  # ... drawing 30 J
    meta = power.meta()["cpu"]
    assert slept == [0.2] and meta["source"] == "measured" and 0 < meta["idle_w"] <= 10.0
    kernel = meta["kernels"]["learner_update/reference"]
    assert kernel["window_s"] >= 0.6 and kernel["dynamic_w"] > 0  # 30 J in ~0.6 s is far above 10 W idle
    assert kernel["dynamic_w"] == pytest.approx(30.0 / kernel["window_s"] - meta["idle_w"], rel=0.01)
    assert PowerProfile({}).meta() == {}


def test_pearl_profile_records_each_kernels_power_and_the_estimator_charges_it(monkeypatch, tmp_path):
    _, reader = rapl_fake(tmp_path)
    points = [BenchPoint("replay_sample", capacity=c, batch=b, prioritized=p)
              for c, b, p in ((1000, 8, True), (2000, 16, True), (1000, 32, False), (3000, 8, False), (1500, 4, True))]
    monkeypatch.setattr(profiler, "calibration_grid",
                        lambda kind, quick=False, variant="reference", **grid: points)
    power = PowerProfile({"cpu": reader}, sleep=lambda s: None, idle_s=0.0)
    calibration = profiler.profile(kinds=("replay_sample",), power=power, gpus=False)
    energy = calibration.meta["energy"]["cpu"]
    assert energy["source"] == "measured" and energy["counter"] == "RAPL package-0 (intel-rapl:0)"
    assert energy["kernels"]["replay_sample/reference"]["dynamic_w"] == 0.0  # the fake counter never moved
    kernel = pearl.DQN("CartPole-v1", prioritized_replay=True).protocol().kernel("replay_sample")
    cost = Estimator(calibration).cost(kernel, Platform.local().device("cpu"))
    assert (cost.source, cost.energy_source, cost.energy_j) == ("calibrated", "measured", 0.0)
    unmetered = profiler.profile(kinds=("replay_sample",), power=PowerProfile({}), gpus=False)
    assert unmetered.meta["energy"] == {}


def test_a_runs_first_calibration_gives_the_gpu_its_grid_too(monkeypatch):
    asked: list[dict] = []
    monkeypatch.setattr(profiler, "calibration_grid",
                        lambda kind, quick=False, variant="reference", **grid: asked.append(grid) or [])
    monkeypatch.setattr(profiler, "variant_available", lambda kind, variant, cls="cpu", *, family: (True, ""))
    calibration = Calibration("test")
    profile_gpus(calibration, True, ("learner_update",), lambda line: None, PowerProfile({}),
                 gpus=[LocalGpu("gpu0", torch.device("cpu"), "NVIDIA L4")], synchronize=lambda device: None,
                 grid={"envs": ("CartPole-v1",), "networks": ("nature_cnn",), "max_envs": 1})
    assert asked and all(grid == {"family": OFF_POLICY, "envs": ("CartPole-v1",), "networks": ("nature_cnn",),
                                  "max_envs": 1} for grid in asked)
    assert calibration.models == {}                     # a variant left without points is not timed


@pytest.mark.parametrize("variant", ["reference", "channels_last"])
def test_a_gpu_points_learner_and_batch_are_built_on_the_gpu(monkeypatch, variant):
    """Each CNN learner runner builds on the point's device (``meta`` stands in for a GPU: no CPU tensor can pass
    for it), so a GPU model is fitted on GPU timings."""
    from pearl_py.algorithms.off_policy import learner as learner_module
    from pearl_py.profile.microbench import build

    built: list[torch.device] = []
    real = learner_module.Learner

    class Spy(real):
        def __init__(self, algo, device="cpu"):
            built.append(torch.device(device))
            super().__init__(algo, device="cpu")

        def update(self, batch):
            built.append(batch.obs.device)

    monkeypatch.setattr(learner_module, "Learner", Spy)
    monkeypatch.setattr("pearl_py.kernels.channels_last.make_channels_last", lambda learner: learner.update)
    point = BenchPoint("learner_update", algo="dqn", arch=(32,), batch=4, frames=(4, 10, 10), extractor="small_cnn",
                       device="meta")
    build("learner_update", variant, point, OFF_POLICY)[1]()
    assert built[-2:] == [torch.device("meta"), torch.device("meta")]   # the kernel's learner, then its batch
