"""Kernels on a CUDA device are timed by its events, on the CPU by the host clock; where the host waits is asserted
on a fake device (no CUDA here): at a summary, or beyond the pending bound, never inside the training loop."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from device_fakes import FakeDevice

import pearl_py as pearl
from pearl_py.algorithms.off_policy.learner import UpdateResult
from pearl_py.estimate import Estimator
from pearl_py.optimize.api import plan
from pearl_py.report import measured
from pearl_py.runtime.collect import Collector, gradient_step
from pearl_py.runtime.device_timing import EventLog
from pearl_py.runtime.timing import KernelTimer, merge_kernel_times

CUDA0 = torch.device("cuda", 0)


def test_a_cuda_kernel_is_timed_by_events_around_it_and_read_without_waiting_when_done():
    log: list[str] = []
    gpu = FakeDevice(log, done=True)
    timer = KernelTimer({"learner_update": CUDA0, "env_step": torch.device("cpu")}, events=gpu.events)
    with timer("learner_update"):
        log.append("launch update")
        gpu.now += 0.004  # the GPU works 4 ms on it
    with timer("env_step"):
        log.append("env step")
    assert log == ["record 1", "launch update", "record 2", "env step"]  # no event, no wait around the CPU kernel
    assert timer.evented == {"learner_update"} and gpu.devices == [CUDA0]
    assert timer.summary()["learner_update"] == {"calls": 1, "total_s": pytest.approx(0.004),
                                                 "mean_s": pytest.approx(0.004), "source": "measured"}
    assert not any(entry.startswith("wait") for entry in log)  # completed pairs are read with query() only


def test_the_host_waits_only_at_a_summary_for_pending_events():
    log: list[str] = []
    gpu = FakeDevice(log, done=False)  # the GPU is still busy with what was queued
    timer = KernelTimer({"learner_update": CUDA0}, events=gpu.events)
    for _ in range(3):
        with timer("learner_update"):
            gpu.now += 0.001
    assert log == ["record 1", "record 2", "record 3", "record 4", "record 5", "record 6"]
    assert timer.seconds["learner_update"] == 0.0  # nothing read yet, nothing waited for
    timer.flush()
    assert log[6:] == ["wait 2", "wait 4", "wait 6"] and timer.seconds["learner_update"] == pytest.approx(0.003)


def test_a_summary_for_a_log_row_reads_only_finished_calls_and_never_waits():
    log: list[str] = []
    gpu = FakeDevice(log, done=False)
    timer = KernelTimer({"learner_update": CUDA0}, events=gpu.events)
    for _ in range(2):
        with timer("learner_update", calls=3):
            gpu.now += 0.001
    assert "learner_update" not in timer.summary(wait=False)    # the GPU has finished none: nothing to show
    gpu.done = True
    assert timer.summary(wait=False)["learner_update"] == {"calls": 6, "total_s": pytest.approx(0.002),
                                                           "mean_s": pytest.approx(0.002 / 6), "source": "measured"}
    assert not any(entry.startswith("wait") for entry in log)


def test_a_serial_run_waits_for_its_timers_only_at_its_end(monkeypatch):
    """The run log asks for the kernels' times every training round without waiting for the GPU."""
    waits = []
    summary = KernelTimer.summary

    def recording(self, wait=True):
        waits.append(wait)
        return summary(self, wait)

    monkeypatch.setattr(KernelTimer, "summary", recording)
    from pearl_py.runtime.serial import SerialExecutor

    algo = pearl.DQN("CartPole-v1", net_arch=[8], learning_starts=32, train_freq=16, batch_size=8)
    result = SerialExecutor(algo, seed=0, eval_episodes=1, progress=False).run(160)
    assert result.gradient_steps == 8
    assert waits.count(False) >= 8 and waits.count(True) == 1   # every round's row; the result at the end


def test_the_events_of_a_pair_read_back_are_recorded_again_not_made_anew():
    log: list[str] = []
    gpu = FakeDevice(log, done=True)
    timer = KernelTimer({"learner_update": CUDA0}, events=gpu.events)
    for _ in range(3):
        with timer("learner_update"):
            gpu.now += 0.001
    assert log == ["record 1", "record 2", "record 2", "record 1", "record 1", "record 2"]   # two events in all
    assert timer.summary()["learner_update"]["total_s"] == pytest.approx(0.003)


def test_beyond_the_pending_bound_the_oldest_end_event_is_waited_for():
    log: list[str] = []
    gpu = FakeDevice(log, done=False)
    events = EventLog(gpu.events(CUDA0), max_pending=2)
    for _ in range(3):
        start = events.start()
        gpu.now += 0.5
        read = events.stop("inference", start)
    assert log[-1] == "wait 2" and read == {"inference": 0.5} and len(events.pending) == 2


