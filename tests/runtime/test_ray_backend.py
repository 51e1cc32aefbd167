"""The Ray backend on a real two-raylet cluster (``ray start``): DQN and the on-policy family, checkpoints and
resume after SIGKILL, a killed actor worker restarted; resources from the plan and the install hint without Ray."""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
from monitor_machines import TINY_DQN, VARIANT_S, VariantMachine, variant_plan
from ray_cluster import free_port, two_raylet_cluster

import pearl_py as pearl
from pearl_py.cli.main import main
from pearl_py.errors import UserError
from pearl_py.estimate.calibration import Calibration, default_path
from pearl_py.plan import Figures, KernelCost, Placement, Plan, Prediction, SolverInfo, ThreadCost
from pearl_py.protocol.schedule import RolloutSchedule
from pearl_py.runtime.checkpoints import CheckpointOptions, newest_checkpoint, periodic_checkpoints
from pearl_py.runtime.monitor import AdaptOptions
from pearl_py.runtime.on_policy_serial import OnPolicySerialExecutor
from pearl_py.runtime.ray_backend import RayExecutor
from pearl_py.runtime.ray_backend.on_policy import OnPolicyRayExecutor
from pearl_py.runtime.ray_backend.resources import component_resources, needs


def _algo():
    return pearl.DQN("CartPole-v1", train_freq=256, gradient_steps=64, batch_size=64, learning_starts=500,
                     net_arch=[64, 64])


def _plan(replay: str, learner: str, actors: int = 1) -> Plan:
    plan = Plan.single_device(_algo().protocol())
    placements = {**plan.placements, "env_step": Placement("cpu", replicas=actors),
                  "inference": Placement("cpu", replicas=actors), "replay_insert": Placement(replay),
                  "replay_sample": Placement(replay), "learner_update": Placement(learner)}
    return dataclasses.replace(plan, placements=placements, mode="overlapped",
                               devices={"cpu": "cpu", "gpu": "gpu", "fpga": "fpga"})


ALWAYS_OFF = AdaptOptions(threshold=-1e9, patience_rounds=1, patience_s=0.0)
"""A monitor rule that finds the plan off at every round (no timing): it re-times and decides at known rounds."""


def predicted(plan: Plan) -> Plan:
    """``plan`` with its learner at 2 threads and a prediction of its update's cost at 1 and 2 threads (what the
    monitor compares with: tests/runtime/test_monitor.py)."""
    learner = plan.placements["learner_update"]
    cost = KernelCost(12e-3, 0.0, "calibrated", threads=(ThreadCost(2, 10e-3, 0.0),))
    prediction = Prediction(Figures(1.0, 1.0, 1.0, 1.0, 1.0, "cpu"), SolverInfo("test", True, 1.0, 0.0, 0.0),
                            {"learner_update": {learner.device: {learner.variant: cost}}}, rates={}, kinds={},
                            devices={})
    return dataclasses.replace(plan, prediction=prediction, placements={
        **plan.placements, "learner_update": dataclasses.replace(learner, replicas=2)})


def test_components_share_a_device_and_take_its_resource() -> None:
    res = component_resources(_plan("cpu", "cpu", actors=2))
    assert res == {"actor": {"num_cpus": 1.0}, "replay": {"num_cpus": 0.5}, "learner": {"num_cpus": 0.5}}
    assert needs(res, actors=2) == {"CPU": 3.0}
    res = component_resources(_plan("fpga", "gpu", actors=4))
    assert res["replay"] == {"num_cpus": 0.0, "resources": {"FPGA": 1.0}}
    assert res["learner"] == {"num_cpus": 0.0, "num_gpus": 1.0}
    assert needs(res, actors=4) == {"CPU": 4.0, "GPU": 1.0, "FPGA": 1.0}


