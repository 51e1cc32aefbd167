"""Admission: configs and plans refused with the figures and the key when they cannot fit the machine.

The machine is given (a :class:`Machine` of chosen figures), so every refusal here is exact; one test
measures the per-process memory for real.
"""
from __future__ import annotations

import dataclasses

import pytest
import torch
from pipeline_inputs import CONFIG

import pearl_py as pearl
from pearl_py.cli import main
from pearl_py.errors import ConfigError
from pearl_py.pipeline.admission import (
    Footprint,
    Machine,
    admit_config,
    admit_plan,
    process_memory_bytes,
)
from pearl_py.plan import Placement
from pearl_py.platform.local import memory_gb

GB = 1e9


def tiny(**overrides) -> pearl.DQN:
    return pearl.DQN("CartPole-v1", **{"net_arch": [16], "batch_size": 16, "buffer_size": 5_000, **overrides})


def machine(**figures) -> Machine:
    return Machine(**{"cores": 2, "available_bytes": 4 * GB, "shm_bytes": 2 * GB, "process_bytes": 0.2 * GB,
                      "process_slots": None, **figures})


def plan_with(algo, **placements):
    plan = pearl.Plan.single_device(algo.protocol())
    return dataclasses.replace(plan, mode="overlapped", placements={**plan.placements, **placements})


def test_the_footprint_counts_what_the_learner_and_the_replay_allocate():
    algo = tiny(net_arch=[64, 64])
    footprint = Footprint.of(algo)
    real = algo.build_networks()["q"]
    params = sum(p.numel() for p in real.parameters())
    assert footprint.networks.bytes == 4 * (4 * params + params)  # weights, gradients, 2 Adam moments + target
    assert footprint.acting_bytes == 4 * params
    replay = algo.make_replay(seed=0)
    try:
        assert footprint.storage.bytes == replay._storage.layout.nbytes == algo.replay_bytes()
    finally:
        replay.close()
    # a batch: 16 rows of one transition (4 + 4 + 1 + 2 floats) and 2 x (64 + 64 + 2) layer outputs
    assert footprint.batch.bytes == 16 * (4 * (2 * 4 + 1 + 2) + 4 * 2 * (64 + 64 + 2))


@pytest.mark.parametrize("overrides, key, what", [
    ({"net_arch": [1_000_000, 1_000_000]}, "hyperparameters.net_arch", "the learner's networks would take 20 TB"),
    ({"batch_size": 50_000_000, "buffer_size": 50_000_000}, "hyperparameters.batch_size",
     "one training batch would take"),
    ({"buffer_size": 100_000_000}, "hyperparameters.buffer_size", "the replay would take 4.8 GB"),
])
def test_a_config_that_cannot_fit_names_its_key(overrides, key, what):
    with pytest.raises(ConfigError) as err:
        admit_config(tiny(**overrides), machine=machine())
    assert str(err.value).startswith(f"{key}: {what}") and "more than the 4 GB of memory available here" in str(err.value)


def test_a_huge_config_in_a_file_is_refused_at_its_line_by_run_and_plan(write_config, capsys):
    config = write_config(CONFIG.replace("net_arch: [16]", "net_arch: [1000000, 1000000]"))
    for command in (["run", str(config)], ["plan", str(config), "--platform", "pearl-cpu-gpu-fpga"]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"pearl: error: {config}:11: hyperparameters.net_arch: the learner's networks would "
                              "take 20 TB (1e+12 parameters x 4 B x 4: weights, gradients, Adam's two moments, "
                              "+ 1e+12 target parameters, modelled), more than the ")
        assert err.count("\n") == 1


def test_a_plan_within_the_machine_is_admitted_with_its_figures():
    algo = tiny()
    admission = admit_plan(plan_with(algo), algo, machine=machine())
    assert (admission.processes, admission.busy, admission.oversubscribed) == (2, 1, False)
    assert admission.parts == "learner with 1 thread, 1 actor"
    footprint = Footprint.of(algo)
    learner = footprint.networks.bytes + footprint.batch.bytes + footprint.storage.bytes
    assert admission.memory_bytes - admission.shm_bytes == learner + 0.2 * GB + footprint.acting_bytes
    assert admission.to_dict()["needs"][3]["key"] == "placements.env_step.replicas"


def test_too_many_actors_for_the_memory_are_refused_with_how_many_fit():
    algo = tiny()
    plan = plan_with(algo, env_step=Placement("cpu", replicas=40))
    with pytest.raises(ConfigError) as err:
        admit_plan(plan, algo, oversubscribe=True, machine=machine())
    message = str(err.value)
    assert message.startswith("placements.env_step.replicas: 40 actor processes would take 8 GB (200 MB per "
                              "process, measured once on this machine, + ")
    assert message.endswith("more than the 4 GB of memory available here: at most 19 actors fit")


def test_segments_that_do_not_fit_dev_shm_are_refused():
    algo = tiny()
    with pytest.raises(ConfigError, match=r"^placements.env_step.replicas: the actors' transition rings would take "
                                          r".* free in /dev/shm: at most 1 actor fit$"):
        admit_plan(plan_with(algo, env_step=Placement("cpu", replicas=2)), algo, oversubscribe=True,
                   machine=machine(shm_bytes=100_000))