def test_host_seconds_for_a_cuda_kernel_are_refused():
    timer = KernelTimer({"inference": CUDA0}, events=FakeDevice([]).events)
    with pytest.raises(ValueError, match="inference runs on a CUDA device"):
        timer.add("inference", 0.1)


class _Replay:
    """A prioritized replay that logs its calls; its batch is numpy (the numpy buffer's)."""

    prioritized = True

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def sample(self, batch_size, beta):
        self.log.append("sample")
        z = np.zeros((batch_size, 1), np.float32)
        return type("Batch", (), {"obs": z, "actions": np.zeros(batch_size, np.int64), "rewards": z[:, 0],
                                  "next_obs": z, "dones": z[:, 0], "weights": z[:, 0],
                                  "indices": np.arange(batch_size)})()

    def update_priorities(self, indices, td):
        self.log.append("priorities")


class _TdOnGpu:
    """A |td| tensor on the GPU: reading it to the host waits for the update."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def cpu(self):
        self.log.append("td to host (waits for the update)")
        return torch.zeros(4)


def test_the_update_is_charged_its_own_gpu_time_and_the_priority_copy_waits_outside_every_timing():
    log: list[str] = []
    gpu = FakeDevice(log, done=True)
    timer = KernelTimer({"learner_update": CUDA0, "priority_update": torch.device("cpu")}, events=gpu.events)

    def update(batch):
        log.append("launch update")
        gpu.now += 0.002
        return UpdateResult({}, _TdOnGpu(log))

    gradient_step(_Replay(log), update, 4, 0.4, torch.device("cpu"), timer)
    assert log == ["sample", "record 1", "launch update", "record 2", "td to host (waits for the update)",
                   "priorities"]
    assert timer.summary()["learner_update"]["total_s"] == pytest.approx(0.002)


def test_the_collector_times_a_policy_on_a_gpu_with_its_events_and_the_env_with_the_host_clock():
    log: list[str] = []
    gpu = FakeDevice(log, done=True)
    timer = KernelTimer({"inference": CUDA0}, events=gpu.events)
    algo = pearl.DQN("CartPole-v1", n_envs=2)
    with Collector(algo, seed=0, record=timer.add, timed=timer) as collector:
        collector.step(lambda obs: (log.append("act on gpu"), np.zeros(2, np.int64))[1])
        collector.step(None)  # warm-up random actions: drawn on the host, so timed on its clock
    assert log == ["record 1", "act on gpu", "record 2"]
    times = timer.summary()
    assert times["inference"]["calls"] == 1 and times["warmup_actions"]["calls"] == 1
    assert times["env_step"]["calls"] == 2 and timer.evented == {"inference"}


class _CapturingUpdate:
    """A CUDA-graph update on the fake GPU: its first call captures the graph (800 ms), each replay takes 2 ms."""

    def __init__(self, gpu: FakeDevice) -> None:
        self.gpu, self.captured = gpu, False

    def sets_up_next(self) -> bool:
        return not self.captured

    def __call__(self, batch) -> UpdateResult:
        self.gpu.now += 0.002 if self.captured else 0.8
        self.captured = True
        return UpdateResult({}, torch.zeros(4))


def test_the_graph_capture_is_the_reports_setup_row_beside_the_predicted_setup_not_in_the_per_call_mean():
    p = plan(pearl.DDPG("Pendulum-v1"), "dgx-a100-node", estimator=Estimator(use_cache=False), horizon=1e7,
             pareto_points=2, constraints={"pin": {"learner_update": "gpu0"}})
    assert p.placements["learner_update"].variant == "cuda_graph"     # its model charges a 1 s setup apart
    gpu = FakeDevice([], done=True)
    timer, update = KernelTimer({"learner_update": CUDA0}, events=gpu.events), _CapturingUpdate(gpu)
    for _ in range(5):
        gradient_step(_Replay([]), update, 4, 0.4, torch.device("cpu"), timer)
    run = {"env_steps": 1_000, "kernel_times": merge_kernel_times([timer.summary()], {})}
    rows = {row[0]: row for row in measured.kernel_rows(p, run)}
    assert rows["learner_update"][3:5] == ["2.0 ms", "4"]          # the replays only
    assert rows["learner_update setup (one-off, in total)"][1:] == [
        "gpu0 / cuda_graph", "1.0 s (modelled)", "800.0 ms", "1", "1.0 ms", "800.0 us", "0.80×"]
    del run["kernel_times"]["learner_update_setup"]                 # a run that timed no setup says so
    rows = {row[0]: row for row in measured.kernel_rows(p, run)}
    assert rows["learner_update setup (one-off, in total)"][3:5] == ["not measured", "0"]