def test_without_ray_the_backend_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(UserError, match=r'pip install -c constraints.txt "\.\[ray\]"'):
        RayExecutor(_algo(), _plan("cpu", "cpu"), seed=0).run(1000)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A head and a second raylet started with ``ray start`` (2 logical CPUs each), stopped after this file."""
    pytest.importorskip("ray", reason='ray is an optional extra: pip install -c constraints.txt ".[ray]"')
    with two_raylet_cluster(tmp_path_factory.mktemp("ray")) as address:
        yield address


def test_dqn_cartpole_on_a_two_raylet_cluster_survives_a_killed_actor(cluster: str) -> None:
    """DQN with its replay in a Ray actor of its own; actor worker 0 killed with SIGKILL at the start is restarted
    and the chunk it owed collected again: the replay gets every transition once."""
    executor = RayExecutor(_algo(), predicted(_plan("cpu", "cpu")), seed=0, eval_episodes=2, address=cluster,
                           adapt=ALWAYS_OFF)
    killer = threading.Thread(target=_kill_first_actor, args=(executor,), daemon=True)
    killer.start()
    result = executor.run(3000)
    killer.join(5)
    assert result.backend == "ray"
    assert result.env_steps == 3000
    assert result.gradient_steps == 64 * ((3000 - 512) // 256 + 1)  # rounds at steps 512, 768, ..., 2816
    assert result.kernel_times["replay_insert"]["calls"] == 3000
    assert executor.restarted == [0]
    parts = executor.components
    replay_pid, learner_pid = parts["replay"]["pid"], parts["learner"]["pid"]
    # the replay lived in a Ray actor of its own: not the driver, the learner or an actor worker
    assert len({replay_pid, learner_pid, os.getpid(), *(a["pid"] for a in parts["actors"])}) == 3 + len(parts["actors"])
    assert parts["replay"]["resources"] == {"num_cpus": 0.5}
    assert len(result.eval_returns) == 2
    # the driver's monitor of the learner worker's updates: off at round 2 (the first with a window), the learner
    # re-timed at 2 and 1 threads in round 3 (16 updates each), decided at its end
    first = result.corrections[0]
    assert (first.step, first.updates) == (1024, 192) and set(first.retimed_s) == {"1 thread", "2 threads"}
    assert result.drift == {}


DQN_CONFIG = """
algorithm: dqn
env: CartPole-v1
total_steps: 3000
seed: 0
eval_episodes: 1
hyperparameters: {train_freq: 256, gradient_steps: 64, batch_size: 64, learning_starts: 500, net_arch: [64, 64]}
"""


def test_a_driver_killed_with_sigkill_resumes_from_its_newest_checkpoint(cluster: str, tmp_path: Path) -> None:
    """``pearl run --backend ray --checkpoint-freq``, the driver killed with SIGKILL after its first checkpoint, then
    ``pearl run --resume``: the run ends at exactly its steps and updates."""
    config, out, steps = tmp_path / "dqn.yaml", tmp_path / "run", 3000
    config.write_text(DQN_CONFIG)
    argv = ["run", str(config), "--backend", "ray", "--address", cluster]
    driver = subprocess.Popen([sys.executable, "-m", "pearl_py.cli", *argv, "--out", str(out),
                               "--checkpoint-freq", "1024"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        deadline = time.monotonic() + 240
        while not periodic_checkpoints(out) and driver.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert driver.poll() is None, driver.stderr.read().decode()[-2000:]
        driver.send_signal(signal.SIGKILL)
    finally:
        driver.kill()
        driver.wait(30)
    assert not (out / "result.json").exists()
    assert newest_checkpoint(out).parent.name == "checkpoints"   # a complete periodic checkpoint
    assert main([*argv, "--resume", str(out)]) == 0
    result = json.loads((out / "result.json").read_text())
    assert result["backend"] == "ray" and result["env_steps"] == steps
    assert result["gradient_steps"] == 64 * ((steps - 512) // 256 + 1)  # every round of the run, none twice
    assert (out / "session1").is_dir()  # the resumed session logged apart


def sync_plan(actors: int) -> Plan:
    """Every on-policy kernel on the CPU, ``actors`` actors splitting the envs, fused (row-invariant) kernels."""
    fused = {"inference", "learner_update"}
    return Plan(platform="local", objective="throughput", mode="synchronous", devices={"cpu": "cpu"}, solver="test",
                placements={k: Placement("cpu", "fused" if k in fused else "reference",
                                         actors if k in ("env_step", "inference", "rollout_insert") else 1)
                            for k in ("env_step", "inference", "rollout_insert", "advantage", "learner_update",
                                      "param_sync")})


def assert_same_networks(a, b) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def _planned_nodes(plan: Plan) -> dict[str, list[str]]:
    """Each component's planned Ray node id (a pool's replica i on member i mod members, in platform order)."""
    devices = plan.prediction.platform.devices

    def nodes(device: str) -> list[str]:
        if device.startswith("pool:"):
            return [d["node"] for d in devices if d["model"] == device[5:].rpartition("x")[0]]
        return [d["node"] for d in devices if d["name"] == device]

    actors = nodes(plan.placements["env_step"].device)
    return {"replay": nodes(plan.placements["replay_insert"].device)[:1],
            "learner": nodes(plan.placements["learner_update"].device)[:1],
            "actors": [actors[i % len(actors)] for i in range(plan.placements["env_step"].replicas)]}


def test_the_cluster_planned_as_a_platform_runs_each_component_on_its_planned_node(
        cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """`pearl plan --address` reads the two raylets as two hosts of this machine's CPU; `pearl run --backend ray
    --address --auto` plans over them (an empty calibration here: every cost modelled, nothing profiled), pins
    each component to its planned node, records where each ran and reports measured samples/s beside the model's
    and the simulator's. A bad address: one line, exit 2, no folder."""
    monkeypatch.setenv("PEARL_CACHE_DIR", str(tmp_path / "cache"))
    Calibration("empty").save(default_path())
    config = tmp_path / "dqn.yaml"
    config.write_text(DQN_CONFIG)
    assert main(["plan", str(config), "--address", cluster, "--out", str(tmp_path / "plan")]) == 0
    planned = pearl.load_plan(tmp_path / "plan" / "plan.yaml")
    hosts = {d["name"]: d["node"] for d in planned.prediction.platform.devices}
    assert planned.platform == "ray-cluster" and sorted(hosts) == ["node0.cpu", "node1.cpu"]
    assert len(set(hosts.values())) == 2
    assert planned.prediction.simulation.samples_per_s > 0
    assert "samples/s simulated (discrete-event, this plan)" in capsys.readouterr().out

    out = tmp_path / "run"
    assert main(["run", str(config), "--backend", "ray", "--address", cluster, "--auto", "--out", str(out)]) == 0
    result = json.loads((out / "result.json").read_text())
    expected = _planned_nodes(pearl.load_plan(out / "plan.yaml"))
    ran = dict(part.split(": ") for part in result["layout"]["nodes"].split(", "))
    assert {name: where.split()[-1] for name, where in ran.items()} == {
        "replay": expected["replay"][0][:8], "learner": expected["learner"][0][:8],
        **{f"actor {i}": node[:8] for i, node in enumerate(expected["actors"])}}
    assert result["env_steps"] == 3000
    report = (out / "report.md").read_text()
    assert "| samples/s simulated (discrete-event, this plan) |" in report and "| runtime: nodes |" in report
    assert f"- the Ray cluster at {cluster}: 2 node(s), each a host; between nodes tcp-40gbe (modelled)" in report
    assert "(this machine's CPU: its calibration)" in report

    # the plan file made by `pearl plan --address` runs again with --plan on the cluster it was made on (its platform
    # read from the cluster again), each component on its planned node; a plan whose node is not there is refused
    saved, again = tmp_path / "plan" / "plan.yaml", tmp_path / "again"
    argv = ["run", str(config), "--backend", "ray", "--address", cluster, "--steps", "1000"]
    assert main([*argv, "--plan", str(saved), "--out", str(again)]) == 0
    result = json.loads((again / "result.json").read_text())
    ran = dict(part.split(": ") for part in result["layout"]["nodes"].split(", "))
    assert ran["learner"].split()[-1] == _planned_nodes(planned)["learner"][0][:8] and result["env_steps"] == 1000
    moved = shutil.copytree(saved.parent, tmp_path / "moved") / "prediction.json"   # the platform it was made on
    moved.write_text(moved.read_text().replace(hosts["node1.cpu"], "0" * len(hosts["node1.cpu"])))
    capsys.readouterr()
    assert main([*argv, "--plan", str(moved.parent / "plan.yaml"), "--out", str(tmp_path / "refused")]) == 2
    err = capsys.readouterr().err
    assert "platform: the plan was made on another Ray cluster than the one at" in err
    assert "node1.cpu (Ray node 00000000) not there" in err and "plan again with `pearl plan --address" in err
    assert not (tmp_path / "refused").exists()

    bad = f"127.0.0.1:{free_port()}"
    for argv in (["plan", str(config), "--address", bad], ["run", str(config), "--backend", "ray", "--address", bad,
                                                            "--auto"]):
        capsys.readouterr()
        assert main([*argv, "--out", str(tmp_path / "bad")]) == 2
        err = capsys.readouterr().err
        assert err == f"pearl: error: --address {bad}: no Ray cluster answers there (Connection refused); start " \
                      "one with `ray start --head --port PORT`\n"
        assert not (tmp_path / "bad").exists()