def test_oversubscription_needs_the_flag_and_is_recorded():
    algo = tiny()
    # the optimizer's rule: each actor process holds a core, the learner's first thread shares them
    assert not admit_plan(plan_with(algo, env_step=Placement("cpu", replicas=2)), algo, machine=machine()).oversubscribed
    plan = plan_with(algo, env_step=Placement("cpu", replicas=3))
    with pytest.raises(ConfigError, match=r"^placements.env_step.replicas: the plan holds 3 cores \(3 actor processes; "
                                          r"learner with 1 thread, 3 actors\) but this machine has 2 usable: pass "
                                          r"--oversubscribe .* \(at most 2 actors here\)$"):
        admit_plan(plan, algo, machine=machine())
    admission = admit_plan(plan, algo, oversubscribe=True, machine=machine())
    assert admission.oversubscribed and "(oversubscribed: allowed by --oversubscribe)" in admission.describe()
    two_threads = plan_with(algo, learner_update=Placement("cpu", replicas=2), env_step=Placement("cpu", replicas=2))
    with pytest.raises(ConfigError, match=r"holds 3 cores \(2 actor processes and 1 learner thread beyond its first; "):
        admit_plan(two_threads, algo, machine=machine())


def test_an_actor_holds_its_env_backends_worker_threads_like_learner_threads():
    algo = tiny()
    pooled = Placement("cpu", variant="envpool_t2", replicas=1)
    assert admit_plan(plan_with(algo, env_step=pooled), algo, machine=machine()).busy == 2
    two_threads = plan_with(algo, learner_update=Placement("cpu", replicas=2), env_step=pooled)
    with pytest.raises(ConfigError, match=r"^placements.env_step.replicas: the plan holds 3 cores \(1 actor process "
                                          r"of 2 cores each and 1 learner thread beyond its first; "):
        admit_plan(two_threads, algo, machine=machine())
    assert not admit_plan(two_threads, algo, machine=machine(cores=4)).oversubscribed


def test_the_process_limit_is_respected():
    algo = tiny()
    with pytest.raises(ConfigError, match=r"starts 2 processes .* may start only 1 more \(ulimit -u\)"):
        admit_plan(plan_with(algo, env_step=Placement("cpu", replicas=2)), algo, oversubscribe=True,
                   machine=machine(process_slots=1))


def test_a_serialized_plan_is_one_process_with_the_learner_threads():
    algo = tiny()
    plan = dataclasses.replace(pearl.Plan.single_device(algo.protocol(serialized=True)),
                               placements={**pearl.Plan.single_device(algo.protocol()).placements,
                                           "learner_update": Placement("cpu", replicas=4)})
    with pytest.raises(ConfigError, match=r"^placements.learner_update.replicas: the plan holds 3 cores \(0 actor "
                                          r"processes and 3 learner threads beyond its first; .*at most 2 threads here"):
        admit_plan(plan, algo, machine=machine(cores=2))
    assert admit_plan(plan, algo, oversubscribe=True, machine=machine()).processes == 1


def test_networks_that_cannot_be_built_without_storage_are_not_counted():
    class Stubborn(pearl.DQN):
        name = "stubborn-dqn-test"

        def build_networks(self):
            if torch.empty(0).device.type == "meta":
                raise RuntimeError("needs real storage")
            return super().build_networks()

    assert Footprint.of(Stubborn("CartPole-v1", net_arch=[8])).networks.bytes == 0


def test_the_per_process_memory_is_measured_once_and_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("PEARL_CACHE_DIR", str(tmp_path))
    measured = process_memory_bytes()
    assert measured is not None and 10e6 < measured < memory_gb() * 1e9  # a child that imported torch: MBs
    assert (tmp_path / "process-memory.json").exists()
    monkeypatch.setattr("pearl_py.runtime.parallel.process.measure_child_memory", lambda: pytest.fail("measured"))
    assert process_memory_bytes() == measured


def test_a_synchronous_plan_counts_its_actors_the_shared_rollout_and_no_learner_thread_cores():
    algo = pearl.PPO("CartPole-v1", n_envs=4, n_steps=32, batch_size=64, net_arch=[16])
    plan = pearl.Plan.single_device(algo.protocol())
    actors = {k: Placement("cpu", plan.placements[k].variant, 2) for k in ("env_step", "inference", "rollout_insert")}
    plan = dataclasses.replace(plan, mode="synchronous", placements={**plan.placements, **actors,
                                                                      "learner_update": Placement("cpu", replicas=2)})
    admission = admit_plan(plan, algo, machine=machine(cores=2))
    # two actor processes hold the two cores; the learner's second thread runs while they wait
    assert (admission.processes, admission.busy, admission.oversubscribed) == (3, 2, False)
    assert admission.parts == "learner with 2 threads, 2 actors"
    footprint = Footprint.of(algo)
    shared = {n["what"]: n["bytes"] for n in admission.to_dict()["needs"] if n["shared"]}
    assert shared == {"the shared rollout": footprint.storage.bytes, "the parameter board": footprint.acting_bytes}
    assert admission.memory_bytes - admission.shm_bytes == (footprint.networks.bytes + footprint.batch.bytes
                                                            + footprint.storage.bytes
                                                            + 2 * (0.2 * GB + footprint.acting_bytes))


def test_a_plan_whose_gpu_buffers_exceed_the_gpus_free_memory_is_refused_naming_the_kernels():
    algo = tiny(buffer_size=100_000)
    plan = pearl.Plan.single_device(algo.protocol(serialized=True), device="gpu0", kind="gpu")
    replay = algo.replay_bytes(whole_observations=True)
    with pytest.raises(ConfigError) as refused:
        admit_plan(plan, algo, machine=machine(gpu_free_bytes={0: replay / 2}))
    message = str(refused.value)
    assert message.startswith("hyperparameters.buffer_size: the replay on the GPU would take")
    assert f"more than the {replay / 2 / 1e6:.3g} MB free on gpu0 (cuda:0, torch.cuda.mem_get_info) for " \
           "replay_insert, replay_sample, learner_update" in message
    assert admit_plan(plan, algo, machine=machine(gpu_free_bytes={0: 2 * replay})).processes == 1
    assert admit_plan(plan, algo, machine=machine()).processes == 1   # no CUDA here: check_runnable refuses it