TINY_PPO = dict(n_envs=4, n_steps=32, batch_size=32, n_epochs=2, net_arch=[16])
TINY_A2C = dict(n_envs=3, n_steps=5, net_arch=[16])


@pytest.mark.parametrize(("make", "hyper"), [(pearl.PPO, TINY_PPO), (pearl.A2C, TINY_A2C)])
def test_a_seeded_on_policy_run_on_ray_equals_the_serial_run(cluster: str, make, hyper) -> None:
    """Two actor workers split the envs (fused inference): the serial run's rollouts, updates and networks."""
    steps, seed, plan = 600, 3, sync_plan(2)
    serial = OnPolicySerialExecutor(make("CartPole-v1", **hyper), seed, plan=plan, eval_episodes=1, progress=False)
    expected = serial.run(steps)
    executor = OnPolicyRayExecutor(make("CartPole-v1", **hyper), plan, seed=seed, eval_episodes=1, address=cluster,
                                   progress=False)
    got = executor.run(steps)
    schedule = RolloutSchedule.from_config(make("CartPole-v1", **hyper).config, steps)
    assert got.backend == "ray" and got.layout["actors"] == 2 and len(executor.components["actors"]) == 2
    assert (got.env_steps, got.gradient_steps) == (schedule.env_steps, expected.gradient_steps)
    assert got.episodes == expected.episodes and got.eval_returns == expected.eval_returns
    assert_same_networks(executor.trained_networks.online, serial.learner.nets.online)
    assert got.kernel_times["env_step"]["calls"] == schedule.vector_steps * 2  # each actor steps every vector step


def test_an_on_policy_run_resumes_and_survives_a_killed_actor(cluster: str, tmp_path: Path) -> None:
    """A periodic checkpoint, a resumed run to exactly its steps and updates; an actor worker killed mid-run is
    restarted by Ray and its rollout collected again (the step count stays exact)."""
    steps, seed, plan = 1024, 0, sync_plan(2)
    algo = pearl.PPO("CartPole-v1", **TINY_PPO)
    first = OnPolicyRayExecutor(algo, plan, seed=seed, eval_episodes=1, address=cluster, out_dir=tmp_path,
                                checkpoints=CheckpointOptions(every=512), progress=False)
    first.run(steps)
    assert [p.name for p in periodic_checkpoints(tmp_path)] == ["000001-step512"]   # none at the end: it is done
    resumed = OnPolicyRayExecutor(algo, plan, seed=seed, eval_episodes=1, address=cluster, out_dir=tmp_path,
                                  resume_from=tmp_path, progress=False)
    killer = threading.Thread(target=_kill_first_actor, args=(resumed,), daemon=True)
    killer.start()
    result = resumed.run(steps)
    killer.join(5)
    updates_per_rollout = TINY_PPO["n_epochs"] * (TINY_PPO["n_envs"] * TINY_PPO["n_steps"] // TINY_PPO["batch_size"])
    assert result.env_steps == steps and result.gradient_steps == (steps // 128) * updates_per_rollout
    assert resumed.restarted == [0]


def test_an_on_policy_run_on_ray_corrects_its_learners_threads_and_resumes_from_the_correction(
        cluster: str, tmp_path: Path) -> None:
    """The driver's monitor of the learner worker (8 updates a rollout): off at rollout 2, re-timed over rollouts
    3-6, decided at rollout 6's end, as the serial and local executors (tests/runtime/test_monitor.py); the
    checkpoint at rollout 7 carries the correction into the resumed session, which makes none of its own."""
    steps, plan = 8 * 128, predicted(sync_plan(1))
    options = dict(seed=0, eval_episodes=1, address=cluster, out_dir=tmp_path, progress=False, adapt=ALWAYS_OFF)
    first = OnPolicyRayExecutor(pearl.PPO("CartPole-v1", **TINY_PPO), plan,
                                checkpoints=CheckpointOptions(every=7 * 128), **options).run(steps)
    assert (first.env_steps, first.gradient_steps) == (steps, 64)
    correction = first.corrections[0]
    assert (correction.step, correction.updates) == (6 * 128, 48)
    assert set(correction.retimed_s) == {"1 thread", "2 threads"} and correction.after["threads"] in (1, 2)
    resumed = OnPolicyRayExecutor(pearl.PPO("CartPole-v1", **TINY_PPO), plan, resume_from=tmp_path,
                                  **options).run(steps)
    assert (resumed.env_steps, resumed.gradient_steps) == (steps, 64)
    assert resumed.corrections == [correction]


def test_normalize_on_ray_merges_the_actor_workers_statistics_as_the_local_runtime(cluster: str, tmp_path: Path
                                                                                       ) -> None:
    """normalize with two actor workers: the statistics, the networks and the periodic checkpoint's statistics equal
    the local parallel runtime's (the same merge every rollout), and count every env's observations once."""
    from pearl_py.runtime.parallel.checkpoint import load_checkpoint
    from pearl_py.runtime.parallel.on_policy import OnPolicyParallelExecutor

    steps, seed, plan, n = 256, 3, sync_plan(2), TINY_PPO["n_envs"]
    local = OnPolicyParallelExecutor(pearl.PPO("CartPole-v1", normalize=True, **TINY_PPO), plan, seed=seed,
                                     eval_episodes=1, progress=False)
    local.run(steps)
    algo = pearl.PPO("CartPole-v1", normalize=True, **TINY_PPO)
    executor = OnPolicyRayExecutor(algo, plan, seed=seed, eval_episodes=1, address=cluster, out_dir=tmp_path,
                                   checkpoints=CheckpointOptions(every=128), progress=False)
    executor.run(steps)
    assert algo.obs_transform.state() == local.algorithm.obs_transform.state()
    assert algo.obs_transform.obs_moments.count == pytest.approx(n * (1 + steps // n) + 1e-4, rel=1e-12)
    assert_same_networks(executor.trained_networks.online, local.learner.nets.online)
    ckpt = load_checkpoint(periodic_checkpoints(tmp_path)[0])
    assert ckpt.obs_transform["obs"]["count"] == pytest.approx(n * (1 + 128 // n) + 1e-4, rel=1e-12)


def _kill_first_actor(executor: OnPolicyRayExecutor) -> None:
    """SIGKILL actor worker 0's process once the run has started its actors."""
    deadline = time.monotonic() + 120
    while not executor.components and time.monotonic() < deadline:
        time.sleep(0.05)
    if executor.components:
        os.kill(executor.components["actors"][0]["pid"], signal.SIGKILL)


def test_a_failed_learner_ends_the_run_naming_the_checkpoint_to_resume_from(cluster: str, tmp_path: Path) -> None:
    executor = OnPolicyRayExecutor(pearl.PPO("CartPole-v1", **TINY_PPO), sync_plan(1), seed=0, eval_episodes=1,
                                   address=cluster, out_dir=tmp_path, checkpoints=CheckpointOptions(every=1024),
                                   progress=False)

    def kill_the_learner_after_a_checkpoint() -> None:
        deadline = time.monotonic() + 120
        while not periodic_checkpoints(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(executor.components["learner"]["pid"], signal.SIGKILL)

    killer = threading.Thread(target=kill_the_learner_after_a_checkpoint, daemon=True)
    killer.start()
    with pytest.raises(RuntimeError, match=r"the Ray run failed after \d+ env steps: .*; resume from its newest "
                                           r"checkpoint \(.*000001-step1024\) with --resume "):
        executor.run(20_000)
    killer.join(5)


@pytest.mark.slow
def test_ppo_cartpole_reaches_475_on_a_two_raylet_cluster(cluster: str) -> None:
    """The zoo PPO config (1e5 steps, 8 envs) with 2 actor workers (fused kernels) on the 2-raylet cluster: >= 475
    (the local parallel run of this plan reaches it: tests/runtime/parallel/test_learning_slow.py)."""
    cfg = pearl.load_config(Path(__file__).parents[2] / "examples" / "configs" / "ppo_cartpole.yaml")
    result = OnPolicyRayExecutor(cfg.make_algorithm(), sync_plan(2), seed=0, address=cluster, progress=False).run(
        cfg.settings.total_steps)
    assert result.env_steps == 391 * 256
    assert result.eval_return_mean >= 475, result.eval_returns


def test_ray_components_take_the_plans_devices() -> None:
    pytest.importorskip("ray", reason='ray is an optional extra: pip install -c constraints.txt ".[ray]"')
    from pearl_py.runtime.ray_backend.workers import ActorWorker, ReplayServer

    algo = pearl.DQN("CartPole-v1", net_arch=[16])
    base = Plan.single_device(algo.protocol())
    plan = dataclasses.replace(base, mode="overlapped", devices={"cpu": "cpu", "gpu0": "gpu"},
                               placements={**base.placements, "inference": Placement("gpu0"),
                                           "learner_update": Placement("gpu0")})
    executor = RayExecutor(algo, plan, seed=0)
    assert [executor._torch_device(k) for k in ("inference", "learner_update", "replay_insert")] == \
        ["cuda", "cuda", "cpu"]
    assert executor.resources["actor"]["num_gpus"] == 1.0  # the actor's GPU, which its inference runs on
    actor = ActorWorker(algo, 0, 0, 1000, device="cpu")
    assert actor.timer.evented == frozenset() and next(actor.nets.parameters()).device.type == "cpu"
    assert type(ReplayServer(algo, seed=0).replay).__name__ == "ReplayBuffer"


def test_normalize_on_ray_off_policy_merges_every_consumed_chunks_share_and_resumes(cluster: str, tmp_path: Path
                                                                                     ) -> None:
    """normalize with two DQN actor workers: the learner's statistics count every observation (each env's reset one
    and one per transition) and discounted return of the chunks consumed, at a periodic checkpoint and at the end,
    and a run resumed from the checkpoint continues its statistics."""
    from pearl_py.runtime.parallel.checkpoint import load_checkpoint

    def dqn() -> pearl.DQN:
        return pearl.DQN("CartPole-v1", normalize=True, train_freq=32, gradient_steps=8, batch_size=16,
                         learning_starts=64, net_arch=[16])

    def run(folder: Path, resume: Path | None = None) -> pearl.DQN:
        algo = dqn()
        RayExecutor(algo, _plan("cpu", "cpu", actors=2), seed=3, eval_episodes=1, address=cluster, out_dir=folder,
                    checkpoints=CheckpointOptions(every=128), resume_from=resume, progress=False).run(256)
        return algo

    prior, envs = 1e-4, 2   # two actors of one env each: their envs' reset observations count once per session
    first = run(tmp_path / "first")
    assert first.obs_transform.obs_moments.count == pytest.approx(envs + 256 + prior, rel=1e-12)
    assert first.obs_transform.return_moments.count == pytest.approx(256 + prior, rel=1e-12)
    ckpt = load_checkpoint(periodic_checkpoints(tmp_path / "first")[0])
    assert ckpt.obs_transform["obs"]["count"] == pytest.approx(envs + 128 + prior, rel=1e-12)
    resumed = run(tmp_path / "second", resume=periodic_checkpoints(tmp_path / "first")[0])
    assert resumed.obs_transform.obs_moments.count == pytest.approx(envs + 128 + envs + 128 + prior, rel=1e-12)


def on_the_machine(monkeypatch: pytest.MonkeyPatch, machine: VariantMachine) -> list:
    """The driver's monitor counts ``machine``'s seconds for each option its schedule sent the learner worker (which
    runs each update for real, at that option); returns the options sent, in order."""
    from pearl_py.runtime.monitor import Monitor

    sent, schedule, ran = [], Monitor.schedule, Monitor.ran

    def sending(self: Monitor, calls: int) -> list:
        sent.extend(schedule(self, calls))
        return sent[len(sent) - calls:]

    def ran_on_the_machine(self: Monitor, seconds: list[float]) -> None:
        ran(self, [machine.call(option.variant) for option in sent[len(sent) - len(seconds):]])

    monkeypatch.setattr(Monitor, "schedule", sending)
    monkeypatch.setattr(Monitor, "ran", ran_on_the_machine)
    return sent


def _variant_plan_on_ray() -> Plan:
    """The Ray plan (one actor worker) with the learner's reference update planned and the fused one costed beside it
    at 1.2x (tests/runtime/monitor_machines.py: disputed, so both variants are options)."""
    plan, base = variant_plan(pearl.DQN("CartPole-v1", **TINY_DQN)), _plan("cpu", "cpu")
    return dataclasses.replace(base, prediction=plan.prediction, placements={
        **base.placements, "learner_update": plan.placements["learner_update"]})


def test_the_ray_learner_worker_switches_to_the_disputed_variant_and_a_resumed_run_keeps_it(
        cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver's monitor with variants for options, its seconds the fake machine's for each option the schedule sent
    the worker (the reference slowed from update 41): off at rounds 5-7, re-timed over rounds 8-11, switched to the
    fused update at round 11's end (step 750, update 110), the local parallel learner's correction
    (tests/runtime/test_monitor.py); the checkpoint at step 800 resumes at the fused update."""
    from pearl_py.runtime.monitor import LearnerOption

    machine = VariantMachine(slow_after=40)
    sent = on_the_machine(monkeypatch, machine)
    options = dict(seed=0, eval_episodes=1, address=cluster, out_dir=tmp_path, progress=False,
                   checkpoints=CheckpointOptions(every=800), adapt=AdaptOptions(patience_s=0.5, clock=machine.clock))
    first = RayExecutor(pearl.DQN("CartPole-v1", **TINY_DQN), _variant_plan_on_ray(), **options).run(1_000)
    assert (first.env_steps, first.gradient_steps, first.kernel_times["learner_update"]["calls"]) == (1_000, 160, 160)
    [correction] = first.corrections
    assert (correction.step, correction.updates, correction.switched) == (750, 110, True)
    assert correction.change == "learner reference at 1 thread -> fused at 1 thread"
    assert (correction.before, correction.after) == ({"variant": "reference", "threads": 1},
                                                     {"variant": "fused", "threads": 1})
    assert correction.retimed_s == pytest.approx({"reference at 1 thread": 3 * VARIANT_S["reference"],
                                                  "fused at 1 thread": VARIANT_S["fused"]})
    assert [option.variant for option in sent] == machine.threads              # one option sent a call, each run
    assert machine.threads == (["reference"] * 70 + (["reference"] * 4 + ["fused"] * 4) * 4 + ["reference"] * 8
                               + ["fused"] * 50)
    sent.clear()
    resumed = RayExecutor(pearl.DQN("CartPole-v1", **TINY_DQN), _variant_plan_on_ray(), resume_from=tmp_path,
                          **options).run(1_000)
    assert (resumed.env_steps, resumed.gradient_steps, resumed.corrections) == (1_000, 160, [correction])
    assert sent == [LearnerOption("fused", 1)] * (160 - 120)                  # rounds 13-16 (from step 800)


def test_the_learner_worker_runs_each_update_at_the_variant_its_schedule_sends() -> None:
    """The Ray learner worker (a plain class here, in this process): a ``LearnerOption`` sets its VariantSwitch, which
    builds the fused update when first sent, a thread count its threads alone; every update is the learner's own."""
    pytest.importorskip("ray", reason='ray is an optional extra: pip install -c constraints.txt ".[ray]"')
    from pearl_py.runtime.collect import tensor_batch
    from pearl_py.runtime.monitor import LearnerOption
    from pearl_py.runtime.ray_backend.workers import LearnerWorker, ReplayServer

    algo = pearl.DQN("CartPole-v1", **TINY_DQN)
    replay, rng = ReplayServer(algo, seed=0), torch.Generator().manual_seed(0)
    replay.add({"obs": torch.rand(64, 4, generator=rng).numpy(),
                "actions": torch.randint(2, (64,), generator=rng).numpy(), "rewards": torch.ones(64).numpy(),
                "next_obs": torch.rand(64, 4, generator=rng).numpy(),
                "terminated": torch.zeros(64, dtype=torch.bool).numpy()})
    worker, seconds = LearnerWorker(algo, 0, "cpu", "reference", replay=None), []
    update = worker.scheduled(worker.switch, [LearnerOption("reference", 1), LearnerOption("fused", 1), 1], seconds)
    for _ in range(3):
        update(tensor_batch(replay.sample(16, 0.4), worker.learner.device))
    assert set(worker.switch.calls) == {"reference", "fused"} and worker.switch.n == LearnerOption("fused", 1)
    assert worker.learner.gradient_steps == 3 and len(seconds) == 3


def test_the_ray_on_policy_learner_worker_switches_to_the_disputed_variant_and_a_resumed_run_keeps_it(
        cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The on-policy driver's monitor with variants for options, on the fake machine's seconds as above: 8 updates a
    rollout of 32 steps, the reference slowed from update 41, switched to the fused step at rollout 12's end (step 384,
    update 96), the local on-policy executors' correction (tests/runtime/test_monitor.py); the checkpoint at step
    448 resumes at the fused step."""
    from pearl_py.runtime.monitor import LearnerOption

    def ppo() -> pearl.PPO:
        return pearl.PPO("CartPole-v1", n_envs=2, n_steps=16, batch_size=8, n_epochs=2, net_arch=[16])

    machine = VariantMachine(slow_after=40)
    sent = on_the_machine(monkeypatch, machine)
    plan = dataclasses.replace(sync_plan(1), prediction=variant_plan(pearl.DQN("CartPole-v1", **TINY_DQN)).prediction)
    plan = dataclasses.replace(plan, placements={**plan.placements, "learner_update": Placement("cpu", "reference", 1)})
    options = dict(seed=0, eval_episodes=1, address=cluster, out_dir=tmp_path, progress=False,
                   checkpoints=CheckpointOptions(every=448), adapt=AdaptOptions(patience_s=0.5, clock=machine.clock))
    first = OnPolicyRayExecutor(ppo(), plan, **options).run(512)
    assert (first.env_steps, first.gradient_steps) == (512, 128)
    [correction] = first.corrections
    assert (correction.step, correction.updates, correction.switched) == (12 * 32, 96, True)
    assert correction.change == "learner reference at 1 thread -> fused at 1 thread"
    assert [option.variant for option in sent] == machine.threads == (
        ["reference"] * 64 + (["reference"] * 4 + ["fused"] * 4) * 4 + ["fused"] * (128 - 96))
    sent.clear()
    resumed = OnPolicyRayExecutor(ppo(), plan, resume_from=tmp_path, **options).run(512)
    assert (resumed.env_steps, resumed.gradient_steps, resumed.corrections) == (512, 128, [correction])
    assert sent == [LearnerOption("fused", 1)] * (128 - 14 * 8)                 # rollouts 15-16 (from step 448)


def test_the_ray_workers_warm_their_inference_and_replay_up_when_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """(Plain classes here, in this process.) The actor worker's inference and the replay server's kernels are
    called once in their constructors (``first_calls.warm_up``), before any timed call: not compiled in the first."""
    pytest.importorskip("ray", reason='ray is an optional extra: pip install -c constraints.txt ".[ray]"')
    from pearl_py.runtime.ray_backend import workers

    calls = []
    monkeypatch.setattr(workers, "warm_up", lambda algo, **kwargs: calls.append(kwargs))
    algo = pearl.DQN("CartPole-v1", **TINY_DQN)
    actor = workers.ActorWorker(algo, index=0, seed=0, total_steps=1_000)
    workers.ReplayServer(algo, seed=0)
    assert calls == [{"infer": actor.infer}, {"replay_device": torch.device("cpu")}]
